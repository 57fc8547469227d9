"""Lift in the top confidence fraction (default: decile).

The top ``k = ceil(fraction * n)`` rows by confidence; rows tied at the cut-off enter
pro rata, so the result does not depend on row order. Lift = accuracy in the top / overall.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from agent_reflection.stats._common import UndefinedStatistic, as_scores_labels


@dataclass(frozen=True)
class LiftResult:
    fraction: float
    k: int
    top_accuracy: float
    base_rate: float
    lift: float
    cutoff: float


def top_fraction_lift(
    confidence: Sequence[float] | npt.ArrayLike,
    correct: Sequence[bool] | npt.ArrayLike,
    fraction: float = 0.1,
) -> LiftResult:
    c, y = as_scores_labels(confidence, correct)
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    n = c.size
    base = float(y.mean()) if n else 0.0
    if n == 0 or base == 0:
        raise UndefinedStatistic("lift is undefined without any correct row")
    k = max(1, math.ceil(fraction * n))
    cutoff = float(np.sort(c)[::-1][k - 1])
    above = c > cutoff
    tied = c == cutoff
    need = k - int(above.sum())
    expected = float(y[above].sum()) + need * float(y[tied].mean())
    top = expected / k
    return LiftResult(fraction, k, top, base, top / base, cutoff)
