"""P3 — can a right/wrong outcome be detected by machine within the window?

:func:`run_p3` is the experiment. Its parts: :mod:`.analysis` (completed tasks, their
signals by channel, the detectable fraction and its verdict) and :mod:`.spark` (the same
fraction by Spark over the Parquet export: the scale-out path).
"""

from agent_reflection.experiments.p3.analysis import run_p3

__all__ = ["run_p3"]
