"""The three-way decision: a point estimate never kills; the interval decides."""

from __future__ import annotations

import pytest

from agent_reflection.experiments.verdict import CONTINUE, INCONCLUSIVE, KILL, decide
from agent_reflection.stats.interval import Interval


@pytest.mark.parametrize(
    ("estimate", "low", "high", "expected"),
    [
        (0.70, 0.62, 0.78, CONTINUE),  # chance ruled out, useful estimate
        (0.53, 0.51, 0.545, KILL),  # above chance, but a useful AUC is ruled out
        (0.52, 0.40, 0.64, INCONCLUSIVE),  # wide: neither ruled in nor out
        (0.57, 0.52, 0.62, INCONCLUSIVE),  # above chance, estimate below the useful AUC
        (0.45, 0.40, 0.50, KILL),  # below chance
        (0.60, 0.50, 0.70, INCONCLUSIVE),  # lower bound exactly at chance is not above it
    ],
)
def test_auc_decisions(estimate: float, low: float, high: float, expected: str) -> None:
    d = decide(Interval(estimate, low, high), null_value=0.5, smallest_useful=0.6, what="AUC")
    assert d.verdict == expected
    assert f"{estimate:.3f}" in d.reason


def test_estimate_outside_its_interval_is_an_error() -> None:
    with pytest.raises(ValueError, match="outside its interval"):
        decide(Interval(0.9, 0.5, 0.6), null_value=0.5, smallest_useful=0.6)


def test_smallest_useful_below_null_is_an_error() -> None:
    with pytest.raises(ValueError, match="below the null value"):
        decide(Interval(0.6, 0.5, 0.7), null_value=0.5, smallest_useful=0.4)
