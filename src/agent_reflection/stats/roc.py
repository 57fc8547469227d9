"""ROC curve points, as scikit-learn's ``roc_curve(drop_intermediate=False)`` returns them.

One point per distinct score threshold, from (0, 0) to (1, 1). The curve is the polyline through
these points: rows tied at a score move the curve diagonally (their positives and negatives
together), so the trapezoid area under the polyline equals the AUC with ties counted as half.
Drawing it as a staircase would not: over tied scores a step curve loses area and can dip under
the chance line.
"""

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
    """From (0, 0) to (1, 1); one point per distinct score, highest threshold first (the first
    threshold is ``inf``, as in scikit-learn).

    ``max_points`` (at least 2) bounds the number of points kept. Points inside a straight run
    go first: dropping them leaves the polyline, and so its area, exactly as it was. If that is
    not enough, points are kept evenly spaced along the curve's length (ends kept); each
    thinned segment then cuts a corner, so the area can change by at most the sum of its
    segments' width x height.
    """
    s, y = as_scores_labels(scores, labels)
    n_pos, n_neg = class_counts(y)
    if n_pos == 0 or n_neg == 0:
        raise UndefinedStatistic("a ROC curve needs both classes")
    if max_points is not None and max_points < 2:
        raise ValueError(f"max_points must be at least 2, got {max_points}")
    # ties in any order: a point is read at the last row of its group of ties, where the
    # cumulative counts are the same whatever the order inside the group (the unstable sort
    # is 3-7x faster on floats)
    order = np.argsort(-s)
    s_sorted, y_sorted = s[order], y[order]
    last = np.r_[np.flatnonzero(np.diff(s_sorted)), s_sorted.size - 1]
    tp = np.r_[0, np.cumsum(y_sorted, dtype=np.int64)[last]]
    fp = np.r_[0, (last + 1) - tp[1:]]
    thresholds = np.r_[np.inf, s_sorted[last]]
    keep = np.arange(tp.size)
    if max_points is not None and keep.size > max_points:
        keep = _corners(fp, tp)
        if keep.size > max_points:
            keep = keep[_evenly_along(fp[keep] / n_neg + tp[keep] / n_pos, max_points)]
    fpr, tpr = fp[keep] / n_neg, tp[keep] / n_pos
    return RocCurve(
        tuple(map(float, fpr)), tuple(map(float, tpr)), tuple(map(float, thresholds[keep]))
    )


def _corners(fp: npt.NDArray[np.int64], tp: npt.NDArray[np.int64]) -> npt.NDArray[np.intp]:
    """Indices of the points where the polyline turns (and both ends). Counts are integers,
    so the collinearity test is exact."""
    dfp, dtp = np.diff(fp), np.diff(tp)
    turns = dfp[:-1] * dtp[1:] != dtp[:-1] * dfp[1:]
    corners: npt.NDArray[np.intp] = np.r_[0, np.flatnonzero(turns) + 1, fp.size - 1]
    return corners


def _evenly_along(length_coords: npt.NDArray[np.float64], n: int) -> npt.NDArray[np.intp]:
    """At most ``n`` indices, first and last included, nearest to evenly spaced points of the
    cumulative coordinate ``length_coords`` (fpr + tpr grows along a ROC curve)."""
    targets = np.linspace(length_coords[0], length_coords[-1], n)
    idx = np.searchsorted(length_coords, targets).clip(1, length_coords.size - 1)
    nearer_left = targets - length_coords[idx - 1] <= length_coords[idx] - targets
    idx = np.where(nearer_left, idx - 1, idx)
    idx[0], idx[-1] = 0, length_coords.size - 1
    return np.unique(idx)
