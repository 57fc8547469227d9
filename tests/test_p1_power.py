"""P1's decision power, checked by simulation against what ``reflect prereg power`` prints.

The registered rule (experiments/p1/analysis.py ``judge``: continue when the lower bound clears
0.5 and the interval still allows the smallest useful AUC; kill when the upper bound is below
it; a wide undecided interval is insufficient-data) is applied to the DeLong interval of
binormal samples whose half-width is about the registered precision target (rows per class from
Hanley-McNeil, equal classes, independent rows). DeLong, not the registered cluster bootstrap,
to keep 3,000 intervals in seconds: without clusters the two agree at this size
(preregistration.toml, bootstrap_budget).
"""

from __future__ import annotations

from dataclasses import replace
from statistics import NormalDist

import numpy as np
import pytest

from agent_reflection.experiments.p1.analysis import judge, operating_characteristics
from agent_reflection.experiments.registration import load_preregistration
from agent_reflection.stats.delong import delong_ci

RUNS = 1000


def _verdicts(truth: float, rule: str, seed: int) -> dict[str, int]:
    registered = load_preregistration().p1
    p1 = replace(registered, continue_rule=rule)
    n = operating_characteristics(registered).rows_per_class
    shift = np.sqrt(2) * NormalDist().inv_cdf(truth)  # binormal: AUC = Phi(shift / sqrt 2)
    y = np.r_[np.ones(n, bool), np.zeros(n, bool)]
    rng = np.random.default_rng(seed)
    counts: dict[str, int] = {}
    for _ in range(RUNS):
        scores = rng.normal(size=2 * n) + shift * y
        d = delong_ci(scores, y, p1.confidence_level)
        verdict, _ = judge(d, n, n, p1, "AUC")
        counts[verdict] = counts.get(verdict, 0) + 1
    return counts


@pytest.mark.slow
def test_each_decision_has_the_printed_power_in_simulation() -> None:
    p1 = load_preregistration().p1
    oc = operating_characteristics(p1)
    # 1,000 runs: a share's SE is at most 0.016, so 0.05 is three of them
    tolerance = 0.05
    at_useful = _verdicts(p1.smallest_useful_auc, "interval", seed=1)
    at_null = _verdicts(0.5, "interval", seed=2)
    assert at_useful.get("continue", 0) / RUNS == pytest.approx(
        oc.at_useful.p_continue, abs=tolerance
    ), at_useful
    assert at_null.get("kill", 0) / RUNS == pytest.approx(oc.at_null.p_kill, abs=tolerance)
    # the wrong decision stays rare at either truth
    assert at_null.get("continue", 0) / RUNS <= 0.05, at_null
    assert at_useful.get("kill", 0) / RUNS <= 0.05, at_useful
    # the former rule (continue also needs the estimate >= 0.55): about half, as printed
    estimate = _verdicts(p1.smallest_useful_auc, "estimate", seed=1)
    assert oc.estimate_rule_at_useful.p_continue == pytest.approx(0.5)
    assert estimate.get("continue", 0) / RUNS == pytest.approx(0.5, abs=tolerance), estimate
