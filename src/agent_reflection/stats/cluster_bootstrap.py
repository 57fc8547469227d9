"""Seeded cluster bootstrap of the stratified AUC (percentile interval).

Each resample draws clusters (e.g. questions) with replacement and keeps all rows of a drawn
cluster, in every stratum, as many times as it was drawn; so rows that share a cluster move
together, as they do in the data. The statistic is the pair-weighted stratified AUC of
:mod:`.stratified`. The registered design resamples clusters over the whole subset, not
within strata: a question's rows (one per model) stay together.

Cluster *types*. Clusters with the same content are interchangeable: clusters whose rows all
share one (stratum, score) key and class (e.g. single-row clusters with rounded scores) are one
type per (key, class, row count); any other cluster is a type of its own. A resample is then a
vector of type counts, and a resample of C clusters is a multinomial over the types with
probabilities (clusters of the type) / C.

The draws (``draws``, registered as ``[p1] bootstrap_draws``):

``multinomial-by-cluster-type``
    Per batch of resamples, one ``Generator.multinomial`` call over the types of at least
    :data:`COUNTED_TYPE_MIN_CLUSTERS` clusters plus one pooled category for the clusters of
    smaller types; the pooled count is then spread over those clusters by uniform draws (each
    pooled cluster equally likely) and tallied by type. That is the same multinomial over
    types (a multinomial's categories may be merged and split again by a conditional
    multinomial), drawn with as many random numbers as there are counted types plus pooled
    clusters, instead of C per resample.
``cluster-index``
    What registrations before the amendment drew: C cluster indices per resample, tallied by
    type. Same distribution, a different random stream; kept so an older registration still
    reproduces its intervals.

How a resample's statistic is counted. The rows are sorted once into (stratum, score) keys,
strata in contiguous blocks, and counted into a sparse table: per type, the positives and the
negatives at each key. A batch of resamples' type counts times the table gives every
resample's positive and negative weight at every key; each positive wins over the negatives of
its stratum at a smaller key and half of those at its own key, which one cumulative sum over
the keys gives. Per resample that is O(types + table entries + keys): no sort, no pairwise
comparison, no Python loop over rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from agent_reflection.stats._common import UndefinedStatistic, as_scores_labels
from agent_reflection.stats.interval import Interval
from agent_reflection.stats.stratified import EncodedDesign, encode_design

#: The draw schemes ``[p1] bootstrap_draws`` may name (see the module docstring).
MULTINOMIAL = "multinomial-by-cluster-type"
CLUSTER_INDEX = "cluster-index"
DRAW_SCHEMES = (MULTINOMIAL, CLUSTER_INDEX)
#: A type of at least this many clusters is one category of the multinomial; the clusters of
#: smaller types are drawn by index. A multinomial category costs one binomial draw (about
#: 40 ns), a drawn cluster one bounded integer and a tally (about 5 ns): from about 8 clusters
#: up a type is cheaper counted. Part of the draw scheme: changing it changes the random stream.
COUNTED_TYPE_MIN_CLUSTERS = 8
#: Array cells per batch of resamples (each drawn cluster, type and key costs about one cell
#: per resample); bounds the memory to a few times 8 x this many bytes. Part of the
#: ``cluster-index`` scheme's stream (its batches of draws), kept as registered.
CELLS_PER_BATCH = 4_000_000
#: The same for the multinomial draws: larger batches, because the product of the type counts
#: and the table runs faster with more resamples a pass (part of that scheme's stream).
MULTINOMIAL_CELLS_PER_BATCH = 16_000_000
#: Integers below this are exact in float32 (its 24-bit significand).
FLOAT32_EXACT_BELOW = 2**24

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class ClusterBootstrapResult(Interval):
    """The stratified AUC (``value``) with its cluster-bootstrap percentile interval."""

    confidence_level: float
    method: str
    n_resamples: int
    seed: int
    n_clusters: int
    #: resamples in which no stratum kept both classes (left out of the interval)
    undefined_resamples: int
    #: the bootstrap standard error of the statistic
    se: float
    #: how the resamples were drawn (:data:`DRAW_SCHEMES`)
    draws: str = MULTINOMIAL


@dataclass(frozen=True)
class _Design:
    n_keys: int
    n_clusters: int
    starts: IntArray  # first key of each stratum
    #: per cluster its type; types are numbered counted types first (clusters of types with
    #: at least COUNTED_TYPE_MIN_CLUSTERS), then the others, each part in content order
    cluster_type: IntArray
    #: per type, its number of clusters
    type_weight: IntArray
    #: the types counted by the multinomial are 0 .. n_counted - 1
    n_counted: int
    #: per cluster of a smaller type (in cluster order), its type: the pool drawn by index
    pool_type: npt.NDArray[np.unsignedinteger[Any]]
    #: (2 x keys) x types, sparse by column: row k the positives at key k, row keys + k the
    #: negatives (column-major, so a product reads the type counts in order)
    table: Any
    #: the product's type: float32 when every count it can reach is below 2**24 (exact in
    #: float32, and the product is then about twice as fast), else float64
    dtype: type[np.floating[Any]]

    @property
    def n_types(self) -> int:
        return int(self.type_weight.size)


def _keys(scores: FloatArray, strata: IntArray) -> tuple[IntArray, int, IntArray]:
    """Per row its (stratum, score) key (strata in contiguous blocks of keys, scores
    ascending within), the number of keys and each stratum's first key."""
    # a key starts where the stratum or the score changes. Ties may come in any order (only
    # distinct values are counted), so a plain sort of the scores, then a stable one of the
    # strata (integers): a sixth of a three-key lexsort.
    order = np.argsort(scores)
    order = order[np.argsort(strata[order], kind="stable")]
    s_sorted, st_sorted = scores[order], strata[order]
    new_key = np.empty(order.size, dtype=bool)
    new_key[0] = True
    np.not_equal(s_sorted[1:], s_sorted[:-1], out=new_key[1:])
    new_key[1:] |= st_sorted[1:] != st_sorted[:-1]
    key = np.empty(order.size, dtype=np.int64)
    key[order] = np.cumsum(new_key) - 1
    stratum_of_key = st_sorted[new_key]
    starts = np.flatnonzero(np.r_[True, np.diff(stratum_of_key) != 0]).astype(np.int64)
    return key, int(stratum_of_key.size), starts


def _design(
    scores: FloatArray,
    positive: npt.NDArray[np.bool_],
    strata: IntArray,
    cluster: IntArray,
) -> _Design:
    """The counting table of the rows; ``cluster`` are dense indices 0 .. C-1 (ids in sorted
    order, as :func:`~agent_reflection.stats.stratified.encode_clusters` gives them)."""
    from scipy import sparse  # heavy import: only when a bootstrap is asked for

    key, k, starts = _keys(scores, strata)
    c = int(cluster.max()) + 1
    # one cell per (cluster, key, class) with its row count; cells sorted by cluster
    row = key + np.where(positive, 0, k)
    cells, counts = np.unique(cluster * (2 * k) + row, return_counts=True)
    cell_cluster, cell_row = cells // (2 * k), cells % (2 * k)
    per_cluster = np.bincount(cell_cluster, minlength=c)
    single = per_cluster == 1
    first_cell = np.cumsum(per_cluster) - per_cluster
    # a one-cell cluster's content is (key, class, count); other clusters are unique
    span = int(counts.max()) + 1
    content = np.empty(c, dtype=np.int64)
    content[single] = cell_row[first_cell[single]] * span + counts[first_cell[single]]
    content[~single] = 2 * k * span + np.flatnonzero(~single)
    _, representative, by_content = np.unique(content, return_index=True, return_inverse=True)
    weight = np.bincount(by_content)
    # number the types: counted ones (weight >= the threshold) first, each part in content order
    counted = weight >= COUNTED_TYPE_MIN_CLUSTERS
    order = np.r_[np.flatnonzero(counted), np.flatnonzero(~counted)]
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    cluster_type = rank[by_content].astype(np.int64)
    type_weight = weight[order].astype(np.int64)
    n_counted = int(counted.sum())
    pooled = cluster_type >= n_counted
    pool_type = cluster_type[pooled].astype(np.min_scalar_type(max(order.size - 1, 0)))
    # a resample holds at most c draws of the largest cluster: its counts are integers below
    # that bound, exact in float32 when it is below 2**24
    largest = int(np.bincount(cluster).max())
    dtype: type[np.floating[Any]] = np.float32 if c * largest < FLOAT32_EXACT_BELOW else np.float64
    by_cluster = sparse.csr_array(
        (counts.astype(dtype), (cell_cluster, cell_row)), shape=(c, 2 * k)
    )
    table = sparse.csc_array(by_cluster[representative[order]].T)
    return _Design(k, c, starts, cluster_type, type_weight, n_counted, pool_type, table, dtype)


@dataclass(frozen=True)
class BootstrapSize:
    """What a resample of the counting bootstrap costs: its cluster types and its keys."""

    #: cluster types, as :func:`_design` numbers them (never more than the clusters)
    cluster_types: int
    #: distinct (stratum, score) keys (never more than the rows)
    keys: int

    def cost(self, n_resamples: int) -> int:
        """Resamples x (cluster types + keys): the work a bootstrap of the data does."""
        return n_resamples * (self.cluster_types + self.keys)


def bootstrap_size(
    scores: FloatArray,
    positive: npt.NDArray[np.bool_],
    strata: IntArray,
    cluster: IntArray,
) -> BootstrapSize:
    """The cluster types and keys the bootstrap would count (as :func:`_design` numbers
    them), without building its table: a cluster whose rows all share one stratum, score and
    class is of the type (stratum, score, class, row count); any other cluster is its own type.

    ``cluster`` are dense indices 0 .. C-1. A few sorts of the rows; what a budget on the
    bootstrap's work is checked against before any resample.
    """
    if cluster.size == 0:
        return BootstrapSize(0, 0)
    c = int(cluster.max()) + 1
    key, keys, _ = _keys(scores, strata)
    cell = 2 * key + positive  # the (key, class) cell of each row
    if c == cluster.size and np.array_equal(cluster, np.arange(c)):
        # every row its own cluster: a type per distinct (stratum, score, class), size 1:
        # each key gives one cell, two when it holds both classes
        positives = np.bincount(key, weights=positive, minlength=keys)
        rows = np.bincount(key, minlength=keys)
        mixed = int(np.count_nonzero((positives > 0) & (positives < rows)))
        return BootstrapSize(keys + mixed, keys)
    by_order = np.argsort(cluster, kind="stable")
    by_cluster, cells = cluster[by_order], cell[by_order]
    starts = np.flatnonzero(np.r_[True, by_cluster[1:] != by_cluster[:-1]])
    uniform = np.minimum.reduceat(cells, starts) == np.maximum.reduceat(cells, starts)
    size = np.diff(np.r_[starts, by_cluster.size])
    single = np.sort(cells[starts[uniform]] * (int(size.max()) + 1) + size[uniform])
    distinct = int(single.size and 1 + np.count_nonzero(single[1:] != single[:-1]))
    return BootstrapSize(distinct + int(np.count_nonzero(~uniform)), keys)


def _auc_of_type_counts(design: _Design, counts: npt.NDArray[Any]) -> FloatArray:
    """The stratified AUC of each row of per-type ``counts`` (resamples x types)."""
    k, starts = design.n_keys, design.starts
    # types x resamples, contiguous: the column-major table then reads each type's counts once
    by_type = np.ascontiguousarray(np.asarray(counts, dtype=design.dtype).T)
    # resamples x (2 x keys), contiguous. Every weight and every partial sum over keys below is
    # a whole number of rows below c x largest cluster: exact in the product's dtype (float32
    # only when that bound is below 2**24); the products are summed in float64.
    both = np.ascontiguousarray(np.asarray(design.table @ by_type).T)
    p, n = both[:, :k], both[:, k:]
    # A positive at key j wins over the negatives of its stratum below j and half of those at
    # j: (negatives at keys <= j, any stratum) - 0.5 x (those at j) - (negatives before its
    # stratum's first key s, cumulative[s] - n[s]). The last term is constant within a
    # stratum: taken once per stratum, times the stratum's positive weight.
    cumulative = np.cumsum(n, axis=1)
    wins = np.einsum("ij,ij->i", p, cumulative, dtype=np.float64)
    wins -= 0.5 * np.einsum("ij,ij->i", p, n, dtype=np.float64)
    w1 = np.add.reduceat(p, starts, axis=1).astype(np.float64)
    w0 = np.add.reduceat(n, starts, axis=1).astype(np.float64)
    wins -= np.einsum("ij,ij->i", w1, (cumulative[:, starts] - n[:, starts]), dtype=np.float64)
    pairs = np.einsum("ij,ij->i", w1, w0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out: FloatArray = np.where(pairs > 0, wins / pairs, np.nan)
    return out


def type_count_batches(
    design: _Design, n_resamples: int, seed: int, draws: str = MULTINOMIAL
) -> Iterator[npt.NDArray[Any]]:
    """The seeded resamples' type counts, batch after batch (resamples of the batch x types).

    Every resample has ``n_clusters`` draws in all. ``draws`` is the scheme (see the module
    docstring); the batches are a function of the design alone, so the same data and seed give
    the same counts.
    """
    if draws not in DRAW_SCHEMES:
        raise ValueError(f"draws must be one of {list(DRAW_SCHEMES)}, got {draws!r}")
    rng = np.random.default_rng(seed)
    c, t = design.n_clusters, design.n_types
    if draws == CLUSTER_INDEX:
        # as registered before: int32 draws (the same words as int64 below 2**32), batches of
        # CELLS_PER_BATCH // (clusters + types + 2 x keys) resamples, C draws a resample
        batch = max(1, CELLS_PER_BATCH // (c + t + 2 * design.n_keys))
        dtype = np.int32 if c < 2**31 else np.int64
        for start in range(0, n_resamples, batch):
            b = min(batch, n_resamples - start)
            drawn = np.take(design.cluster_type, rng.integers(0, c, size=(b, c), dtype=dtype))
            out = np.empty((b, t), dtype=design.dtype)
            for i in range(b):
                out[i] = np.bincount(drawn[i], minlength=t)
            yield out
        return
    counted, pool = design.n_counted, int(design.pool_type.size)
    # categories: the counted types, then (if any cluster is of a smaller type) the pool
    pvals = np.r_[design.type_weight[:counted], [pool] if pool else []] / c
    batch = max(1, MULTINOMIAL_CELLS_PER_BATCH // (pool + t + 2 * design.n_keys))
    index_dtype = np.int32 if pool < 2**31 else np.int64
    # the pool's own types, 0 .. t - counted - 1; None when each pooled cluster is its own type
    # in cluster order (the draw is then the type: no lookup)
    local = design.pool_type - counted
    identity = pool == t - counted and np.array_equal(local, np.arange(pool))
    pool_type: npt.NDArray[Any] | None = None if identity else local
    for start in range(0, n_resamples, batch):
        b = min(batch, n_resamples - start)
        category = rng.multinomial(c, pvals, size=b)
        out = np.empty((b, t), dtype=design.dtype)
        out[:, :counted] = category[:, :counted]
        if pool:
            # the pool's count spread over its clusters (each equally likely), tallied by type
            spread = rng.integers(0, pool, size=int(category[:, counted].sum()), dtype=index_dtype)
            if pool_type is not None:
                spread = np.take(pool_type, spread)
            bounds = np.r_[0, np.cumsum(category[:, counted])]
            for i in range(b):
                out[i, counted:] = np.bincount(
                    spread[bounds[i] : bounds[i + 1]], minlength=t - counted
                )
        yield out


def _resample_statistics(
    design: _Design, n_resamples: int, seed: int, draws: str = MULTINOMIAL
) -> FloatArray:
    """The statistic of each seeded resample, in order."""
    stats = np.empty(n_resamples)
    start = 0
    for counts in type_count_batches(design, n_resamples, seed, draws):
        b = counts.shape[0]
        stats[start : start + b] = _auc_of_type_counts(design, counts)
        start += b
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
    draws: str = MULTINOMIAL,
    encoded: EncodedDesign | None = None,
) -> ClusterBootstrapResult:
    """Percentile interval of the stratified AUC over cluster resamples; seeded.

    ``clusters`` None resamples rows. ``encoded`` (from
    :func:`~agent_reflection.stats.stratified.encode_design`) replaces ``strata`` and
    ``clusters`` when the caller has encoded them already. Raises :class:`UndefinedStatistic`
    when the statistic is undefined on the data or in more than half of the resamples.
    """
    if not 0 < confidence_level < 1:
        raise ValueError(f"confidence_level must be in (0, 1), got {confidence_level}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    if draws not in DRAW_SCHEMES:
        raise ValueError(f"draws must be one of {list(DRAW_SCHEMES)}, got {draws!r}")
    s, y = as_scores_labels(scores, labels)
    if s.size == 0:
        raise UndefinedStatistic("a bootstrap of the stratified AUC needs rows")
    if encoded is None:
        try:
            encoded = encode_design(strata, clusters, s.size)
        except ValueError:
            raise ValueError(
                "scores, labels, strata and clusters must have the same length"
            ) from None
    elif encoded.strata.size != s.size:
        raise ValueError("scores, labels, strata and clusters must have the same length")
    design = _design(s, y, encoded.strata, encoded.clusters)
    estimate = float(_auc_of_type_counts(design, design.type_weight[None, :])[0])
    if not np.isfinite(estimate):
        raise UndefinedStatistic("the stratified AUC is undefined: no stratum has both classes")
    stats = _resample_statistics(design, n_resamples, seed, draws)
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
        value=estimate,
        ci_low=low,
        ci_high=high,
        confidence_level=confidence_level,
        method="cluster percentile",
        n_resamples=n_resamples,
        seed=seed,
        n_clusters=design.n_clusters,
        undefined_resamples=undefined,
        se=float(np.std(finite, ddof=1)),
        draws=draws,
    )
