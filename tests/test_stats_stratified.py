"""Stratified AUC, its cluster-robust variance, the cluster bootstrap and heterogeneity."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chi2
from sklearn.metrics import roc_auc_score

from agent_reflection.stats import UndefinedStatistic
from agent_reflection.stats.cluster_bootstrap import (
    _auc_of_type_counts,
    _design,
    cluster_bootstrap_stratified_auc,
)
from agent_reflection.stats.delong import delong_ci
from agent_reflection.stats.stratified import encode, heterogeneity, stratified_auc


def stratified_auc_of_weights(design, weights):  # type: ignore[no-untyped-def]
    """The stratified AUC for each row of cluster ``weights`` (resamples x clusters), by the
    bootstrap's own count of a resample: the weights tallied by cluster type."""
    per_type = np.empty((weights.shape[0], design.n_types))
    for b in range(weights.shape[0]):
        per_type[b] = np.bincount(design.cluster_type, weights=weights[b], minlength=design.n_types)
    return _auc_of_type_counts(design, per_type)


def data(seed: int, n: int = 600, strata: int = 3):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    st = rng.integers(0, strata, n)
    y = rng.random(n) < 0.2 + 0.2 * st
    # rounded scores: ties within and across strata
    s = np.round(rng.normal(size=n) + 0.6 * y + 0.8 * st, 1)
    return s, y, np.array([f"m{k}" for k in st])


def test_stratified_auc_is_the_pair_weighted_mean_of_per_stratum_aucs() -> None:
    s, y, st = data(1)
    r = stratified_auc(s, y, st)
    per, pairs = [], []
    for name in sorted(set(st)):
        m = st == name
        per.append(roc_auc_score(y[m], s[m]))
        pairs.append(y[m].sum() * (~y[m]).sum())
    assert r.value == pytest.approx(np.dot(per, pairs) / sum(pairs), abs=1e-12)
    assert [x.auc.value for x in r.strata] == pytest.approx(per, abs=1e-12)
    for x in r.strata:  # per-stratum intervals are DeLong's
        m = st == x.stratum
        d = delong_ci(s[m], y[m])
        assert x.auc is not None
        assert (x.se, x.auc.ci_low, x.auc.ci_high) == pytest.approx(
            (d.se, d.ci_low, d.ci_high), abs=1e-12
        )
    assert sum(x.pair_weight for x in r.strata) == pytest.approx(1.0)
    assert r.value != pytest.approx(roc_auc_score(y, s), abs=1e-3)  # pooling differs here
    assert r.ci_low < r.value < r.ci_high


def test_one_class_strata_are_listed_and_dropped() -> None:
    s, y, st = data(2)
    s2 = np.r_[s, [0.9, 0.95, 0.99]]
    y2 = np.r_[y, [True, True, True]]
    st2 = np.r_[st, ["all-right"] * 3]
    r, base = stratified_auc(s2, y2, st2), stratified_auc(s, y, st)
    assert r.dropped == ("all-right",) and r.value == base.value and r.se == base.se
    row = next(x for x in r.strata if x.stratum == "all-right")
    assert row.auc is None and row.pair_weight == 0.0 and row.n_pos == 3
    with pytest.raises(UndefinedStatistic, match="no stratum has both"):
        stratified_auc([0.9, 0.8], [True, False], ["a", "b"])


def test_one_stratum_without_clusters_is_delong() -> None:
    s, y, _ = data(3)
    r = stratified_auc(s, y, ["one"] * s.size)
    d = delong_ci(s, y)
    assert r.value == pytest.approx(d.value, abs=1e-12)
    # influence-function form vs DeLong's per-class sample variances: equal up to n/(n-1)
    assert r.se == pytest.approx(d.se, rel=0.01)
    assert r.se_rows_independent == pytest.approx(r.se, abs=1e-15)


def test_duplicated_rows_in_one_cluster_add_no_information() -> None:
    s, y, st = data(4)
    ids = np.array([f"q{i}" for i in range(s.size)])
    once = stratified_auc(s, y, st, ids)
    twice = stratified_auc(np.r_[s, s], np.r_[y, y], np.r_[st, st], np.r_[ids, ids])
    assert twice.value == pytest.approx(once.value, abs=1e-12)
    # clustered: the same SE up to the C/(C-1) factor; as if independent: about 1/sqrt(2)
    assert twice.se == pytest.approx(once.se, rel=1e-9)
    assert twice.se_rows_independent == pytest.approx(once.se / np.sqrt(2), rel=0.01)
    assert twice.n_clusters == s.size


def test_missing_cluster_ids_are_clusters_of_their_own_and_missing_strata_one_stratum() -> None:
    s, y, st = data(9, n=200)
    ids = np.array([f"q{i}" for i in range(s.size)], dtype=object)
    gaps = ids.copy()
    gaps[::3] = None
    assert stratified_auc(s, y, st, gaps).se == stratified_auc(s, y, st, ids).se
    st_gaps = st.astype(object)
    st_gaps[:5] = None
    names = [x.stratum for x in stratified_auc(s, y, st_gaps).strata]
    assert names[-1] == "(missing)" and len(names) == 4


def test_vectorised_resample_statistic_matches_expanding_the_rows() -> None:
    s, y, st = data(5, n=200)
    cl = np.array([f"q{i % 70}" for i in range(s.size)])
    design = _design(s, y, encode(st)[1], encode(cl)[1])
    rng = np.random.default_rng(0)
    weights = rng.integers(0, 3, size=(6, design.n_clusters)).astype(np.float64)
    got = stratified_auc_of_weights(design, weights)
    cluster_of_row = encode(cl)[1]  # ids in sorted order: the design's cluster numbering
    for b in range(weights.shape[0]):
        reps = weights[b, cluster_of_row].astype(int)
        ref = stratified_auc(np.repeat(s, reps), np.repeat(y, reps), np.repeat(st, reps)).value
        assert got[b] == pytest.approx(ref, abs=1e-12)


def test_cluster_bootstrap_is_seeded_and_treats_duplicates_as_one_cluster() -> None:
    s, y, st = data(6, n=300)
    ids = np.array([f"q{i:04d}" for i in range(s.size)])
    a = cluster_bootstrap_stratified_auc(s, y, st, ids, n_resamples=400, seed=9)
    b = cluster_bootstrap_stratified_auc(s, y, st, ids, n_resamples=400, seed=9)
    assert a == b and a.ci_low < a.value < a.ci_high and a.n_clusters == 300
    dup = cluster_bootstrap_stratified_auc(
        np.r_[s, s], np.r_[y, y], np.r_[st, st], np.r_[ids, ids], n_resamples=400, seed=9
    )
    # each resample draws the same clusters, each now two identical rows: the same AUCs
    assert (dup.ci_low, dup.ci_high) == pytest.approx((a.ci_low, a.ci_high), abs=1e-12)
    rows = cluster_bootstrap_stratified_auc(
        np.r_[s, s], np.r_[y, y], np.r_[st, st], None, n_resamples=400, seed=9
    )
    assert rows.ci_high - rows.ci_low < 0.85 * (a.ci_high - a.ci_low)  # rows: too narrow


def test_cluster_bootstrap_undefined_and_bad_input() -> None:
    with pytest.raises(UndefinedStatistic):
        cluster_bootstrap_stratified_auc([0.9, 0.8], [True, True], ["a", "a"])
    with pytest.raises(ValueError, match="same length"):
        cluster_bootstrap_stratified_auc([0.9, 0.8], [True, False], ["a"])


def test_cochran_q_and_i_squared() -> None:
    s, y, st = data(7, n=3000)
    r = stratified_auc(s, y, st)
    h = heterogeneity(r.strata)
    a = np.array([x.auc.value for x in r.strata])
    w = np.array([1 / x.se**2 for x in r.strata])  # type: ignore[operator]
    mean = np.dot(w, a) / w.sum()
    q = float(np.dot(w, (a - mean) ** 2))
    assert h.q == pytest.approx(q) and h.df == 2 and h.fixed_effect_auc == pytest.approx(mean)
    assert h.p_value == pytest.approx(chi2.sf(q, 2))
    assert h.i_squared == pytest.approx(max(0.0, (q - 2) / q))
    assert heterogeneity(r.strata[:1]).q is None


def test_row_components_are_per_row_pairwise_shares_in_row_order() -> None:
    from agent_reflection.stats.auc import row_components

    rng = np.random.default_rng(8)
    s = np.round(rng.normal(size=60), 1)
    y = rng.random(60) < 0.4
    comp = row_components(s, y)
    pos, neg = s[y], s[~y]
    for i in range(s.size):
        if y[i]:
            expected = np.mean((neg < s[i]) + 0.5 * (neg == s[i]))
        else:
            expected = np.mean((pos > s[i]) + 0.5 * (pos == s[i]))
        assert comp[i] == pytest.approx(expected, abs=1e-12)
    assert comp[y].mean() == pytest.approx(roc_auc_score(y, s), abs=1e-12)


def test_cluster_bootstrap_does_not_depend_on_the_row_order() -> None:
    s, y, st = data(10, n=300)
    ids = np.array([f"q{i % 120}" for i in range(s.size)])
    perm = np.random.default_rng(1).permutation(s.size)
    a = cluster_bootstrap_stratified_auc(s, y, st, ids, n_resamples=300, seed=4)
    b = cluster_bootstrap_stratified_auc(
        s[perm], y[perm], st[perm], ids[perm], n_resamples=300, seed=4
    )
    assert (a.ci_low, a.ci_high) == pytest.approx((b.ci_low, b.ci_high), abs=1e-12)
