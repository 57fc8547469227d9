"""ROC curve points (false- and true-positive rates at every distinct score threshold)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from agent_reflection.stats._common import UndefinedStatistic, as_scores_labels, class_counts


@dataclass(frozen=True)
class RocCurve:
    fpr: tuple[float, ...]
    tpr: tuple[float, ...]
    thresholds: tuple[float, ...]


def roc_curve_points(
    scores: Sequence[float] | npt.ArrayLike,
    labels: Sequence[bool] | npt.ArrayLike,
    max_points: int | None = None,
) -> RocCurve:
    """From (0, 0) to (1, 1); one point per distinct score, highest threshold first.

    ``max_points`` keeps that many points evenly spaced along the curve (ends kept).
    """
    s, y = as_scores_labels(scores, labels)
    n_pos, n_neg = class_counts(y)
    if n_pos == 0 or n_neg == 0:
        raise UndefinedStatistic("a ROC curve needs both classes")
    order = np.argsort(-s, kind="mergesort")
    s_sorted, y_sorted = s[order], y[order]
    last = np.r_[np.flatnonzero(np.diff(s_sorted)), s_sorted.size - 1]
    tp = np.cumsum(y_sorted)[last]
    fp = (last + 1) - tp
    fpr = np.r_[0.0, fp / n_neg]
    tpr = np.r_[0.0, tp / n_pos]
    thresholds = np.r_[np.inf, s_sorted[last]]
    if max_points is not None and fpr.size > max_points:
        idx = np.unique(np.linspace(0, fpr.size - 1, max_points).round().astype(int))
        fpr, tpr, thresholds = fpr[idx], tpr[idx], thresholds[idx]
    return RocCurve(tuple(map(float, fpr)), tuple(map(float, tpr)), tuple(map(float, thresholds)))
