"""The counting cluster bootstrap equals slow references, resample by resample.

References live here, not in src:

* a brute-force one that takes the engine's own multinomial type counts, expands each resample
  into its rows (each type's rows as many times as it was drawn) and compares every positive
  with every negative of its stratum (O(rows^2) a resample): the same seed must give the same
  resamples and intervals to 1e-9 on data with ties, single-class strata, tiny clusters, one
  cluster type and missing ids;
* the implementation before issue 17 (per-row weights gathered for every resample from C
  cluster indices, O(resamples x rows)): the ``cluster-index`` draws, which a registration
  without ``bootstrap_draws`` names, must still reproduce it;
* the two draw schemes are the same bootstrap: the type counts have the multinomial's moments
  and the intervals agree within Monte Carlo error.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st_

from agent_reflection.experiments.registration import (
    P1_BOOTSTRAP_DRAWS,
    InvalidPreregistration,
    apply_overrides,
    load_preregistration,
    registered_preregistration_path,
)
from agent_reflection.stats import UndefinedStatistic
from agent_reflection.stats import cluster_bootstrap as fast
from agent_reflection.stats.stratified import encode, encode_clusters

Floats = npt.NDArray[np.float64]
RESAMPLES = 300


def reference_statistics(
    scores: Floats, positive: npt.NDArray[np.bool_], strata: object, clusters: object, seed: int
) -> tuple[float, Floats]:
    """The pre-issue-17 implementation: (estimate, each resample's stratified AUC)."""
    st = encode(strata)[1]  # type: ignore[arg-type]
    cl = encode_clusters(clusters, scores.size)  # type: ignore[arg-type]
    order = np.lexsort((scores, st))
    s_sorted, st_sorted = scores[order], st[order]
    new_key = np.r_[True, (np.diff(s_sorted) != 0) | (np.diff(st_sorted) != 0)]
    key_sorted = np.cumsum(new_key) - 1
    key = np.empty_like(key_sorted)
    key[order] = key_sorted
    k = int(key_sorted[-1]) + 1
    stratum_of_key = st_sorted[new_key]
    first = np.r_[True, np.diff(stratum_of_key) != 0]
    starts = np.flatnonzero(first)
    start_of_key = starts[np.cumsum(first) - 1]
    cluster = np.unique(cl, return_inverse=True)[1]
    c = int(cluster.max()) + 1

    def auc_of_weights(weights: Floats) -> Floats:
        b = weights.shape[0]
        w = weights[:, cluster]
        offset = (np.arange(b) * k)[:, None]
        pos, neg = positive, ~positive
        p = np.bincount(
            (key[pos] + offset).ravel(), weights=w[:, pos].ravel(), minlength=b * k
        ).reshape(b, k)
        n = np.bincount(
            (key[neg] + offset).ravel(), weights=w[:, neg].ravel(), minlength=b * k
        ).reshape(b, k)
        before = np.cumsum(n, axis=1) - n
        below = before - before[:, start_of_key]
        wins = (p * (below + 0.5 * n)).sum(axis=1)
        pairs = (np.add.reduceat(p, starts, axis=1) * np.add.reduceat(n, starts, axis=1)).sum(1)
        with np.errstate(divide="ignore", invalid="ignore"):
            out: Floats = np.where(pairs > 0, wins / pairs, np.nan)
        return out

    rng = np.random.default_rng(seed)
    stats = np.empty(RESAMPLES)
    batch = 7  # the draws do not depend on the batch size
    for start in range(0, RESAMPLES, batch):
        b = min(batch, RESAMPLES - start)
        draws = rng.integers(0, c, size=(b, c)) + (np.arange(b) * c)[:, None]
        counts = np.bincount(draws.ravel(), minlength=b * c).reshape(b, c).astype(np.float64)
        stats[start : start + b] = auc_of_weights(counts)
    return float(auc_of_weights(np.ones((1, c)))[0]), stats


def brute_force_statistics(
    scores: Floats, positive: npt.NDArray[np.bool_], strata: object, clusters: object, seed: int
) -> Floats:
    """Each resample expanded into rows; every positive compared with every negative."""
    st = encode(strata)[1]  # type: ignore[arg-type]
    cl = np.unique(encode_clusters(clusters, scores.size), return_inverse=True)[1]  # type: ignore[arg-type]
    c = int(cl.max()) + 1
    rng = np.random.default_rng(seed)
    out = np.empty(RESAMPLES)
    for b in range(RESAMPLES):
        reps = np.bincount(rng.integers(0, c, size=c), minlength=c)[cl]
        s, y, g = np.repeat(scores, reps), np.repeat(positive, reps), np.repeat(st, reps)
        wins = pairs = 0.0
        for stratum in np.unique(g):
            sp, sn = s[(g == stratum) & y], s[(g == stratum) & ~y]
            diff = sp[:, None] - sn[None, :]
            wins += float((diff > 0).sum() + 0.5 * (diff == 0).sum())
            pairs += float(sp.size * sn.size)
        out[b] = wins / pairs if pairs else np.nan
    return out


def dataset(kind: str, seed: int) -> tuple[Floats, npt.NDArray[np.bool_], object, object]:
    rng = np.random.default_rng(seed)
    n = 240
    if kind == "ties-across-strata":  # rounded scores, clusters of 1-4 rows spanning strata
        st = rng.integers(0, 3, n)
        y = rng.random(n) < 0.25 + 0.2 * st
        s = np.round(rng.normal(size=n) + 0.5 * y + 0.6 * st, 1)
        ids = rng.integers(0, 90, n)
        return s, y, np.array([f"m{k}" for k in st]), ids
    if kind == "single-class-strata":  # one all-correct and one all-wrong stratum
        st = rng.integers(0, 4, n)
        y = rng.random(n) < 0.4
        y[st == 2], y[st == 3] = True, False
        s = np.round(rng.random(n) * 0.2 + 0.8 + 0.05 * y, 2)
        return s, y, st, rng.integers(0, 150, n)
    if kind == "single-row-clusters":  # confidences to two decimals: clusters collapse to types
        y = rng.random(n) < 0.3
        s = np.round(np.clip(0.85 + 0.05 * y + rng.normal(0, 0.06, n), 0.8, 1.0), 2)
        return s, y, rng.integers(0, 2, n), None
    if kind == "continuous-missing-ids":  # distinct scores, some rows without a cluster id
        y = rng.random(n) < 0.5
        s = rng.normal(size=n) + 0.4 * y
        ids = np.array([f"q{i % 60}" if i % 5 else None for i in range(n)], dtype=object)
        return s, y, np.zeros(n, dtype=np.int64), ids
    if kind == "rare-positives":  # some resamples lose every positive: undefined, left out
        y = np.zeros(n, dtype=bool)
        y[:4] = True
        s = np.round(rng.random(n), 1)
        return s, y, np.zeros(n, dtype=np.int64), np.arange(n) // 3
    raise AssertionError(kind)


KINDS = [
    "ties-across-strata",
    "single-class-strata",
    "single-row-clusters",
    "continuous-missing-ids",
    "rare-positives",
]


def design_of(
    scores: Floats, positive: npt.NDArray[np.bool_], strata: object, clusters: object
) -> fast._Design:
    return fast._design(
        scores,
        positive,
        encode(strata)[1],  # type: ignore[arg-type]
        encode_clusters(clusters, scores.size),  # type: ignore[arg-type]
    )


def fast_statistics(
    scores: Floats,
    positive: npt.NDArray[np.bool_],
    strata: object,
    clusters: object,
    seed: int,
    draws: str = fast.MULTINOMIAL,
) -> tuple[float, Floats]:
    design = design_of(scores, positive, strata, clusters)
    estimate = float(fast._auc_of_type_counts(design, design.type_weight[None, :])[0])
    return estimate, fast._resample_statistics(design, RESAMPLES, seed, draws)


def multinomial_brute_force(
    scores: Floats,
    positive: npt.NDArray[np.bool_],
    strata: object,
    clusters: object,
    seed: int,
    n_resamples: int = RESAMPLES,
) -> Floats:
    """Each resample's stratified AUC from the engine's multinomial type counts, by expanding
    the rows (a type's rows, those of any one of its identical clusters, repeated as often as
    the type was drawn) and comparing every positive with every negative of its stratum."""
    st = encode(strata)[1]  # type: ignore[arg-type]
    cl = encode_clusters(clusters, scores.size)  # type: ignore[arg-type]
    design = design_of(scores, positive, strata, clusters)
    counts = np.concatenate(list(fast.type_count_batches(design, n_resamples, seed)))
    assert counts.shape == (n_resamples, design.n_types)
    np.testing.assert_array_equal(counts.sum(axis=1), design.n_clusters)  # C draws each
    # one cluster of each type stands for all of it
    representative = np.full(design.n_types, -1)
    representative[design.cluster_type[::-1]] = np.arange(design.n_clusters)[::-1]
    type_of_row = np.full(scores.size, -1)
    chosen = np.isin(cl, representative)
    type_of_row[chosen] = design.cluster_type[cl[chosen]]
    out = np.empty(n_resamples)
    for b in range(n_resamples):
        reps = np.where(type_of_row >= 0, counts[b][type_of_row], 0).astype(np.int64)
        s, y, g = np.repeat(scores, reps), np.repeat(positive, reps), np.repeat(st, reps)
        wins = pairs = 0.0
        for stratum in np.unique(g):
            sp, sn = s[(g == stratum) & y], s[(g == stratum) & ~y]
            diff = sp[:, None] - sn[None, :]
            wins += float((diff > 0).sum() + 0.5 * (diff == 0).sum())
            pairs += float(sp.size * sn.size)
        out[b] = wins / pairs if pairs else np.nan
    return out


MULTINOMIAL_KINDS = [*KINDS, "one-cluster-type", "few-types"]


def small_dataset(kind: str, seed: int) -> tuple[Floats, npt.NDArray[np.bool_], object, object]:
    """The datasets above, and two where the multinomial has one or a few categories."""
    rng = np.random.default_rng(seed)
    if kind == "one-cluster-type":  # every row in one cluster: each resample is the data
        y = rng.random(40) < 0.5
        s = np.round(rng.random(40) + 0.3 * y, 1)
        return s, y, rng.integers(0, 2, 40), np.zeros(40, dtype=np.int64)
    if kind == "few-types":  # single-row clusters at 2 scores x 2 classes: 4 counted types
        y = rng.random(200) < 0.4
        s = np.where(rng.random(200) < 0.3 + 0.4 * y, 0.9, 0.8)
        return s, y, np.zeros(200, dtype=np.int64), None
    return dataset(kind, seed)


@pytest.mark.parametrize("kind", MULTINOMIAL_KINDS)
@pytest.mark.parametrize("seed", [1, 2])
def test_every_resample_equals_brute_force_from_the_same_multinomial_draws(
    kind: str, seed: int
) -> None:
    s, y, st, cl = small_dataset(kind, seed)
    estimate, got = fast_statistics(s, y, st, cl, seed + 20)
    expected = multinomial_brute_force(s, y, st, cl, seed + 20)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12, equal_nan=True)
    if kind == "one-cluster-type":
        np.testing.assert_allclose(got, estimate, rtol=0, atol=1e-12)


@pytest.mark.parametrize("kind", MULTINOMIAL_KINDS)
def test_the_interval_equals_brute_force_from_the_same_multinomial_draws(kind: str) -> None:
    s, y, st, cl = small_dataset(kind, 4)
    got = fast.cluster_bootstrap_stratified_auc(s, y, st, cl, n_resamples=RESAMPLES, seed=8)
    assert got.draws == fast.MULTINOMIAL
    stats = multinomial_brute_force(s, y, st, cl, 8)
    finite = stats[np.isfinite(stats)]
    low, high = np.quantile(finite, [0.025, 0.975])
    assert abs(got.ci_low - low) <= 1e-9 and abs(got.ci_high - high) <= 1e-9
    assert abs(got.se - np.std(finite, ddof=1)) <= 1e-9
    assert got.undefined_resamples == RESAMPLES - finite.size


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", [1, 2])
def test_cluster_index_draws_equal_the_previous_implementation(kind: str, seed: int) -> None:
    s, y, st, cl = dataset(kind, seed)
    estimate, got = fast_statistics(s, y, st, cl, seed + 10, fast.CLUSTER_INDEX)
    ref_estimate, expected = reference_statistics(s, y, st, cl, seed + 10)
    assert estimate == pytest.approx(ref_estimate, abs=1e-12)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12, equal_nan=True)
    if kind == "rare-positives":
        assert np.isnan(got).any()  # the case is exercised


@pytest.mark.parametrize("kind", ["ties-across-strata", "single-class-strata", "rare-positives"])
def test_cluster_index_resamples_equal_brute_force_pairs(kind: str) -> None:
    s, y, st, cl = dataset(kind, 3)
    _, got = fast_statistics(s, y, st, cl, 5, fast.CLUSTER_INDEX)
    np.testing.assert_allclose(
        got, brute_force_statistics(s, y, st, cl, 5), rtol=0, atol=1e-12, equal_nan=True
    )


@pytest.mark.parametrize("kind", KINDS)
def test_the_cluster_index_interval_equals_the_previous_implementation(kind: str) -> None:
    s, y, st, cl = dataset(kind, 4)
    got = fast.cluster_bootstrap_stratified_auc(
        s, y, st, cl, n_resamples=RESAMPLES, seed=8, draws=fast.CLUSTER_INDEX
    )
    _, stats = reference_statistics(s, y, st, cl, 8)
    finite = stats[np.isfinite(stats)]
    low, high = np.quantile(finite, [0.025, 0.975])
    assert abs(got.ci_low - low) <= 1e-9 and abs(got.ci_high - high) <= 1e-9
    assert abs(got.se - np.std(finite, ddof=1)) <= 1e-9
    assert got.undefined_resamples == RESAMPLES - finite.size


@pytest.mark.parametrize("kind", ["ties-across-strata", "single-row-clusters"])
def test_float64_counts_give_the_same_resamples(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # float32 is used while every count a resample can reach is exact in it; beyond, float64
    s, y, st, cl = dataset(kind, 6)
    small = fast_statistics(s, y, st, cl, 2)
    assert fast._design(s, y, encode(st)[1], encode_clusters(cl, s.size)).dtype is np.float32  # type: ignore[arg-type]
    monkeypatch.setattr(fast, "FLOAT32_EXACT_BELOW", 0)
    design = fast._design(s, y, encode(st)[1], encode_clusters(cl, s.size))  # type: ignore[arg-type]
    assert design.dtype is np.float64
    large = fast_statistics(s, y, st, cl, 2)
    assert large[0] == small[0]
    np.testing.assert_array_equal(large[1], small[1])


def test_single_row_clusters_collapse_into_types_and_others_do_not() -> None:
    s, y, st, cl = dataset("single-row-clusters", 1)
    design = design_of(s, y, st, cl)
    assert design.n_types < design.n_clusters / 3
    assert design.type_weight.sum() == design.n_clusters
    # the large types are multinomial categories, the clusters of the others the pool
    counted = design.type_weight >= fast.COUNTED_TYPE_MIN_CLUSTERS
    assert counted[: design.n_counted].all() and not counted[design.n_counted :].any()
    assert 0 < design.n_counted < design.n_types
    assert design.pool_type.size == design.type_weight[design.n_counted :].sum()
    s, y, st, cl = dataset("continuous-missing-ids", 1)
    design = design_of(s, y, st, cl)
    assert design.n_types == design.n_clusters and design.n_counted == 0
    assert design.pool_type.size == design.n_clusters


def test_the_cluster_index_batch_size_does_not_change_the_resamples(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    s, y, st, cl = dataset("ties-across-strata", 5)
    args = (s, y, st, cl)
    kwargs = {"n_resamples": RESAMPLES, "seed": 3, "draws": fast.CLUSTER_INDEX}
    whole = fast.cluster_bootstrap_stratified_auc(*args, **kwargs)  # type: ignore[arg-type]
    monkeypatch.setattr(fast, "CELLS_PER_BATCH", 1)  # one resample a batch
    assert fast.cluster_bootstrap_stratified_auc(*args, **kwargs) == pytest.approx(whole)  # type: ignore[arg-type]


def test_the_multinomial_type_counts_have_the_multinomial_moments() -> None:
    # single-row clusters: counted types and a pool of small ones; 4,000 resamples of C draws:
    # each type's count has mean C p and variance C p (1 - p), p = its clusters / C
    s, y, st, cl = dataset("single-row-clusters", 2)
    design = design_of(s, y, st, cl)
    counts = np.concatenate(list(fast.type_count_batches(design, 4000, 11))).astype(np.float64)
    c, p = design.n_clusters, design.type_weight / design.n_clusters
    mean_se = np.sqrt(c * p * (1 - p) / counts.shape[0])
    assert np.all(np.abs(counts.mean(axis=0) - c * p) < 5 * mean_se)
    ratio = counts.var(axis=0, ddof=1) / (c * p * (1 - p))
    heavy = design.type_weight >= 4  # enough draws for a variance to be measured
    assert np.all(np.abs(ratio[heavy] - 1) < 0.2)
    # two types are negatively correlated as in a multinomial: cov = -C p_i p_j
    i, j = np.argsort(design.type_weight)[-2:]
    cov = np.cov(counts[:, i], counts[:, j])[0, 1]
    assert cov == pytest.approx(-c * p[i] * p[j], rel=0.25)


@pytest.mark.parametrize("kind", ["ties-across-strata", "single-row-clusters", "few-types"])
def test_the_two_draw_schemes_give_the_same_bootstrap(kind: str) -> None:
    # same distribution, different random streams: the intervals agree within Monte Carlo error
    s, y, st, cl = small_dataset(kind, 7)
    new = fast.cluster_bootstrap_stratified_auc(s, y, st, cl, n_resamples=4000, seed=1)
    old = fast.cluster_bootstrap_stratified_auc(
        s, y, st, cl, n_resamples=4000, seed=1, draws=fast.CLUSTER_INDEX
    )
    assert new.value == old.value
    assert new.se == pytest.approx(old.se, rel=0.1)
    assert abs(new.ci_low - old.ci_low) < 0.3 * old.se
    assert abs(new.ci_high - old.ci_high) < 0.3 * old.se


def test_the_multinomial_draws_are_seeded_and_named() -> None:
    s, y, st, cl = dataset("single-row-clusters", 3)
    a = fast.cluster_bootstrap_stratified_auc(s, y, st, cl, n_resamples=RESAMPLES, seed=5)
    assert a == fast.cluster_bootstrap_stratified_auc(s, y, st, cl, n_resamples=RESAMPLES, seed=5)
    assert a.draws == fast.MULTINOMIAL
    with pytest.raises(ValueError, match="draws must be one of"):
        fast.cluster_bootstrap_stratified_auc(s, y, st, cl, draws="poisson")


@settings(max_examples=25)
@given(
    n=st_.integers(2, 40),
    n_strata=st_.integers(1, 3),
    n_clusters=st_.integers(1, 40),
    levels=st_.integers(1, 4),
    seed=st_.integers(0, 2**32 - 1),
)
def test_random_small_data_equal_brute_force_resample_by_resample(
    n: int, n_strata: int, n_clusters: int, levels: int, seed: int
) -> None:
    # few score levels and clusters: ties, repeated single-row types and multi-row clusters
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.5
    assume(y.any() and not y.all())
    s = rng.integers(0, levels, n).astype(np.float64)
    strata = rng.integers(0, n_strata, n)
    clusters = rng.integers(0, n_clusters, n)
    design = design_of(s, y, strata, clusters)
    estimate = float(fast._auc_of_type_counts(design, design.type_weight[None, :])[0])
    assume(np.isfinite(estimate))
    got = fast._resample_statistics(design, 30, seed)
    expected = multinomial_brute_force(s, y, strata, clusters, seed, n_resamples=30)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12, equal_nan=True)


def test_mostly_undefined_resamples_raise() -> None:
    # stratum 0 has its one pair only when cluster 0 (a positive) and cluster 1 (a negative)
    # are both drawn (about 40% of resamples of 20 clusters); stratum 1 has positives only
    s = np.linspace(0, 1, 20)
    y = np.r_[True, False, np.ones(18, dtype=bool)]
    st = np.r_[0, 0, np.ones(18, dtype=np.int64)]
    with pytest.raises(UndefinedStatistic, match="resamples had no stratum with both"):
        fast.cluster_bootstrap_stratified_auc(s, y, st, None, n_resamples=RESAMPLES, seed=1)
    # one positive among 60 single-row clusters: it is missing from about a third
    y = np.zeros(60, dtype=bool)
    y[0] = True
    r = fast.cluster_bootstrap_stratified_auc(
        np.linspace(0, 1, 60), y, np.zeros(60), None, n_resamples=200, seed=1
    )
    assert 0 < r.undefined_resamples < 100


def test_the_retired_row_limit_is_refused_with_its_name(tmp_path: Path) -> None:
    text = registered_preregistration_path().read_text()
    assert "\nbootstrap_max_rows" not in text
    old = text.replace(
        "bootstrap_resamples = 2000\n",
        "bootstrap_resamples = 2000\nbootstrap_max_rows = 20000\n",
        1,
    )
    assert old != text
    path = tmp_path / "preregistration.toml"
    path.write_text(old)
    with pytest.raises(
        InvalidPreregistration, match=r"\[p1\]: bootstrap_max_rows is a retired key"
    ):
        load_preregistration(path)
    prereg = load_preregistration(registered_preregistration_path())
    with pytest.raises(InvalidPreregistration, match="bootstrap_max_rows is a retired key"):
        apply_overrides(prereg, {"p1.bootstrap_max_rows": 100})


@pytest.mark.parametrize("clusters", [7, 1_786, 125_000, 3_000_000])
def test_32_bit_draws_are_the_previous_64_bit_draws(clusters: int) -> None:
    # the bootstrap draws int32 (half the memory); below 2**32 NumPy draws the same words
    narrow = np.random.default_rng(20250922).integers(0, clusters, size=(2, 5000), dtype=np.int32)
    wide = np.random.default_rng(20250922).integers(0, clusters, size=(2, 5000))
    np.testing.assert_array_equal(narrow, wide)


def test_a_registration_without_bootstrap_draws_means_cluster_indices(tmp_path: Path) -> None:
    text = registered_preregistration_path().read_text()
    line = 'bootstrap_draws = "multinomial-by-cluster-type"\n'
    assert line in text
    assert load_preregistration(registered_preregistration_path()).p1.bootstrap_draws == (
        fast.MULTINOMIAL
    )
    assert P1_BOOTSTRAP_DRAWS == fast.DRAW_SCHEMES  # the parser accepts what the engine draws
    path = tmp_path / "preregistration.toml"
    path.write_text(text.replace(line, "", 1))  # as files before the amendment
    assert load_preregistration(path).p1.bootstrap_draws == fast.CLUSTER_INDEX
    path.write_text(text.replace(line, 'bootstrap_draws = "poisson"\n', 1))
    with pytest.raises(InvalidPreregistration, match=r"\[p1\]: bootstrap_draws must be one of"):
        load_preregistration(path)


@pytest.mark.parametrize("kind", MULTINOMIAL_KINDS)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_types_and_keys_are_the_designs_without_building_it(kind: str, seed: int) -> None:
    s, y, st, cl = small_dataset(kind, seed)
    design = design_of(s, y, st, cl)
    got = fast.bootstrap_size(s, y, encode(st)[1], encode_clusters(cl, s.size))  # type: ignore[arg-type]
    assert (got.cluster_types, got.keys) == (design.n_types, design.n_keys)


def test_the_type_count_of_uniform_multi_row_clusters_is_per_row_count() -> None:
    # clusters of 1, 2 and 3 identical negative rows at 0.5, two of each size (3 types), and
    # two clusters mixing a negative at 0.5 with a positive at 0.7 (each its own type): 5
    cl = np.array([0, 1, 2, 2, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 7, 7])
    s = np.array([0.5] * 12 + [0.5, 0.7, 0.5, 0.7])
    y = np.array([False] * 12 + [False, True, False, True])
    st = np.zeros(s.size, dtype=np.int64)
    enc = encode_clusters(cl, s.size)
    assert fast.bootstrap_size(s, y, st, enc).cluster_types == 5 == design_of(s, y, st, cl).n_types
    assert fast.bootstrap_size(s, y, st, enc).keys == 2


@given(
    st_.lists(
        st_.tuples(
            st_.integers(0, 3),
            st_.sampled_from([0.1, 0.2, 0.3]),
            st_.booleans(),
            st_.integers(0, 6),
        ),
        min_size=1,
        max_size=40,
    )
)
@settings(max_examples=150, deadline=None)
def test_random_small_data_count_the_designs_types_and_keys(
    rows: list[tuple[int, float, bool, int]],
) -> None:
    st = np.array([r[0] for r in rows], dtype=np.int64)
    s = np.array([r[1] for r in rows])
    y = np.array([r[2] for r in rows])
    cl = np.array([r[3] for r in rows])
    enc = encode_clusters(cl, s.size)
    design = fast._design(s, y, st, enc)
    got = fast.bootstrap_size(s, y, st, enc)
    assert (got.cluster_types, got.keys) == (design.n_types, design.n_keys)
    assert got.cost(7) == 7 * (design.n_types + design.n_keys)


@pytest.mark.parametrize("shape", ["untied", "questions"])
def test_the_fast_interval_equals_the_reference_on_larger_data(shape: str) -> None:
    """Thousands of rows in several strata (untied confidences: a key and a type per row;
    questions: 8-row clusters spanning the strata): the counting engine's resamples and
    interval equal the reference implementation's to 1e-9."""
    rng = np.random.default_rng(31)
    n = 4000
    y = rng.random(n) < 0.3
    if shape == "untied":
        s = 0.8 + 0.2 * rng.beta(2.0 + y, 2.0)
        st: object = rng.integers(0, 5, n)
        cl: object = None
    else:
        s = np.round(0.85 + 0.05 * y + rng.normal(0, 0.05, n), 2)
        st, cl = np.arange(n) % 8, np.arange(n) // 8
    estimate, expected = reference_statistics(s, y, st, cl, 12)
    got_estimate, got = fast_statistics(s, y, st, cl, 12, fast.CLUSTER_INDEX)
    assert abs(got_estimate - estimate) <= 1e-12
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    result = fast.cluster_bootstrap_stratified_auc(
        s, y, st, cl, n_resamples=RESAMPLES, seed=12, draws=fast.CLUSTER_INDEX
    )
    low, high = np.quantile(expected, [0.025, 0.975])
    assert abs(result.ci_low - low) <= 1e-9 and abs(result.ci_high - high) <= 1e-9


@given(
    st_.lists(
        st_.tuples(
            st_.integers(0, 3), st_.sampled_from([0.1, 0.2, 0.3, 0.0, -0.0]), st_.booleans()
        ),
        min_size=1,
        max_size=60,
    )
)
@settings(max_examples=150, deadline=None)
def test_single_row_clusters_count_the_designs_types_and_keys(
    rows: list[tuple[int, float, bool]],
) -> None:
    # every row its own cluster: the count's shortcut (cells per key) against the design
    st = np.array([r[0] for r in rows], dtype=np.int64)
    s = np.array([r[1] for r in rows])
    y = np.array([r[2] for r in rows])
    enc = np.arange(s.size)
    design = fast._design(s, y, st, enc)
    got = fast.bootstrap_size(s, y, st, enc)
    assert (got.cluster_types, got.keys) == (design.n_types, design.n_keys)
