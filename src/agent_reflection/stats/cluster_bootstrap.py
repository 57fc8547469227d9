"""Seeded cluster bootstrap of the stratified AUC (percentile interval).

Each resample draws clusters (e.g. questions) with replacement and keeps all rows of a drawn
cluster, in every stratum, as many times as it was drawn; so rows that share a cluster move
together, as they do in the data. The statistic is the pair-weighted stratified AUC of
:mod:`.stratified`.

How it is counted. The rows are sorted once, up front, into (stratum, score) keys, strata in
contiguous blocks, and counted into a sparse table: per cluster *type*, the number of
positives and of negatives at each key. A type is a set of clusters with the same content:
clusters whose rows all share one key and class (e.g. single-row clusters with rounded
scores) are one type per (key, class, row count); any other cluster is a type of its own. A
resample is a vector of cluster multiplicities (``seed`` -> the same draws as before: resample
``b`` draws ``n_clusters`` integers from the seeded generator, in order), summed per type; its
positive and negative weight at every key is that vector times the table; each positive wins
over the negatives of its stratum at a smaller key and half of those at its own key, which one
cumulative sum over the keys gives. Per resample that is O(clusters + table entries + keys):
no sort, no pairwise comparison, no jackknife, no Python loop over rows. The draws themselves
(resamples x clusters random integers) are the floor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from agent_reflection.stats._common import UndefinedStatistic, as_scores_labels
from agent_reflection.stats.stratified import encode, encode_clusters

#: Array cells per batch of resamples (each cluster, type and key costs one cell per
#: resample); bounds the memory to a few times 8 x this many bytes.
CELLS_PER_BATCH = 4_000_000
#: Integers below this are exact in float32 (its 24-bit significand).
FLOAT32_EXACT_BELOW = 2**24

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


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
    n_keys: int
    n_clusters: int
    starts: IntArray  # first key of each stratum
    stratum_start_of_key: IntArray
    #: per cluster its type (the narrowest unsigned integers that hold it: the per-draw
    #: lookup is then mostly in cache); None when every cluster is a type of its own
    cluster_type: npt.NDArray[np.unsignedinteger[Any]] | None
    n_types: int
    #: (2 x keys) x types, sparse: row k the positives at key k, row keys + k the negatives
    table: Any
    #: the product's type: float32 when every count it can reach is below 2**24 (exact in
    #: float32, and the product is then about twice as fast), else float64
    dtype: type[np.floating[Any]]


def _keys(scores: FloatArray, strata: IntArray) -> tuple[IntArray, int, IntArray, IntArray]:
    """Per row its (stratum, score) key (strata in contiguous blocks of keys, scores
    ascending within), the number of keys, each stratum's first key and each key's stratum
    start."""
    order = np.lexsort((scores, strata))
    s_sorted, st_sorted = scores[order], strata[order]
    new_key = np.r_[True, (np.diff(s_sorted) != 0) | (np.diff(st_sorted) != 0)]
    key_sorted = np.cumsum(new_key) - 1
    key = np.empty_like(key_sorted)
    key[order] = key_sorted
    stratum_of_key = st_sorted[new_key]
    first = np.r_[True, np.diff(stratum_of_key) != 0]
    starts = np.flatnonzero(first).astype(np.int64)
    start_of_key = starts[np.cumsum(first) - 1].astype(np.int64)
    return key.astype(np.int64), int(key_sorted[-1]) + 1, starts, start_of_key


def _design(
    scores: FloatArray,
    positive: npt.NDArray[np.bool_],
    strata: IntArray,
    cluster: IntArray,
) -> _Design:
    from scipy import sparse  # heavy import: only when a bootstrap is asked for

    key, k, starts, start_of_key = _keys(scores, strata)
    _, cl = np.unique(cluster, return_inverse=True)  # dense 0..C-1, ids in sorted order
    cl = cl.astype(np.int64)
    c = int(cl.max()) + 1
    # one cell per (cluster, key, class) with its row count; cells sorted by cluster
    row = key + np.where(positive, 0, k)
    cells, counts = np.unique(cl * (2 * k) + row, return_counts=True)
    cell_cluster, cell_row = cells // (2 * k), cells % (2 * k)
    per_cluster = np.bincount(cell_cluster, minlength=c)
    single = per_cluster == 1
    first_cell = np.cumsum(per_cluster) - per_cluster
    # a one-cell cluster's content is (key, class, count); other clusters are unique
    span = int(counts.max()) + 1
    content = np.empty(c, dtype=np.int64)
    content[single] = cell_row[first_cell[single]] * span + counts[first_cell[single]]
    content[~single] = 2 * k * span + np.flatnonzero(~single)
    _, representative, cluster_type = np.unique(content, return_index=True, return_inverse=True)
    # a resample holds at most c draws of the largest cluster: its counts are integers below
    # that bound, exact in float32 when it is below 2**24
    largest = int(np.bincount(cl).max())
    dtype: type[np.floating[Any]] = np.float32 if c * largest < FLOAT32_EXACT_BELOW else np.float64
    by_cluster = sparse.csr_array(
        (counts.astype(dtype), (cell_cluster, cell_row)), shape=(c, 2 * k)
    )
    if representative.size == c:  # no two clusters alike: each its own type, in cluster order
        table = sparse.csr_array(by_cluster.T)
        return _Design(k, c, starts, start_of_key, None, c, table, dtype)
    table = sparse.csr_array(by_cluster[representative].T)
    types = cluster_type.astype(np.min_scalar_type(representative.size - 1))
    return _Design(k, c, starts, start_of_key, types, int(representative.size), table, dtype)


def _auc_of_type_weights(design: _Design, weights: npt.NDArray[np.floating[Any]]) -> FloatArray:
    """The stratified AUC for each row of per-type ``weights`` (resamples x types)."""
    k = design.n_keys
    product = design.table @ weights.astype(design.dtype, copy=False).T
    both = np.asarray(product, dtype=np.float64).T  # resamples x (2 x keys)
    p, n = both[:, :k], both[:, k:]
    before = np.cumsum(n, axis=1) - n  # negative weight at smaller keys (any stratum)
    below = before - before[:, design.stratum_start_of_key]  # ... within the key's stratum
    wins = (p * (below + 0.5 * n)).sum(axis=1)
    w1 = np.add.reduceat(p, design.starts, axis=1)
    w0 = np.add.reduceat(n, design.starts, axis=1)
    pairs = (w1 * w0).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        out: FloatArray = np.where(pairs > 0, wins / pairs, np.nan)
    return out


def stratified_auc_of_weights(design: _Design, weights: FloatArray) -> FloatArray:
    """The stratified AUC for each row of cluster ``weights`` (resamples x clusters): whole
    multiplicities, as a resample has (the product may run in float32, exact for them)."""
    weights = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    if design.cluster_type is None:
        return _auc_of_type_weights(design, weights)
    per_type = np.zeros((weights.shape[0], design.n_types))
    for b in range(weights.shape[0]):
        per_type[b] = np.bincount(design.cluster_type, weights=weights[b], minlength=design.n_types)
    return _auc_of_type_weights(design, per_type)


def _resample_statistics(design: _Design, n_resamples: int, seed: int) -> FloatArray:
    """The statistic of each seeded resample: resample b's multiplicities are the counts of
    ``n_clusters`` integers drawn in [0, n_clusters), the draws of all resamples in order."""
    c, t = design.n_clusters, design.n_types
    rng = np.random.default_rng(seed)
    # 32-bit integers are the same draws (below 2**32 NumPy draws 32-bit words either way)
    dtype = np.int32 if c < 2**31 else np.int64
    batch = max(1, CELLS_PER_BATCH // (c + t + 2 * design.n_keys))
    stats = np.empty(n_resamples)
    for start in range(0, n_resamples, batch):
        b = min(batch, n_resamples - start)
        draws = rng.integers(0, c, size=(b, c), dtype=dtype)
        types = draws if design.cluster_type is None else np.take(design.cluster_type, draws)
        weights = np.empty((b, t), dtype=design.dtype)
        for i in range(b):
            weights[i] = np.bincount(types[i], minlength=t)
        stats[start : start + b] = _auc_of_type_weights(design, weights)
    return stats


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
    stats = _resample_statistics(design, n_resamples, seed)
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
        design.n_clusters,
        undefined,
        float(np.std(finite, ddof=1)),
    )
