"""Rank-based ROC AUC (Mann-Whitney U / (n1 n0)), ties counted as one half.

Equals ``sklearn.metrics.roc_auc_score`` on binary labels, ties included, in O(n log n).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from agent_reflection.stats._common import (
    BoolArray,
    FloatArray,
    UndefinedStatistic,
    as_scores_labels,
    class_counts,
)


def _tie_groups(
    s: FloatArray, y: BoolArray
) -> tuple[npt.NDArray[np.intp], BoolArray, npt.NDArray[np.intp], FloatArray, FloatArray]:
    """One sort of the scores: the order, the sorted labels, each sorted row's group of tied
    scores, and per group the component of a positive in it (share of negatives below, ties
    1/2) and of a negative (share of positives above, ties 1/2)."""
    m, n = class_counts(y)
    # Tied rows may come in any order: every figure below is per group of ties (sums over the
    # group, the group's own component), so the unstable sort, 3-7x faster on floats, gives
    # the same arrays bit for bit.
    order = np.argsort(s)
    ys = y[order]
    ss = s[order]
    starts = np.empty(ss.size, dtype=bool)
    starts[0] = True
    np.not_equal(ss[1:], ss[:-1], out=starts[1:])
    group = np.cumsum(starts) - 1
    pos_in = np.bincount(group, weights=ys).astype(np.float64)
    neg_in = np.bincount(group).astype(np.float64) - pos_in
    neg_below = np.cumsum(neg_in) - neg_in
    pos_above = m - np.cumsum(pos_in)
    return order, ys, group, (neg_below + 0.5 * neg_in) / n, (pos_above + 0.5 * pos_in) / m


def structural_components(s: FloatArray, y: BoolArray) -> tuple[FloatArray, FloatArray]:
    """DeLong's V10 (per positive) and V01 (per negative) from one sort of the scores.

    A positive's component is the share of negatives scored below it (ties count 1/2), a
    negative's the share of positives scored above it; their means are the AUC. Both classes
    must be present.
    """
    _, ys, group, positive, negative = _tie_groups(s, y)
    return positive[group[ys]], negative[group[~ys]]


def row_components(s: FloatArray, y: BoolArray) -> FloatArray:
    """The same components for every row, in the rows' own order (so they can be summed per
    cluster). Both classes must be present."""
    order, ys, group, positive, negative = _tie_groups(s, y)
    out = np.empty(y.size)
    out[order] = np.where(ys, positive[group], negative[group])
    return out


def roc_auc(
    scores: Sequence[float] | npt.ArrayLike, labels: Sequence[bool] | npt.ArrayLike
) -> float:
    """Probability that a random positive scores above a random negative (ties count 1/2).

    Raises :class:`UndefinedStatistic` when either class is empty.
    """
    s, y = as_scores_labels(scores, labels)
    n_pos, n_neg = class_counts(y)
    if n_pos == 0 or n_neg == 0:
        raise UndefinedStatistic(
            f"AUC is undefined with {n_pos} positive and {n_neg} negative labels: "
            "both classes are needed"
        )
    v10, _ = structural_components(s, y)
    return float(v10.mean())
