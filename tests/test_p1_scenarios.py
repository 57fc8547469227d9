"""P1 on seeded calibration scenarios: the pooling paradox, a stratum below chance, coverage."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from agent_reflection.experiments.p1.analysis import analyse_p1
from agent_reflection.experiments.registration import minimum_sample
from agent_reflection.simulate.calibration import (
    StratumSpec,
    pooling_paradox,
    simulate_calibration,
    stratified_truth,
)


@pytest.fixture(scope="module")
def prereg(p1_small_prereg):  # type: ignore[no-untyped-def]
    return p1_small_prereg


def test_pooling_paradox_continues_and_warns(prereg) -> None:  # type: ignore[no-untyped-def]
    """Two strata, each AUC 0.65, different base rates and mean confidence: the pooled AUC
    falls below 0.5, the stratified one does not."""
    df = simulate_calibration(pooling_paradox(2000, 0.65), seed=3)
    result = analyse_p1(df, prereg)
    d = result.details
    assert result.verdict == "continue"
    assert d["high_subset"]["auc"] < 0.5 and d["high_subset"]["verdict"] == "kill"
    assert result.metric.interval.ci_low <= 0.65 <= result.metric.interval.ci_high
    (warning,) = d["warnings"]
    assert warning["kind"] == "simpson" and "verdicts differ" in warning["message"]
    assert "overconfident" in warning["message"] and "base rate" in warning["message"]
    assert any(n.startswith("simpson:") for n in result.notes)
    assert all(r["decisive"] for r in d["strata"])
    # both strata discriminate alike: no heterogeneity to speak of
    assert d["heterogeneity"]["p_value"] > 0.01


def test_a_stratum_below_chance_is_named_and_small_strata_are_greyed(prereg) -> None:  # type: ignore[no-untyped-def]
    strata = [
        StratumSpec("good", 3000, 0.72, 0.4),
        StratumSpec("inverted", 1500, 0.35, 0.4),
        StratumSpec("tiny", 40, 0.7, 0.5),
    ]
    result = analyse_p1(simulate_calibration(strata, seed=4), prereg)
    rows = {r["stratum"]: r for r in result.details["strata"]}
    assert rows["inverted"]["ci_high"] < 0.5 and rows["inverted"]["decisive"]
    assert not rows["tiny"]["decisive"] and rows["tiny"]["auc"] is not None
    assert result.details["heterogeneity"]["strata_below_chance"] == ["inverted"]
    assert result.details["heterogeneity"]["i_squared"] > 0.9
    note = next(n for n in result.notes if "wholly below 0.5" in n)
    assert "inverted" in note and "good" not in note


def test_the_minimum_sample_comes_from_the_registered_effect(prereg) -> None:  # type: ignore[no-untyped-def]
    base = minimum_sample(prereg.p1).n
    assert minimum_sample(replace(prereg.p1, smallest_useful_auc=0.7)).n < base
    assert minimum_sample(replace(prereg.p1, power=0.9)).n > base


@pytest.mark.slow
def test_primary_interval_covers_the_truth_at_the_minimum_sample(prereg) -> None:  # type: ignore[no-untyped-def]
    """About 95% of seeds: two strata with different AUCs and base rates, rows clustered by
    question (correlated within a question), about the minimum number of correct rows."""
    n = minimum_sample(prereg.p1).n
    # expected 142 correct and 183 incorrect rows: around the minimum of each class
    strata = [StratumSpec("a", 3 * n // 2, 0.70, 0.5), StratumSpec("b", n, 0.62, 0.35)]
    truth = stratified_truth(strata)
    seeds = 200
    covered = covered_delong = 0
    for seed in range(seeds):
        df = simulate_calibration(strata, seed=seed, questions=n, question_effect=0.5)
        result = analyse_p1(df, prereg)
        covered += result.metric.interval.ci_low <= truth <= result.metric.interval.ci_high
        delong = result.details["stratified"]["delong"]
        covered_delong += delong["ci_low"] <= truth <= delong["ci_high"]
    # measured: 0.955 (cluster bootstrap), 0.94 (clustered stratified DeLong) over 200 seeds
    assert 0.91 <= covered / seeds <= 0.99, covered / seeds
    assert 0.91 <= covered_delong / seeds <= 0.99, covered_delong / seeds


def test_truth_of_a_scenario() -> None:
    strata = [StratumSpec("a", 100, 0.7, 0.5), StratumSpec("b", 100, 0.6, 0.1)]
    w = np.array([0.25, 0.09])
    assert stratified_truth(strata) == pytest.approx(float(np.dot(w, [0.7, 0.6]) / w.sum()))
    with pytest.raises(ValueError, match="at least one stratum"):
        simulate_calibration([], seed=1)


@pytest.mark.slow
def test_kill_rule_power_at_the_minimum_sample(prereg) -> None:  # type: ignore[no-untyped-def]
    """A useful signal is (almost) never killed; no signal is killed about 80% of the time."""
    n = minimum_sample(prereg.p1).n
    seeds = 150
    rates = {}
    for auc in (0.5, 0.7):
        kills = 0
        for seed in range(seeds):
            df = simulate_calibration([StratumSpec("m", 3 * n, auc, 0.5)], seed=seed)
            # exactly the minimum of each class
            df = df.groupby("correct", group_keys=False).head(n)
            assert (df["correct"].sum(), (~df["correct"]).sum()) == (n, n)
            kills += analyse_p1(df, prereg).verdict == "kill"
        rates[auc] = kills / seeds
    assert rates[0.7] <= 0.02, rates
    assert 0.65 <= rates[0.5] <= 0.95, rates


@pytest.mark.slow
def test_the_more_rows_an_inconclusive_result_asks_for_decide_it(prereg) -> None:  # type: ignore[no-untyped-def]
    """If the truth is the inconclusive estimate, the suggested sample kills ~80% of the time."""
    n_rows = 2 * minimum_sample(prereg.p1).n + 60
    first = analyse_p1(simulate_calibration([StratumSpec("m", n_rows, 0.55, 0.5)], seed=0), prereg)
    assert first.verdict == "inconclusive" and first.metric.interval.value < 0.6
    scale = first.details["power"]["more_rows_to_decide"]["scale"]
    bigger = [StratumSpec("m", round(n_rows * scale), first.metric.interval.value, 0.5)]
    seeds = 100
    kills = sum(
        analyse_p1(simulate_calibration(bigger, seed=1000 + s), prereg).verdict == "kill"
        for s in range(seeds)
    )
    # measured: 86 of 100
    assert 0.7 <= kills / seeds <= 0.92, kills
