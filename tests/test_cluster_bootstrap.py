"""The counting cluster bootstrap equals the slow references it replaced, resample by resample.

Two references live here, not in src: the implementation before issue 17 (per-row weights
gathered for every resample, O(resamples x rows)) and a brute-force one that expands each
resample into its rows and compares every positive with every negative of its stratum
(O(rows^2) a resample). Both take the same seeded draws, so the same seed must give the same
numbers to 1e-9 on data with ties, single-class strata, tiny clusters and missing ids.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from agent_reflection.experiments.preregistration import (
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


def fast_statistics(
    scores: Floats, positive: npt.NDArray[np.bool_], strata: object, clusters: object, seed: int
) -> tuple[float, Floats]:
    design = fast._design(
        scores,
        positive,
        encode(strata)[1],  # type: ignore[arg-type]
        encode_clusters(clusters, scores.size),  # type: ignore[arg-type]
    )
    estimate = float(fast.stratified_auc_of_weights(design, np.ones((1, design.n_clusters)))[0])
    return estimate, fast._resample_statistics(design, RESAMPLES, seed)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", [1, 2])
def test_every_resample_equals_the_previous_implementation(kind: str, seed: int) -> None:
    s, y, st, cl = dataset(kind, seed)
    estimate, got = fast_statistics(s, y, st, cl, seed + 10)
    ref_estimate, expected = reference_statistics(s, y, st, cl, seed + 10)
    assert estimate == pytest.approx(ref_estimate, abs=1e-12)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12, equal_nan=True)
    if kind == "rare-positives":
        assert np.isnan(got).any()  # the case is exercised


@pytest.mark.parametrize("kind", ["ties-across-strata", "single-class-strata", "rare-positives"])
def test_every_resample_equals_brute_force_pairs(kind: str) -> None:
    s, y, st, cl = dataset(kind, 3)
    _, got = fast_statistics(s, y, st, cl, 5)
    np.testing.assert_allclose(
        got, brute_force_statistics(s, y, st, cl, 5), rtol=0, atol=1e-12, equal_nan=True
    )


@pytest.mark.parametrize("kind", KINDS)
def test_the_interval_equals_the_previous_implementation(kind: str) -> None:
    s, y, st, cl = dataset(kind, 4)
    got = fast.cluster_bootstrap_stratified_auc(s, y, st, cl, n_resamples=RESAMPLES, seed=8)
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
    design = fast._design(s, y, encode(st)[1], encode_clusters(cl, s.size))
    assert design.cluster_type is not None and design.n_types < design.n_clusters / 3
    s, y, st, cl = dataset("continuous-missing-ids", 1)
    design = fast._design(s, y, encode(st)[1], encode_clusters(cl, s.size))
    assert design.cluster_type is None and design.n_types == design.n_clusters


def test_the_batch_size_does_not_change_the_resamples(monkeypatch: pytest.MonkeyPatch) -> None:
    s, y, st, cl = dataset("ties-across-strata", 5)
    whole = fast.cluster_bootstrap_stratified_auc(s, y, st, cl, n_resamples=RESAMPLES, seed=3)
    monkeypatch.setattr(fast, "CELLS_PER_BATCH", 1)  # one resample a batch
    assert fast.cluster_bootstrap_stratified_auc(
        s, y, st, cl, n_resamples=RESAMPLES, seed=3
    ) == pytest.approx(whole)


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
