"""Seeded cluster bootstrap of the stratified AUC (percentile interval).

Each resample draws clusters (e.g. questions) with replacement and keeps all rows of a drawn
cluster, in every stratum, as many times as it was drawn; so rows that share a cluster move
together, as they do in the data. The statistic is the pair-weighted stratified AUC of
:mod:`.stratified`, computed for a whole batch of resamples at once from weighted counts:
per resample and per (stratum, score) key, the weight of positives and of negatives; each
positive wins over the negatives of its stratum with a smaller score and half of those with
the same score. That is O(rows + keys + clusters) per resample, no sort, no Python loop
over rows or resamples (batches bound the memory).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from agent_reflection.stats._common import UndefinedStatistic, as_scores_labels
from agent_reflection.stats.stratified import encode, encode_clusters

#: Array cells per batch of resamples (each of rows, keys and clusters costs one cell per
#: resample); bounds the memory to a few times 8 x this many bytes.
CELLS_PER_BATCH = 4_000_000


@dataclass(frozen=True)
class ClusterBootstrapResult:
    estimate: float
    ci_low: float
    ci_high: float
    confidence_level: float
    method: str
    n_resamples: int
    seed: int
    n_clusters: int
    #: resamples in which no stratum kept both classes (left out of the interval)
    undefined_resamples: int
    #: the bootstrap standard error of the statistic
    se: float


@dataclass(frozen=True)
class _Design:
    key: npt.NDArray[np.int64]  # per row: (stratum, score) key, strata in contiguous blocks
    positive: npt.NDArray[np.bool_]
    cluster: npt.NDArray[np.int64]
    n_keys: int
    n_clusters: int
    starts: npt.NDArray[np.int64]  # first key of each stratum
    stratum_start_of_key: npt.NDArray[np.int64]


def _design(
    scores: npt.NDArray[np.float64],
    positive: npt.NDArray[np.bool_],
    strata: npt.NDArray[np.int64],
    cluster: npt.NDArray[np.int64],
) -> _Design:
    order = np.lexsort((scores, strata))
    s_sorted, st_sorted = scores[order], strata[order]
    new_key = np.r_[True, (np.diff(s_sorted) != 0) | (np.diff(st_sorted) != 0)]
    key_sorted = np.cumsum(new_key) - 1
    key = np.empty_like(key_sorted)
    key[order] = key_sorted
    n_keys = int(key_sorted[-1]) + 1
    stratum_of_key = st_sorted[new_key]
    first = np.r_[True, np.diff(stratum_of_key) != 0]
    starts = np.flatnonzero(first).astype(np.int64)
    start_of_key = starts[np.cumsum(first) - 1]
    _, cl = np.unique(cluster, return_inverse=True)  # dense 0..C-1
    return _Design(
        key.astype(np.int64),
        positive,
        cl.astype(np.int64),
        n_keys,
        int(cl.max()) + 1,
        starts,
        start_of_key.astype(np.int64),
    )


def stratified_auc_of_weights(
    design: _Design, weights: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """The stratified AUC for each row of cluster ``weights`` (resamples x clusters)."""
    b, k = weights.shape[0], design.n_keys
    w = weights[:, design.cluster]  # resamples x rows
    offset = (np.arange(b) * k)[:, None]
    pos, neg = design.positive, ~design.positive
    p = np.bincount(
        (design.key[pos] + offset).ravel(), weights=w[:, pos].ravel(), minlength=b * k
    ).reshape(b, k)
    n = np.bincount(
        (design.key[neg] + offset).ravel(), weights=w[:, neg].ravel(), minlength=b * k
    ).reshape(b, k)
    before = np.cumsum(n, axis=1) - n  # negative weight at smaller keys (any stratum)
    below = before - before[:, design.stratum_start_of_key]  # ... within the key's stratum
    wins = (p * (below + 0.5 * n)).sum(axis=1)
    w1 = np.add.reduceat(p, design.starts, axis=1)
    w0 = np.add.reduceat(n, design.starts, axis=1)
    pairs = (w1 * w0).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        out: npt.NDArray[np.float64] = np.where(pairs > 0, wins / pairs, np.nan)
    return out


def cluster_bootstrap_stratified_auc(
    scores: Sequence[float] | npt.ArrayLike,
    labels: Sequence[bool] | npt.ArrayLike,
    strata: Sequence[object] | npt.ArrayLike,
    clusters: Sequence[object] | npt.ArrayLike | None = None,
    *,
    confidence_level: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> ClusterBootstrapResult:
    """Percentile interval of the stratified AUC over cluster resamples; seeded.

    ``clusters`` None resamples rows. Raises :class:`UndefinedStatistic` when the statistic
    is undefined on the data or in more than half of the resamples.
    """
    if not 0 < confidence_level < 1:
        raise ValueError(f"confidence_level must be in (0, 1), got {confidence_level}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    s, y = as_scores_labels(scores, labels)
    if s.size == 0:
        raise UndefinedStatistic("a bootstrap of the stratified AUC needs rows")
    sidx = encode(strata)[1]
    if sidx.size != s.size:
        raise ValueError("scores, labels, strata and clusters must have the same length")
    try:
        cidx = encode_clusters(clusters, s.size)
    except ValueError:
        raise ValueError("scores, labels, strata and clusters must have the same length") from None
    design = _design(s, y, sidx, cidx)
    estimate = float(stratified_auc_of_weights(design, np.ones((1, design.n_clusters)))[0])
    if not np.isfinite(estimate):
        raise UndefinedStatistic("the stratified AUC is undefined: no stratum has both classes")
    c = design.n_clusters
    rng = np.random.default_rng(seed)
    per_resample = s.size + design.n_keys + c
    batch = max(1, CELLS_PER_BATCH // per_resample)
    stats = np.empty(n_resamples)
    for start in range(0, n_resamples, batch):
        b = min(batch, n_resamples - start)
        draws = rng.integers(0, c, size=(b, c)) + (np.arange(b) * c)[:, None]
        counts = np.bincount(draws.ravel(), minlength=b * c).reshape(b, c).astype(np.float64)
        stats[start : start + b] = stratified_auc_of_weights(design, counts)
    finite = stats[np.isfinite(stats)]
    undefined = int(n_resamples - finite.size)
    if finite.size < max(2, n_resamples // 2):
        raise UndefinedStatistic(
            f"the bootstrap interval is undefined: {undefined} of {n_resamples} resamples "
            "had no stratum with both classes"
        )
    alpha = 1 - confidence_level
    low, high = (float(v) for v in np.quantile(finite, [alpha / 2, 1 - alpha / 2]))
    return ClusterBootstrapResult(
        estimate,
        low,
        high,
        confidence_level,
        "cluster percentile",
        n_resamples,
        seed,
        c,
        undefined,
        float(np.std(finite, ddof=1)),
    )
