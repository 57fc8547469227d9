"""P2 — of the failures visible in git history, which gate would have caught each one?

:func:`run_p2` is the experiment. Its parts, one concern a module, in the order a run uses
them: :mod:`.inputs` (the history and CI results read from the database), :mod:`.signals`
(which commits repair a failure, and what introduced it), :mod:`.paths` (the path globs),
:mod:`.buckets` (P2's buckets and rule conditions, declared once, and the bucket of each
counted signal), :mod:`.precision` (precision on the hand-labelled set, precision-corrected
counts), :mod:`.raters` (a second rater: agreement, consensus, bucket precision),
:mod:`.gates` (the buckets corrected by gate labels), :mod:`.shares` (the verdict statistic
and its decision), :mod:`.standing` (on whose gate labels the verdict rests, and whether they
confirm it) and :mod:`.analysis` (the steps, and the result); :mod:`.table` shows every signal;
:mod:`.sample` draws a team's own signals for gate labelling and :mod:`.sheet` writes them out.

``run_p2`` is imported when first asked for: the registration reads the rule conditions of
:mod:`.buckets` whenever a pre-registration is parsed (``reflect prereg status`` included), and
must not import the analysis (pandas, NumPy, DuckDB) to do so.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_reflection.experiments.p2.analysis import run_p2

__all__ = ["run_p2"]


def __getattr__(name: str) -> Any:
    if name == "run_p2":
        from agent_reflection.experiments.p2.analysis import run_p2

        return run_p2
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
