"""The statistics we own, checked against scikit-learn, SciPy and brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest, norm
from sklearn.metrics import brier_score_loss, roc_auc_score, roc_curve

from agent_reflection.stats import UndefinedStatistic
from agent_reflection.stats.auc import roc_auc
from agent_reflection.stats.brier import brier_score
from agent_reflection.stats.cluster_bootstrap import cluster_bootstrap_stratified_auc
from agent_reflection.stats.delong import delong_ci
from agent_reflection.stats.ece import reliability
from agent_reflection.stats.lift import top_fraction_lift
from agent_reflection.stats.roc import roc_curve_points
from agent_reflection.stats.wilson import wilson_ci


def brute_force_delong(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """O(n^2) DeLong: psi over every (positive, negative) pair."""
    pos, neg = scores[labels], scores[~labels]
    psi = (pos[:, None] > neg[None, :]).astype(float) + 0.5 * (pos[:, None] == neg[None, :])
    v10, v01 = psi.mean(axis=1), psi.mean(axis=0)
    auc = psi.mean()
    s10 = np.var(v10, ddof=1) if v10.size > 1 else 0.0
    s01 = np.var(v01, ddof=1) if v01.size > 1 else 0.0
    return float(auc), float(s10 / v10.size + s01 / v01.size)


labelled = (
    st.integers(min_value=2, max_value=60)
    .flatmap(
        lambda n: st.tuples(
            st.lists(
                st.sampled_from([0.0, 0.1, 0.5, 0.8, 0.85, 0.9, 1.0]) | st.floats(0, 1),
                min_size=n,
                max_size=n,
            ),
            st.lists(st.booleans(), min_size=n, max_size=n),
        )
    )
    .filter(lambda t: 0 < sum(t[1]) < len(t[1]))
)


@settings(max_examples=80, deadline=None)
@given(labelled)
def test_auc_equals_sklearn_with_ties(data: tuple[list[float], list[bool]]) -> None:
    scores, labels = data
    assert roc_auc(scores, labels) == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)


@settings(max_examples=80, deadline=None)
@given(labelled)
def test_delong_fast_equals_brute_force(data: tuple[list[float], list[bool]]) -> None:
    scores, labels = np.array(data[0]), np.array(data[1])
    auc, var = brute_force_delong(scores, labels)
    fast = delong_ci(scores, labels)
    assert fast.value == pytest.approx(auc, abs=1e-12)
    assert fast.variance == pytest.approx(var, abs=1e-12)


def test_delong_ci_is_normal_interval_clipped() -> None:
    rng = np.random.default_rng(1)
    y = rng.random(300) < 0.4
    s = rng.normal(size=300) + 0.8 * y
    r = delong_ci(s, y, 0.9)
    z = norm.ppf(0.95)
    assert r.ci_low == pytest.approx(r.value - z * r.se)
    assert r.ci_high == pytest.approx(r.value + z * r.se)
    assert r.n_pos == int(y.sum()) and r.n_neg == int((~y).sum())


def test_auc_undefined_with_one_class() -> None:
    with pytest.raises(UndefinedStatistic, match="both classes"):
        roc_auc([0.9, 0.8], [True, True])
    with pytest.raises(UndefinedStatistic):
        delong_ci([0.9, 0.8], [False, False])


def test_separable_and_constant() -> None:
    assert roc_auc([0.1, 0.2, 0.9, 0.95], [0, 0, 1, 1]) == 1.0
    r = delong_ci([0.9] * 20, [True] * 10 + [False] * 10)
    assert (r.value, r.ci_low, r.ci_high) == (0.5, 0.5, 0.5)


@pytest.mark.parametrize(
    ("k", "n", "level"),
    [
        (0, 1, 0.95),
        (0, 10, 0.95),
        (10, 10, 0.95),
        (1, 5, 0.95),
        (3, 17, 0.9),
        (50, 100, 0.99),
        (2, 10, 0.95),
        (123, 1000, 0.95),
        (1, 2, 0.5),
    ],
)
def test_wilson_equals_scipy(k: int, n: int, level: float) -> None:
    ours = wilson_ci(k, n, level)
    ref = binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
    assert ours.ci_low == pytest.approx(ref.low, abs=1e-12)
    assert ours.ci_high == pytest.approx(ref.high, abs=1e-12)
    assert ours.proportion == k / n


def test_wilson_rejects_empty_and_bad_counts() -> None:
    with pytest.raises(UndefinedStatistic):
        wilson_ci(0, 0)
    with pytest.raises(ValueError, match="successes"):
        wilson_ci(5, 3)


def test_brier_equals_sklearn() -> None:
    rng = np.random.default_rng(2)
    c, y = rng.random(100), rng.random(100) < 0.5
    assert brier_score(c, y) == pytest.approx(brier_score_loss(y, c))


def test_reliability_bins_and_ece_by_hand() -> None:
    conf = [0.05, 0.15, 0.15, 0.95, 1.0, 0.95]
    correct = [0, 1, 0, 1, 1, 0]
    rel = reliability(conf, correct, [0.0, 0.1, 0.2, 1.0])
    assert [b.count for b in rel.bins] == [1, 2, 3]
    assert rel.bins[2].accuracy == pytest.approx(2 / 3)
    expected = (1 / 6) * 0.05 + (2 / 6) * abs(0.5 - 0.15) + (3 / 6) * abs(2 / 3 - (2.9 / 3))
    assert rel.ece == pytest.approx(expected)
    assert rel.out_of_range == 0


def test_reliability_counts_out_of_range_and_empty_bins() -> None:
    rel = reliability([0.5, 0.7, 0.9, 1.0], [1, 0, 1, 1], [0.6, 0.8, 1.0])
    assert rel.out_of_range == 1 and rel.n == 3
    assert [b.count for b in rel.bins] == [1, 2]
    empty = reliability([0.9], [1], [0.0, 0.5, 1.0])
    assert empty.bins[0].count == 0 and empty.bins[0].accuracy is None
    with pytest.raises(UndefinedStatistic):
        reliability([0.1], [1], [0.5, 1.0])


def test_lift_with_ties_is_order_independent() -> None:
    conf = np.array([0.9, 0.9, 0.9, 0.9, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5])
    y = np.array([1, 0, 1, 0, 0, 0, 0, 1, 0, 0], dtype=bool)
    r = top_fraction_lift(conf, y, 0.1)
    assert r.k == 1 and r.top_accuracy == pytest.approx(0.5)
    assert r.lift == pytest.approx(0.5 / 0.3)
    perm = np.random.default_rng(3).permutation(10)
    assert top_fraction_lift(conf[perm], y[perm], 0.1).lift == pytest.approx(r.lift)


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_roc_points_equal_sklearn_on_tied_scores(seed: int) -> None:
    rng = np.random.default_rng(seed)
    s = np.round(rng.random(200), 1)  # eleven distinct scores: heavy ties
    y = rng.random(200) < 0.5
    ours = roc_curve_points(s, y)
    fpr, tpr, thresholds = roc_curve(y, s, drop_intermediate=False)
    np.testing.assert_allclose(ours.fpr, fpr)
    np.testing.assert_allclose(ours.tpr, tpr)
    np.testing.assert_array_equal(ours.thresholds, thresholds)
    assert np.trapezoid(ours.tpr, ours.fpr) == pytest.approx(roc_auc(s, y), abs=1e-12)


def test_bootstrap_is_seeded_and_brackets_the_auc() -> None:
    """The plain bootstrap of the AUC over rows: one stratum, every row its own cluster."""
    rng = np.random.default_rng(5)
    y = rng.random(150) < 0.5
    s = rng.normal(size=150) + y
    one = np.zeros(150)
    a = cluster_bootstrap_stratified_auc(s, y, one, n_resamples=300, seed=7)
    b = cluster_bootstrap_stratified_auc(s, y, one, n_resamples=300, seed=7)
    assert a == b
    assert a.ci_low < a.value < a.ci_high
    assert a.value == pytest.approx(roc_auc(s, y), abs=1e-12) and a.n_clusters == 150
    assert not math.isnan(a.ci_low)


def test_bootstrap_needs_both_classes() -> None:
    with pytest.raises(UndefinedStatistic):
        cluster_bootstrap_stratified_auc([0.1, 0.9, 0.8], [1, 1, 1], [0, 0, 0])


def test_roc_points_can_be_thinned_keeping_the_ends() -> None:
    s = np.linspace(0, 1, 5000)
    y = np.arange(5000) % 3 == 0
    full = roc_curve_points(s, y)
    thin = roc_curve_points(s, y, max_points=100)
    assert 90 <= len(thin.fpr) <= 100 and len(full.fpr) == 5001
    assert (thin.fpr[0], thin.tpr[0], thin.fpr[-1], thin.tpr[-1]) == (0.0, 0.0, 1.0, 1.0)
    assert set(zip(thin.fpr, thin.tpr, strict=True)) <= set(zip(full.fpr, full.tpr, strict=True))
    # each thinned segment cuts a corner at most its width x height
    bound = sum(np.diff(thin.fpr) * np.diff(thin.tpr))
    assert abs(np.trapezoid(thin.tpr, thin.fpr) - roc_auc(s, y)) <= bound


def test_roc_thinning_drops_straight_runs_first_keeping_the_area_exactly() -> None:
    rng = np.random.default_rng(8)
    y = rng.random(3000) < 0.3
    s = np.where(y, rng.integers(0, 40, 3000), rng.integers(20, 60, 3000)).astype(float)
    full = roc_curve_points(s, y)
    # scores 0-19 are all positive and 40-59 all negative: straight runs along the axes
    thin = roc_curve_points(s, y, max_points=25)
    assert len(full.fpr) == 61 and len(thin.fpr) == 23
    assert np.trapezoid(thin.tpr, thin.fpr) == pytest.approx(roc_auc(s, y), abs=1e-12)
    with pytest.raises(ValueError, match="at least 2"):
        roc_curve_points(s, y, max_points=1)
