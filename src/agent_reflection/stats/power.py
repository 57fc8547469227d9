"""Sample sizes at a given power, derived from a pre-registered smallest useful effect.

Both decisions of :func:`agent_reflection.experiments.verdict.decide` need power:

- *continue* needs the interval's lower bound above the null value when the truth is the
  smallest useful effect;
- *kill* needs the interval's upper bound below the smallest useful effect when the truth is
  the null value.

The minimum sample is the larger of the two sample sizes, each at the registered power.

AUC: Hanley & McNeil's (1982) variance of the AUC with its exponential approximations
``Q1 = A / (2 - A)`` and ``Q2 = 2 A^2 / (1 + A)`` (the form Obuchowski uses for sample-size
planning), evaluated at the finite sample size, equal numbers per class.

Proportions: the score (Wilson) test, whose variance is taken at the hypothesised value:
``n = ((z_a sqrt(p0 q0) + z_b sqrt(p1 q1)) / (p1 - p0))^2``.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist

from agent_reflection.stats._common import two_sided_z

#: The largest sample size searched for (per class for an AUC); beyond it "not reachable".
MAX_SAMPLE = 10_000_000


@dataclass(frozen=True)
class SampleSize:
    """Sample sizes for both decisions; ``n`` is the one a verdict needs (the larger)."""

    n: int
    n_to_continue: int
    n_to_kill: int
    smallest_useful: float
    null_value: float
    confidence_level: float
    power: float
    method: str


def _z(confidence_level: float, power: float) -> tuple[float, float]:
    if not 0 < power < 1:
        raise ValueError(f"power must be in (0, 1), got {power}")
    return two_sided_z(confidence_level), NormalDist().inv_cdf(power)


def hanley_mcneil_variance(auc: float, n_pos: float, n_neg: float) -> float:
    """Hanley & McNeil's variance of an AUC estimated from ``n_pos`` and ``n_neg`` rows."""
    if not 0 <= auc <= 1:
        raise ValueError(f"auc must be in [0, 1], got {auc}")
    if n_pos < 1 or n_neg < 1:
        raise ValueError(f"each class needs at least one row, got {n_pos} and {n_neg}")
    q1 = auc / (2 - auc)
    q2 = 2 * auc * auc / (1 + auc)
    a2 = auc * auc
    return (auc * (1 - auc) + (n_pos - 1) * (q1 - a2) + (n_neg - 1) * (q2 - a2)) / (n_pos * n_neg)


def _smallest_n(ok: Callable[[int], bool]) -> int:
    """Smallest n in [2, MAX_SAMPLE] with ``ok(n)`` true (``ok`` is monotone in n); MAX_SAMPLE
    when none is."""
    return min(MAX_SAMPLE, 2 + bisect.bisect_left(range(2, MAX_SAMPLE + 1), True, key=ok))


def auc_sample_size(
    smallest_useful: float,
    *,
    confidence_level: float = 0.95,
    power: float = 0.8,
    null_value: float = 0.5,
) -> SampleSize:
    """Rows *per class* so that each decision has ``power`` at its truth.

    Continue: truth = ``smallest_useful``, the two-sided interval's lower bound clears
    ``null_value``. Kill: truth = ``null_value``, the upper bound falls below
    ``smallest_useful``. Hanley-McNeil variances at the finite n, equal classes.
    """
    if not null_value < smallest_useful < 1:
        raise ValueError(
            f"smallest useful AUC must lie in ({null_value}, 1), got {smallest_useful}"
        )
    z_a, z_b = _z(confidence_level, power)
    gap = smallest_useful - null_value

    def sd(auc: float, n: int) -> float:
        return math.sqrt(hanley_mcneil_variance(auc, n, n))

    def cont(n: int) -> bool:
        return z_a * sd(null_value, n) + z_b * sd(smallest_useful, n) <= gap

    def kill(n: int) -> bool:
        return z_a * sd(smallest_useful, n) + z_b * sd(null_value, n) <= gap

    n_c, n_k = _smallest_n(cont), _smallest_n(kill)
    return SampleSize(
        max(n_c, n_k),
        n_c,
        n_k,
        smallest_useful,
        null_value,
        confidence_level,
        power,
        "Hanley-McNeil variance, rows per class",
    )


def proportion_sample_size(
    smallest_useful: float,
    *,
    confidence_level: float = 0.95,
    power: float = 0.8,
    null_value: float = 0.0,
) -> SampleSize:
    """Trials so that each decision about a proportion has ``power`` (score/Wilson test)."""
    if not 0 <= null_value < smallest_useful <= 1:
        raise ValueError(
            f"smallest useful proportion must lie in ({null_value}, 1], got {smallest_useful}"
        )
    z_a, z_b = _z(confidence_level, power)
    p0, p1 = null_value, smallest_useful
    s0, s1 = math.sqrt(p0 * (1 - p0)), math.sqrt(p1 * (1 - p1))
    gap = p1 - p0
    n_c = max(1, math.ceil(((z_a * s0 + z_b * s1) / gap) ** 2))
    n_k = max(1, math.ceil(((z_a * s1 + z_b * s0) / gap) ** 2))
    return SampleSize(
        max(n_c, n_k),
        n_c,
        n_k,
        smallest_useful,
        null_value,
        confidence_level,
        power,
        "score (Wilson) test, trials",
    )


def scale_to_decide(
    estimate: float,
    se: float,
    *,
    null_value: float,
    smallest_useful: float,
    confidence_level: float = 0.95,
    power: float = 0.8,
) -> float | None:
    """How many times the current sample an undecided interval needs, if the truth is the
    current estimate: the standard error shrinks as 1/sqrt(sample), and the interval must
    then clear the null (estimate >= smallest useful) or fall below the smallest useful
    effect (estimate below it) with ``power``. None when no finite sample decides it (the
    estimate sits exactly on the smallest useful effect) or the SE is zero.
    """
    z_a, z_b = _z(confidence_level, power)
    distance = estimate - null_value if estimate >= smallest_useful else smallest_useful - estimate
    if distance <= 0 or se <= 0:
        return None
    return max(1.0, ((z_a + z_b) * se / distance) ** 2)


def design_half_width(
    smallest_useful: float,
    *,
    confidence_level: float = 0.95,
    power: float = 0.8,
    null_value: float = 0.5,
) -> float:
    """The interval half-width at which each decision has ``power`` (normal interval, the same
    standard error at both truths): ``z_a * (smallest_useful - null_value) / (z_a + z_b)``.

    At this half-width the lower bound clears ``null_value`` with ``power`` when the truth is
    ``smallest_useful``, and the upper bound falls below ``smallest_useful`` with ``power``
    when the truth is ``null_value``.
    """
    if not null_value < smallest_useful:
        raise ValueError(f"smallest useful {smallest_useful} must exceed the null {null_value}")
    z_a, z_b = _z(confidence_level, power)
    return z_a * (smallest_useful - null_value) / (z_a + z_b)


@dataclass(frozen=True)
class DecisionPower:
    """How often each decision happens when ``truth`` is the effect and the estimate is normal
    with standard error ``se`` (the interval: estimate +- z * se)."""

    truth: float
    se: float
    half_width: float
    p_continue: float
    p_kill: float
    p_undecided: float


def decision_power(
    truth: float,
    se: float,
    *,
    null_value: float,
    smallest_useful: float,
    confidence_level: float = 0.95,
    continue_when: str = "interval",
) -> DecisionPower:
    """The three decisions' probabilities at ``truth`` (normal approximation).

    Kill: upper bound below ``smallest_useful``. Continue: lower bound above ``null_value`` and
    not a kill, and for ``continue_when="estimate"`` also the estimate at least
    ``smallest_useful`` (experiments/verdict.py ``decide``).
    """
    if se <= 0:
        raise ValueError(f"se must be positive, got {se}")
    z = two_sided_z(confidence_level)
    half = z * se
    normal = NormalDist(truth, se)
    p_kill = normal.cdf(smallest_useful - half)
    floor = max(null_value + half, smallest_useful - half)
    if continue_when == "estimate":
        floor = max(floor, smallest_useful)
    elif continue_when != "interval":
        raise ValueError(f"continue_when must be 'interval' or 'estimate', got {continue_when!r}")
    p_continue = 1 - normal.cdf(floor)
    return DecisionPower(truth, se, half, p_continue, p_kill, max(0.0, 1 - p_continue - p_kill))


def detectable_difference(
    base_rate: float,
    n_a: int,
    n_b: int,
    *,
    confidence_level: float = 0.95,
    power: float = 0.8,
) -> float | None:
    """The smallest rise ``d`` over ``base_rate`` that a two-sided two-proportion z test of
    ``n_a`` against ``n_b`` trials detects with ``power`` (group a at ``base_rate + d``, b at
    ``base_rate``; normal approximation, Fleiss' formula): a difference smaller than this would
    usually go unseen, so "no difference shown" says little below it. None when even
    ``1 - base_rate`` is not detectable, or a group is empty."""
    if n_a < 1 or n_b < 1:
        return None
    if not 0 <= base_rate < 1:
        raise ValueError(f"base_rate must be in [0, 1), got {base_rate}")
    z_a, z_b = _z(confidence_level, power)

    def detected(d: float) -> bool:
        p1, p0 = base_rate + d, base_rate
        pooled = (n_a * p1 + n_b * p0) / (n_a + n_b)
        null_sd = math.sqrt(pooled * (1 - pooled) * (1 / n_a + 1 / n_b))
        alt_sd = math.sqrt(p1 * (1 - p1) / n_a + p0 * (1 - p0) / n_b)
        return d >= z_a * null_sd + z_b * alt_sd

    high = 1 - base_rate
    if not detected(high):
        return None
    low = 0.0
    for _ in range(60):  # bisection to well below a thousandth
        mid = (low + high) / 2
        low, high = (low, mid) if detected(mid) else (mid, high)
    return high
