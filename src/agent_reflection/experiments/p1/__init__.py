"""P1 — is self-rated confidence a usable signal of correctness?

:func:`run_p1` is the experiment. Its parts: :mod:`.analysis` (the stratified AUC on the
self-rated-high subset, its intervals, the verdict and the secondary numbers; the labels of a
corpus) and :mod:`.loop_labels` (the labels of the loop itself: each session's last
confidence against its outcome in the git history).
"""

from agent_reflection.experiments.p1.analysis import run_p1

__all__ = ["run_p1"]
