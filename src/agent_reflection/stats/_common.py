"""Input checks shared by the metric modules."""

from __future__ import annotations

from collections.abc import Sequence
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from agent_reflection.errors import ReflectionError

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


class UndefinedStatistic(ReflectionError, ValueError):
    """A statistic has no value on this data (e.g. AUC when only one class is present)."""


def two_sided_z(confidence_level: float) -> float:
    """The standard normal quantile of a two-sided interval at ``confidence_level``."""
    if not 0 < confidence_level < 1:
        raise ValueError(f"confidence_level must be in (0, 1), got {confidence_level}")
    return NormalDist().inv_cdf(1 - (1 - confidence_level) / 2)


def normal_interval(estimate: float, se: float, z: float) -> tuple[float, float]:
    """``estimate ± z·se``, clipped to [0, 1] (the range of an AUC)."""
    return max(0.0, estimate - z * se), min(1.0, estimate + z * se)


def as_scores_labels(
    scores: Sequence[float] | npt.ArrayLike, labels: Sequence[bool] | npt.ArrayLike
) -> tuple[FloatArray, BoolArray]:
    """Scores as float64, labels as bool; same length, finite scores, 0/1 labels."""
    s = np.asarray(scores, dtype=np.float64).ravel()
    raw = np.asarray(labels).ravel()
    if s.shape != raw.shape:
        raise ValueError(f"scores ({s.size}) and labels ({raw.size}) differ in length")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores must be finite numbers (drop or impute NaN first)")
    if raw.dtype != np.bool_:
        if raw.size and not np.all(np.isin(raw, (0, 1))):
            raise ValueError("labels must be booleans or 0/1")
        raw = raw.astype(bool)
    return s, raw


def class_counts(labels: BoolArray) -> tuple[int, int]:
    """(positives, negatives)."""
    pos = int(labels.sum())
    return pos, int(labels.size - pos)
