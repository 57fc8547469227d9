"""Wilson score interval for a binomial proportion (no continuity correction).

Equals ``scipy.stats.binomtest(k, n).proportion_ci(confidence_level, method="wilson")``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from agent_reflection.stats._common import UndefinedStatistic, two_sided_z
from agent_reflection.stats.interval import Interval


@dataclass(frozen=True)
class WilsonResult(Interval):
    """The proportion ``successes / n`` (``value``) and its Wilson interval."""

    successes: int
    n: int
    confidence_level: float

    @property
    def proportion(self) -> float:
        return self.value


def wilson_ci(successes: int, n: int, confidence_level: float = 0.95) -> WilsonResult:
    """Proportion ``successes / n`` and its two-sided Wilson score interval."""
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in [0, n={n}], got {successes}")
    p = successes / n if n > 0 else 0.0
    interval = wilson_interval(p, n, confidence_level)
    return WilsonResult(
        value=p,
        ci_low=interval.ci_low,
        ci_high=interval.ci_high,
        successes=successes,
        n=n,
        confidence_level=confidence_level,
    )


def wilson_interval(proportion: float, n: float, confidence_level: float = 0.95) -> Interval:
    """The Wilson score interval of ``proportion`` over ``n`` trials. ``n`` may be fractional
    (a precision-corrected count). The ends are clipped to [0, 1] and never exclude the
    proportion itself: at 0 or n successes floating point would leave about 1e-17 there, which
    reads as a bound strictly above 0 (or below 1)."""
    if n <= 0:
        raise UndefinedStatistic("a proportion needs at least one trial (n = 0)")
    z = two_sided_z(confidence_level)
    z2 = z * z
    denom = 1 + z2 / n
    center = (proportion + z2 / (2 * n)) / denom
    half = z * math.sqrt(proportion * (1 - proportion) / n + z2 / (4 * n * n)) / denom
    low = min(proportion, max(0.0, center - half))
    high = max(proportion, min(1.0, center + half))
    return Interval(proportion, low, high)
