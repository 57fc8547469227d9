"""Rank-based ROC AUC (Mann-Whitney U / (n1 n0)), ties counted as one half.

Equals ``sklearn.metrics.roc_auc_score`` on binary labels, ties included, in O(n log n).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy.typing as npt
from scipy.stats import rankdata

from agent_reflection.stats._common import UndefinedStatistic, as_scores_labels, class_counts


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
    ranks = rankdata(s)  # midranks for ties
    u = float(ranks[y].sum()) - n_pos * (n_pos + 1) / 2.0
    return u / (n_pos * n_neg)
