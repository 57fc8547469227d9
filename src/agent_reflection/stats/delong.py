"""DeLong's variance of the ROC AUC and its normal CI, in O(n log n).

The fast algorithm of Sun & Xu (2014): structural components come from midranks, here all
from a single sort of the pooled scores, so no n1 x n0 comparison matrix is built.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from agent_reflection.stats._common import (
    UndefinedStatistic,
    as_scores_labels,
    class_counts,
    normal_interval,
    two_sided_z,
)
from agent_reflection.stats.auc import structural_components
from agent_reflection.stats.interval import Interval


@dataclass(frozen=True)
class DeLongResult(Interval):
    """The AUC (``value``) with DeLong's variance and its normal interval."""

    variance: float
    se: float
    confidence_level: float
    n_pos: int
    n_neg: int


def delong_variance(v10: npt.NDArray[np.float64], v01: npt.NDArray[np.float64]) -> float:
    """DeLong's variance of the AUC from its structural components (V10 per positive, V01 per
    negative). With a single positive or negative the sample variance of that class's
    components is taken as 0 (there is nothing to vary)."""
    s10 = float(np.var(v10, ddof=1)) if v10.size > 1 else 0.0
    s01 = float(np.var(v01, ddof=1)) if v01.size > 1 else 0.0
    return s10 / v10.size + s01 / v01.size


def delong_ci(
    scores: Sequence[float] | npt.ArrayLike,
    labels: Sequence[bool] | npt.ArrayLike,
    confidence_level: float = 0.95,
) -> DeLongResult:
    """AUC with DeLong's variance and a normal CI clipped to [0, 1] (as narrow as the data
    allow with a single positive or negative: :func:`delong_variance`)."""
    z = two_sided_z(confidence_level)
    s, y = as_scores_labels(scores, labels)
    m, n = class_counts(y)
    if m == 0 or n == 0:
        raise UndefinedStatistic(
            f"DeLong variance is undefined with {m} positive and {n} negative labels"
        )
    v10, v01 = structural_components(s, y)
    auc = float(v10.mean())
    variance = delong_variance(v10, v01)
    se = math.sqrt(max(variance, 0.0))
    ci_low, ci_high = normal_interval(auc, se, z)
    return DeLongResult(
        value=auc,
        variance=variance,
        se=se,
        ci_low=ci_low,
        ci_high=ci_high,
        confidence_level=confidence_level,
        n_pos=m,
        n_neg=n,
    )
