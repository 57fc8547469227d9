"""Sample sizes from the registered smallest useful effects, and ``reflect prereg power``."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest
from click.testing import CliRunner

from agent_reflection.cli import cli
from agent_reflection.experiments.registration import (
    InvalidPreregistration,
    load_preregistration,
    parse_preregistration,
    power_table,
)
from agent_reflection.stats.delong import delong_ci
from agent_reflection.stats.power import (
    auc_sample_size,
    decision_power,
    design_half_width,
    hanley_mcneil_variance,
    proportion_sample_size,
    scale_to_decide,
)
from agent_reflection.stats.wilson import wilson_ci

Z = NormalDist().inv_cdf(0.975)
Z_POWER = NormalDist().inv_cdf(0.8)


@pytest.mark.parametrize(("n1", "n0"), [(10, 10), (30, 70), (130, 130)])
def test_hanley_mcneil_at_chance_is_the_exact_mann_whitney_variance(n1: int, n0: int) -> None:
    # under no signal the AUC's variance is (n1 + n0 + 1) / (12 n1 n0), exactly
    assert hanley_mcneil_variance(0.5, n1, n0) == pytest.approx((n1 + n0 + 1) / (12 * n1 * n0))


def test_auc_sample_size_is_the_smallest_n_meeting_both_conditions() -> None:
    size = auc_sample_size(0.6)
    assert (size.n, size.n_to_continue, size.n_to_kill) == (130, 130, 127)

    def sd(a: float, n: int) -> float:
        return float(np.sqrt(hanley_mcneil_variance(a, n, n)))

    n = size.n_to_continue
    assert (
        Z * sd(0.5, n) + Z_POWER * sd(0.6, n) <= 0.1 < Z * sd(0.5, n - 1) + Z_POWER * sd(0.6, n - 1)
    )
    assert auc_sample_size(0.7).n < auc_sample_size(0.65).n < size.n
    assert auc_sample_size(0.6, power=0.9).n > size.n
    with pytest.raises(ValueError, match="smallest useful AUC"):
        auc_sample_size(0.5)


def test_auc_sample_size_has_its_power_in_simulation() -> None:
    """At the derived n per class, DeLong's interval clears 0.5 in about 80% of samples when
    the AUC is 0.6, and falls below 0.6 in about 80% when there is no signal."""
    n = auc_sample_size(0.6).n
    d = float(np.sqrt(2) * NormalDist().inv_cdf(0.6))
    rng = np.random.default_rng(1)
    y = np.r_[np.ones(n, bool), np.zeros(n, bool)]
    clears = kills = 0
    seeds = 400
    for _ in range(seeds):
        clears += delong_ci(rng.normal(size=2 * n) + d * y, y).ci_low > 0.5
        kills += delong_ci(rng.normal(size=2 * n), y).ci_high < 0.6
    assert 0.72 <= clears / seeds <= 0.88
    assert 0.72 <= kills / seeds <= 0.90


def test_proportion_sample_size_is_the_score_test_and_matches_wilson() -> None:
    size = proportion_sample_size(0.05)
    assert size.n_to_kill == int(np.ceil((Z * np.sqrt(0.05 * 0.95) / 0.05) ** 2))
    assert size.n_to_continue == int(np.ceil((Z_POWER * np.sqrt(0.05 * 0.95) / 0.05) ** 2))
    assert size.n == max(size.n_to_kill, size.n_to_continue)
    # no event at all in n_to_kill trials: Wilson's upper bound is just below 0.05
    assert wilson_ci(0, size.n_to_kill).ci_high < 0.05 <= wilson_ci(0, size.n_to_kill - 2).ci_high
    general = proportion_sample_size(0.3, null_value=0.1)
    expected = ((Z * np.sqrt(0.09) + Z_POWER * np.sqrt(0.21)) / 0.2) ** 2
    assert general.n_to_continue == int(np.ceil(expected))


def test_scale_to_decide() -> None:
    # estimate above the useful value: the interval must clear the null
    k = scale_to_decide(0.65, 0.1, null_value=0.5, smallest_useful=0.6)
    assert k == pytest.approx(((Z + Z_POWER) * 0.1 / 0.15) ** 2)
    # an interval that already decides needs no more rows
    assert scale_to_decide(0.65, 0.01, null_value=0.5, smallest_useful=0.6) == 1.0
    # estimate below it: the interval must fall below the useful value
    k = scale_to_decide(0.55, 0.05, null_value=0.5, smallest_useful=0.6)
    assert k == pytest.approx(((Z + Z_POWER) * 0.05 / 0.05) ** 2)
    assert scale_to_decide(0.55, 0.0, null_value=0.5, smallest_useful=0.6) is None


def test_power_table_reads_p2_p3_effects_when_registered() -> None:
    prereg = load_preregistration()
    rows = power_table(prereg)
    assert [r.experiment for r in rows] == ["p1", "p2", "p3"]
    p1 = rows[0]
    assert p1.size is not None and p1.size.n == auc_sample_size(prereg.p1.smallest_useful_auc).n
    # the effects are required keys: a file without one is refused, not shown "not registered"
    data = tomllib.loads(Path(prereg.path).read_text("utf-8"))
    del data["p3"]["smallest_useful_fraction"]
    with pytest.raises(InvalidPreregistration, match="missing key 'smallest_useful_fraction'"):
        parse_preregistration(data, source="x.toml", sha256="0" * 64)
    other = dataclasses.replace(
        prereg,
        p2=dataclasses.replace(prereg.p2, smallest_useful_share=0.05, confidence_level=0.95),
        p3=dataclasses.replace(prereg.p3, smallest_useful_fraction=0.2, confidence_level=0.9),
    )
    p2, p3 = power_table(other)[1:]
    power = prereg.p1.power
    assert p2.size == proportion_sample_size(0.05, power=power) and "from [p1]" in p2.note
    assert p3.size == proportion_sample_size(0.2, confidence_level=0.9, power=power)


def test_reflect_prereg_power_prints_the_table(tmp_path: Path) -> None:
    # through the root group, as a user runs it (invoking the bare command would cache a help
    # option without the root's -h, and docs/cli.md renders the command with it)
    result = CliRunner().invoke(cli, ["prereg", "power"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    p1 = next(line for line in lines if line.startswith("p1 "))
    n = auc_sample_size(load_preregistration().p1.smallest_useful_auc).n
    assert f" {n} " in p1 and "rows per class" in p1
    bad = tmp_path / "bad.toml"
    bad.write_text("version = 2\n")
    failed = CliRunner().invoke(cli, ["prereg", "power", "--prereg", str(bad)])
    assert failed.exit_code != 0 and "version must be 1" in str(failed.exception)


def test_decision_power_at_the_design_half_width_is_the_registered_power() -> None:
    half = design_half_width(0.55, confidence_level=0.95, power=0.8)
    assert half == pytest.approx(Z * 0.05 / (Z + Z_POWER))
    se = half / Z
    at_useful = decision_power(0.55, se, null_value=0.5, smallest_useful=0.55)
    at_null = decision_power(0.5, se, null_value=0.5, smallest_useful=0.55)
    assert at_useful.p_continue == pytest.approx(0.8) and at_null.p_kill == pytest.approx(0.8)
    assert at_null.p_continue == pytest.approx(0.025) and at_useful.p_kill == pytest.approx(0.025)
    # a continue that also needs the estimate to reach 0.55: half the samples, at any precision
    for scale in (1.0, 0.5, 0.1):
        estimate = decision_power(
            0.55, se * scale, null_value=0.5, smallest_useful=0.55, continue_when="estimate"
        )
        assert estimate.p_continue == pytest.approx(0.5)
    # more precision, more power: at twice it, continue takes all but the 2.5% of samples whose
    # upper bound falls below 0.55 when 0.55 is the truth
    sharper = decision_power(0.55, se / 2, null_value=0.5, smallest_useful=0.55)
    assert sharper.p_continue == pytest.approx(0.975) and sharper.p_undecided < 1e-6


def test_reflect_prereg_power_prints_each_p1_decisions_power() -> None:
    result = CliRunner().invoke(cli, ["prereg", "power"])
    assert result.exit_code == 0, result.output
    text = result.output
    p1 = load_preregistration().p1
    assert f"registered max_ci_half_width {p1.max_ci_half_width:g}" in text
    line = next(x for x in text.splitlines() if x.strip().startswith("continue ("))
    assert "80.0% at a true AUC of 0.55" in line and "2.5% at 0.5" in line
    line = next(x for x in text.splitlines() if x.strip().startswith("kill ("))
    assert "80.0% at a true AUC of 0.5" in line
    assert '("estimate" rule): 50.0% at 0.55, at any precision' in text
