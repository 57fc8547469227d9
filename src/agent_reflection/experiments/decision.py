"""Three-way decisions from an interval: ``continue``, ``kill`` or ``inconclusive``.

A point estimate never kills. The data must *rule out* a useful effect before an experiment is
killed, and must *rule out chance* (and reach the smallest useful effect) before it continues:

- ``continue``: the interval's lower bound is above the null value and the estimate reaches
  the pre-registered smallest useful effect;
- ``kill``: the interval's upper bound is below the smallest useful effect (no useful
  effect is compatible with the data);
- ``inconclusive``: anything else. Not a kill: more data would decide it.

``insufficient-data`` (too few rows for any interval) is decided by each experiment before it
calls :func:`decide`.
"""

from __future__ import annotations

from dataclasses import dataclass

CONTINUE = "continue"
KILL = "kill"
INCONCLUSIVE = "inconclusive"
INSUFFICIENT = "insufficient-data"
#: Every verdict an experiment may return, in the order reports list them.
VERDICTS = (CONTINUE, KILL, INCONCLUSIVE, INSUFFICIENT)


@dataclass(frozen=True)
class Decision:
    """A verdict and the sentence that explains it in the interval's own numbers."""

    verdict: str
    reason: str


def decide(
    estimate: float,
    ci_low: float,
    ci_high: float,
    *,
    null_value: float,
    smallest_useful: float,
    what: str = "estimate",
) -> Decision:
    """The three-way decision for an effect where larger is better.

    ``null_value`` is what "no signal" looks like (0.5 for an AUC, 0 for a share);
    ``smallest_useful`` is the pre-registered smallest effect worth building on.
    """
    if not ci_low <= estimate <= ci_high:
        raise ValueError(f"{what} {estimate} lies outside its interval [{ci_low}, {ci_high}]")
    if smallest_useful < null_value:
        raise ValueError(
            f"smallest useful {what} {smallest_useful} is below the null value {null_value}"
        )
    interval = f"{what} {estimate:.3f} (CI {ci_low:.3f}–{ci_high:.3f})"
    if ci_high < smallest_useful:
        return Decision(
            KILL,
            f"{interval}: the interval's upper bound is below the smallest useful "
            f"{what} {smallest_useful:g}, so the data rule out a useful signal",
        )
    if ci_low > null_value and estimate >= smallest_useful:
        return Decision(
            CONTINUE,
            f"{interval}: the lower bound is above {null_value:g} and the estimate reaches "
            f"the smallest useful {what} {smallest_useful:g}",
        )
    if ci_low > null_value:
        why = (
            f"above {null_value:g}, but the estimate is below the smallest useful "
            f"{what} {smallest_useful:g}"
        )
    else:
        why = (
            f"the lower bound is not above {null_value:g}, yet the upper bound still allows "
            f"the smallest useful {what} {smallest_useful:g}"
        )
    return Decision(INCONCLUSIVE, f"{interval}: {why}; more data would decide it")
