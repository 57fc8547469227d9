"""P1: verdict branches, the Phase-0 harness cases, loop labels, results.json."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from agent_reflection.experiments.p1.analysis import analyse_p1, run_p1
from agent_reflection.experiments.registration import apply_overrides, minimum_sample
from agent_reflection.experiments.report import experiment_summary, would_change
from agent_reflection.experiments.results import read_results
from agent_reflection.store.db import connect
from sim_rows import insert_labels


@pytest.fixture(scope="module")
def prereg(p1_small_prereg):  # type: ignore[no-untyped-def]
    return p1_small_prereg


def frame(conf, correct, **groups):  # type: ignore[no-untyped-def]
    return pd.DataFrame({"confidence": conf, "correct": correct, **groups})


N = 140  # rows per class: above the derived minimum (130 at AUC 0.6, 95%, 80%)


@pytest.mark.spec
@pytest.mark.parametrize(
    ("case", "conf", "correct", "auc", "verdict"),
    [
        pytest.param(
            "separable",
            [0.81 + 0.0001 * i for i in range(N)] + [0.95 + 0.0001 * i for i in range(N)],
            [False] * N + [True] * N,
            1.0,
            "continue",
            id="P1.1",
        ),
        pytest.param("constant", [0.9] * (2 * N), [False] * N + [True] * N, 0.5, "kill", id="P1.2"),
        pytest.param(
            "all-correct",
            [0.8 + 0.01 * i for i in range(20)],
            [True] * 20,
            None,
            "insufficient-data",
            id="P1.3",
        ),
    ],
)
def test_harness_cases(prereg, case, conf, correct, auc, verdict, tmp_path):  # type: ignore[no-untyped-def]
    result = analyse_p1(frame(conf, correct), prereg)
    assert result.verdict == verdict
    estimate = result.metric.interval
    assert (None if estimate is None else estimate.value) == auc
    assert "kill only when" in result.kill_condition
    path = result.write_json(tmp_path / "results.json")  # valid against results.v1
    doc = read_results(path)
    assert doc["verdict"] == verdict and doc["metric"]["value"] == auc
    if case == "all-correct":
        assert any("undefined" in n for n in doc["notes"])


def test_continue_reports_both_intervals_and_secondaries(prereg):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(19)  # "small" draws AUC 0.449, its interval up to 0.666
    n = 600
    y = rng.random(n) < 0.5
    conf = np.clip(0.8 + 0.2 * (0.5 + 0.25 * (rng.normal(size=n) + 1.2 * y)), 0.8, 1.0)
    conf = np.r_[conf, rng.uniform(0.1, 0.79, 100)]
    y = np.r_[y, rng.random(100) < 0.3]
    model = np.where(np.arange(n + 100) % 2, "a", "b")
    result = analyse_p1(frame(conf, y, model=model), prereg)
    high = conf >= 0.8
    assert result.verdict == "continue"
    assert result.n == int(high.sum())
    d = result.details
    # the stratified AUC is the pair-weighted mean of the per-model AUCs
    per = {m: roc_auc_score(y[high & (model == m)], conf[high & (model == m)]) for m in "ab"}
    pairs = {m: (y[high & (model == m)].sum() * (~y[high & (model == m)]).sum()) for m in "ab"}
    expected = sum(per[m] * pairs[m] for m in "ab") / sum(pairs.values())
    assert result.metric.interval.value == pytest.approx(expected, abs=1e-12)
    assert (
        result.metric.interval.ci_low
        < result.metric.interval.value
        < result.metric.interval.ci_high
    )
    assert result.metric.ci_method == "cluster bootstrap (percentile)"
    assert d["bootstrap"]["seed"] == prereg.p1.seed
    assert d["bootstrap"]["n_resamples"] == prereg.p1.bootstrap_resamples
    s = d["stratified"]
    assert s["delong"]["ci_low"] < s["auc"] < s["delong"]["ci_high"]
    assert d["high_subset"]["auc"] == pytest.approx(roc_auc_score(y[high], conf[high]))
    assert {r["stratum"] for r in d["strata"]} == {"a", "b"} and d["strata_column"] == "model"
    assert d["heterogeneity"]["df"] == 1 and d["warnings"] == []
    assert {g["group"] for g in d["groups"]} == {"a", "b"}
    assert sum(b["count"] for b in d["reliability"]["bins"]) == n + 100
    assert d["roc"]["fpr"][0] == 0.0 and d["roc"]["tpr"][-1] == 1.0
    assert d["lift"]["k"] == 70
    assert d["brier_all"] == pytest.approx(np.mean((conf - y) ** 2))
    # the same data, same seed: the same interval
    again = analyse_p1(frame(conf, y, model=model), prereg)
    assert again.metric == result.metric


def test_kill_needs_the_upper_bound_below_the_smallest_useful_auc(prereg):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(3)
    n = 40000
    y = rng.random(n) < 0.5
    # stated to three decimals, as confidences are: single-row clusters sharing a score and
    # class are one type for the bootstrap's counting
    conf = np.round(0.8 + 0.2 / (1 + np.exp(-(rng.normal(size=n) + 0.13 * y))), 3)
    result = analyse_p1(frame(conf, y), prereg)
    assert result.metric.interval.ci_low > 0.5 and result.metric.interval.ci_high < 0.6
    assert result.verdict == "kill"
    # no row limit: the bootstrap interval is primary at 40,000 rows too
    assert result.metric.ci_method == "cluster bootstrap (percentile)"
    assert result.details["bootstrap"]["n_clusters"] == n
    delong = apply_overrides(prereg, {"p1.ci_method": "stratified_delong"})
    assert analyse_p1(frame(conf, y), delong).verdict == "kill"


def test_a_point_below_the_useful_auc_with_a_wide_interval_is_inconclusive(prereg):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(5)
    n = 150  # per class: just above the minimum, so the interval stays wide
    y = np.r_[np.ones(n, bool), np.zeros(n, bool)]
    conf = 0.8 + 0.2 / (1 + np.exp(-(rng.normal(size=2 * n) + 0.3 * y)))
    result = analyse_p1(frame(conf, y), prereg)
    lo, hi, auc = (
        result.metric.interval.ci_low,
        result.metric.interval.ci_high,
        result.metric.interval.value,
    )
    assert lo <= 0.5 < 0.6 <= hi and auc < 0.6, (auc, lo, hi)
    assert result.verdict == "inconclusive"
    more = result.details["power"]["more_rows_to_decide"]
    assert more["more_correct"] > 0 and more["more_incorrect"] > 0
    assert any("not a kill" in note and "more correct" in note for note in result.notes)


def test_an_interval_that_decides_is_a_verdict_at_any_size(prereg):  # type: ignore[no-untyped-def]
    # fewer incorrect rows than the per-class minimum of the older rule, but the interval (every
    # correct answer below every wrong one) rules out any useful AUC: a kill, not "insufficient"
    minimum = minimum_sample(prereg.p1).n
    conf = [0.85 + 0.0001 * i for i in range(2 * minimum)]
    correct = [True] * (minimum + 20) + [False] * (minimum - 20)
    result = analyse_p1(frame(conf, correct), prereg)
    assert result.metric.interval.ci_high < prereg.p1.smallest_useful_auc
    assert result.verdict == "kill"
    assert result.thresholds["max_ci_half_width"] == prereg.p1.max_ci_half_width
    assert "min_per_class" not in result.thresholds
    # a registration without the precision target keeps the older rule: a per-class minimum
    older = replace(prereg, p1=replace(prereg.p1, max_ci_half_width=0.0))
    assert analyse_p1(frame(conf, correct), older).verdict == "insufficient-data"
    assert analyse_p1(frame(conf, correct), older).thresholds["min_per_class"] == minimum


def test_a_wide_undecided_interval_is_insufficient_and_says_how_many_rows(prereg):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(0)  # AUC 0.547: between 0.5 and 0.6
    n = 40  # per class: an interval far wider than the target's half-width 0.07
    conf = list(0.8 + 0.2 * rng.random(2 * n))
    result = analyse_p1(frame(conf, [True] * n + [False] * n), prereg)
    interval = result.metric.interval
    half = (interval.ci_high - interval.ci_low) / 2
    assert interval.ci_low <= 0.5 < prereg.p1.smallest_useful_auc <= interval.ci_high
    assert half > prereg.p1.max_ci_half_width
    assert result.verdict == "insufficient-data"
    more = result.details["power"]["more_rows_to_decide"]
    # the half-width shrinks as 1/sqrt(rows): the named rows bring it to the target
    scale = (half / prereg.p1.max_ci_half_width) ** 2
    assert more["scale"] == pytest.approx(scale)
    assert more["more_rows"] == more["more_correct"] + more["more_incorrect"]
    assert more["more_correct"] == math.ceil((scale - 1) * n)
    assert f"{more['more_rows']:,} further rows" in would_change(result.to_dict())


def test_an_interval_that_excludes_chance_is_never_insufficient(prereg):  # type: ignore[no-untyped-def]
    # the "estimate" continue rule: chance ruled out, the estimate below the smallest useful
    # AUC, the interval wider than the target: inconclusive, not insufficient-data
    p1 = replace(prereg.p1, continue_rule="estimate", max_ci_half_width=0.01)
    rng = np.random.default_rng(0)
    n = 250  # per class; binormal scores with a true AUC of 0.57 (this draw: 0.579)
    correct = np.r_[np.ones(n, bool), np.zeros(n, bool)]
    conf = 0.8 + 0.2 / (1 + np.exp(-(rng.normal(size=2 * n) + 0.25 * correct)))
    result = analyse_p1(frame(conf, correct), replace(prereg, p1=p1))
    interval = result.metric.interval
    assert interval.ci_low > 0.5 and interval.value < p1.smallest_useful_auc, interval
    assert (interval.ci_high - interval.ci_low) / 2 > p1.max_ci_half_width
    assert result.verdict == "inconclusive"


def test_rows_below_the_threshold_are_not_in_the_subset(prereg):  # type: ignore[no-untyped-def]
    conf = [0.5] * 50 + [0.9] * 10
    result = analyse_p1(frame(conf, [True] * 60), prereg)
    assert result.n == 10 and result.details["n_all"] == 60


def test_exploratory_override_is_labelled(prereg, tmp_path):  # type: ignore[no-untyped-def]
    run = apply_overrides(prereg, {"p1.high_confidence_threshold": 0.5})
    result = analyse_p1(frame([0.9] * (2 * N), [False] * N + [True] * N), run)
    doc = read_results(result.write_json(tmp_path / "r.json"))
    assert doc["exploratory"] is True
    assert doc["preregistration"]["overrides"] == {"p1.high_confidence_threshold": 0.5}
    assert result.label == "kill (EXPLORATORY)"
    same = analyse_p1(
        frame([0.9] * 4, [True] * 4), apply_overrides(prereg, {"p1.smallest_useful_auc": 0.6})
    )
    assert same.exploratory is False


def test_run_p1_from_the_labels_table(prereg):  # type: ignore[no-untyped-def]
    con = connect(":memory:")
    insert_labels(
        con, "a", [0.9] * 12 + [0.95] * 12, [False] * 12 + [True] * 12, [{"model": "m1"}] * 24
    )
    insert_labels(con, "b", [0.9] * 5, [True] * 5)
    assert run_p1(con, prereg, corpus="a").metric.interval.value == 1.0
    # the headline n counts the rows the verdict stands on: corpus b's five rows form a stratum
    # with one class (no model, all correct), which adds no pair
    both = run_p1(con, prereg)
    assert both.n == 24 and both.details["n_high"] == 29


def test_question_ids_from_a_labels_file_become_clusters(prereg, tmp_path):  # type: ignore[no-untyped-def]
    from agent_reflection.load.labels import load_labels

    rng = np.random.default_rng(2)
    rows = [
        {
            "question_id": f"q{i // 2}",
            "model": f"m{i % 2}",
            "confidence": 0.8 + 0.2 * rng.random(),
            "correct": bool(rng.random() < 0.5),
        }
        for i in range(400)
    ]
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    con = connect(":memory:")
    load_labels(con, path)
    d = run_p1(con, prereg).details
    assert (d["strata_column"], d["cluster_column"]) == ("model", "question_id")
    assert d["stratified"]["n_clusters"] == 200
    assert {r["stratum"] for r in d["strata"]} == {"m0", "m1"}


def test_group_columns_are_read_by_duckdb_as_pandas_built_them_from_the_json(prereg):  # type: ignore[no-untyped-def]
    from agent_reflection.experiments.p1.analysis import corpus_labels

    groups = [
        {
            "model": f"m{i % 3}",  # strings
            "question_id": i // 2,  # integers
            "seed": 7,  # integers, missing below: floats
            "score": 0.5 * i,  # numbers
            "mixed": "x" if i % 2 else i,  # strings and integers: decoded one by one
            "tag": {"a": i} if i == 0 else None,  # nested and null
            "quoted": 'say "hi" \\ é',  # escapes survive
        }
        for i in range(8)
    ]
    del groups[3]["seed"], groups[5]["model"]
    con = connect(":memory:")
    insert_labels(con, "c", [0.9] * 8, [True, False] * 4, groups)
    got = corpus_labels(con)
    expected = pd.DataFrame(groups)
    for column in expected.columns:
        left, right = got[column].tolist(), expected[column].tolist()
        assert [None if pd.isna(v) else v for v in left if not isinstance(v, dict)] == [
            None if pd.isna(v) else v for v in right if not isinstance(v, dict)
        ], column
        assert got[column].dtype == expected[column].dtype, column
    assert got["tag"][0] == {"a": 0}
    assert list(got["confidence"]) == [0.9] * 8 and list(got["corpus"]) == ["c"] * 8
    assert len(corpus_labels(connect(":memory:"))) == 0


def test_the_registered_draws_reach_the_bootstrap(prereg):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(4)
    y = rng.random(400) < 0.5
    df = frame(np.round(0.85 + 0.05 * y + rng.normal(0, 0.05, 400), 2).clip(0.8, 1), y)
    new = analyse_p1(df, prereg).details["bootstrap"]
    old = analyse_p1(df, apply_overrides(prereg, {"p1.bootstrap_draws": "cluster-index"}))
    assert new["draws"] == prereg.p1.bootstrap_draws == "multinomial-by-cluster-type"
    assert old.details["bootstrap"]["draws"] == "cluster-index" and old.exploratory
    assert old.details["bootstrap"]["estimate"] == new["estimate"]
    assert old.details["bootstrap"]["ci_low"] != new["ci_low"]  # another random stream


def budget_frame() -> pd.DataFrame:
    """Continuous confidences, every row its own cluster: one cluster type per row."""
    rng = np.random.default_rng(9)
    y = rng.random(600) < 0.5
    conf = 0.8 + 0.2 * rng.beta(2.0 + y, 2.0)
    assert np.unique(conf).size == conf.size
    model = np.where(rng.random(600) < 0.5, "a", "b")
    return pd.DataFrame({"confidence": conf, "correct": y, "model": model})


def test_the_bootstrap_budget_switches_the_primary_interval_at_its_boundary(prereg):  # type: ignore[no-untyped-def]
    df = budget_frame()
    high = df[df["confidence"] >= prereg.p1.high_confidence_threshold]
    # untied scores, single-row clusters: a cluster type and a key per row
    cost = prereg.p1.bootstrap_resamples * 2 * len(high)
    at = analyse_p1(df, apply_overrides(prereg, {"p1.bootstrap_budget": cost}))
    over = analyse_p1(df, apply_overrides(prereg, {"p1.bootstrap_budget": cost - 1}))
    none = analyse_p1(df, apply_overrides(prereg, {"p1.bootstrap_budget": 0}))
    # at the budget: the bootstrap is primary, as with no budget at all
    assert at.metric.ci_method == none.metric.ci_method == "cluster bootstrap (percentile)"
    assert at.details["primary_interval"]["budget"] == {
        "cluster_types": len(high),
        "keys": len(high),
        "cost": cost,
        "budget": cost,
        "within": True,
    }
    assert none.details["primary_interval"]["budget"] is None
    boot = at.details["bootstrap"]
    assert (at.metric.interval.ci_low, at.metric.interval.ci_high) == (
        boot["ci_low"],
        boot["ci_high"],
    )
    assert (at.metric.interval.ci_low, at.metric.interval.ci_high) == (
        none.metric.interval.ci_low,
        none.metric.interval.ci_high,
    )
    # one over: the clustered stratified DeLong interval, the bootstrap not run, and why
    method = over.metric.ci_method or ""
    assert method.startswith("stratified DeLong (cluster-robust") and "over its budget" in method
    assert over.details["bootstrap"] is None
    delong = over.details["stratified"]["delong"]
    assert (over.metric.interval.ci_low, over.metric.interval.ci_high) == (
        delong["ci_low"],
        delong["ci_high"],
    )
    assert (over.metric.interval.ci_low, over.metric.interval.ci_high) == (
        at.details["stratified"]["delong"]["ci_low"],
        at.details["stratified"]["delong"]["ci_high"],
    )
    primary = over.details["primary_interval"]
    assert primary["method"] == over.metric.ci_method
    assert primary["budget"]["within"] is False and primary["budget"]["cost"] == cost
    assert f"= {cost:,} > bootstrap_budget {cost - 1:,}" in primary["reason"]
    assert any(n.startswith("primary interval: clustered stratified DeLong") for n in over.notes)
    assert over.metric.interval.value == at.metric.interval.value


def _binormal(rng, auc: float, n: int, model: str) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    from statistics import NormalDist

    shift = np.sqrt(2) * NormalDist().inv_cdf(auc)
    y = np.r_[np.ones(n, bool), np.zeros(n, bool)]
    conf = 0.8 + 0.2 / (1 + np.exp(-(rng.normal(size=2 * n) + shift * y)))
    return pd.DataFrame({"confidence": conf, "correct": y, "model": model})


def test_a_stratum_wholly_below_chance_qualifies_the_verdict(prereg, tmp_path):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(19)  # "small" draws AUC 0.449, its interval up to 0.666
    rows = pd.concat(
        [
            _binormal(rng, 0.75, 400, "good-a"),
            _binormal(rng, 0.75, 400, "good-b"),
            _binormal(rng, 0.30, 250, "contrarian"),
            _binormal(rng, 0.45, 15, "small"),  # below 0.5, but its interval includes it
        ],
        ignore_index=True,
    )
    # the strata's own intervals are DeLong's whatever the primary one; DeLong keeps it quick
    prereg = replace(prereg, p1=replace(prereg.p1, ci_method="stratified_delong"))
    result = analyse_p1(rows, prereg)
    assert result.verdict == "continue"
    [named] = result.qualifications
    assert (named["column"], named["stratum"]) == ("model", "contrarian")
    # the interval at the Bonferroni-adjusted level (4 strata) lies wholly below 0.5
    assert named["confidence_level"] == pytest.approx(1 - 0.05 / 4)
    assert named["ci_high"] < 0.5
    assert result.label == "continue, except model contrarian, which is anti-informative"
    doc = read_results(result.write_json(tmp_path / "results.json"))
    assert doc["verdict"] == "continue"  # the gate reads the verdict; the qualification adds
    assert doc["verdict_qualified"] == result.label
    assert doc["qualifications"][0]["stratum"] == "contrarian"
    summary = dict(experiment_summary(doc).facts)
    assert summary["verdict"] == result.label
    assert any(n.startswith("anti-informative: model contrarian") for n in result.notes)
    # the rule is registered: "off" names nobody
    off = replace(prereg, p1=replace(prereg.p1, below_chance_strata="off"))
    assert analyse_p1(rows, off).qualifications == ()
    assert "qualifications" not in analyse_p1(rows, off).to_dict()


def test_one_stratum_below_chance_is_the_verdict_not_a_qualification(prereg):  # type: ignore[no-untyped-def]
    rows = _binormal(np.random.default_rng(12), 0.30, 300, "only")
    result = analyse_p1(rows, prereg)
    assert result.verdict == "kill" and result.qualifications == ()


@pytest.mark.parametrize(
    ("n_correct", "n_incorrect", "verdict"),
    [
        (1, 1, "insufficient-data"),  # a degenerate interval 1.0-1.0: no evidence
        (3, 3, "insufficient-data"),  # smallest exact two-sided p 2/20 = 0.1
        (1, 38, "insufficient-data"),  # 2/39 = 0.051
        (4, 4, "continue"),  # 2/70 = 0.029: a perfect ranking excludes chance
        (1, 39, "continue"),  # 2/40 = 0.05: not above it
    ],
)
def test_too_few_rows_for_any_ranking_to_exclude_chance_decide_nothing(  # type: ignore[no-untyped-def]
    prereg, n_correct, n_incorrect, verdict
):
    # every correct row above every incorrect one: the most extreme ranking these rows allow
    conf = [0.81 + 0.001 * i for i in range(n_incorrect + n_correct)]
    result = analyse_p1(frame(conf, [False] * n_incorrect + [True] * n_correct), prereg)
    assert result.metric.interval.value == 1.0
    assert result.verdict == verdict
    if verdict == "insufficient-data":
        assert any("no ranking of so few rows could exclude chance" in n for n in result.notes)


@pytest.mark.parametrize(
    "sizes",
    [(1, 1), (3, 3), (1, 38), (1, 39), (4, 4), (20, 500), (539, 539), (540, 540), (540, 541)]
    + [(541, 541)]
    + [(k, n) for k in (1, 2, 7, 60) for n in (1, 9, 90, 900, 2_000)],
)
def test_smallest_rank_test_p_is_the_closed_form(sizes: tuple[int, int]) -> None:
    """Built term by term and left unfinished past a float's range (a million rows would build
    a number of some 300,000 digits): the same float as 2 / C(n, k) in full, either way round,
    including where that float becomes 0.0: 2 / C(1081, 540) is still 5e-324, the smallest
    float above it (C is about 2**1075.6, so a cut-off one power of 2 lower fails here), and
    2 / C(1082, 541) is 0.0."""
    from agent_reflection.experiments.p1.analysis import _smallest_rank_test_p

    for n_pos, n_neg in (sizes, sizes[::-1]):
        expected = min(1.0, 2 / math.comb(n_pos + n_neg, n_pos))
        assert _smallest_rank_test_p(n_pos, n_neg) == expected
