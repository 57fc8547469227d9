"""Reliability bins and expected calibration error on pre-registered bin edges.

A confidence falls in bin ``i`` when ``edges[i] <= c < edges[i+1]``; the last bin also holds
``c == edges[-1]``. ECE = sum over bins of (count / N) * |accuracy - mean confidence|.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from agent_reflection.stats._common import UndefinedStatistic, as_scores_labels


@dataclass(frozen=True)
class ReliabilityBin:
    low: float
    high: float
    count: int
    mean_confidence: float | None
    accuracy: float | None


@dataclass(frozen=True)
class Reliability:
    bins: tuple[ReliabilityBin, ...]
    ece: float
    n: int
    out_of_range: int


def check_edges(edges: Sequence[float]) -> tuple[float, ...]:
    values = tuple(float(e) for e in edges)
    if len(values) < 2 or any(b <= a for a, b in itertools.pairwise(values)):
        raise ValueError(f"bin edges must be at least two strictly increasing numbers: {values}")
    return values


def reliability(
    confidence: Sequence[float] | npt.ArrayLike,
    correct: Sequence[bool] | npt.ArrayLike,
    edges: Sequence[float],
) -> Reliability:
    """Per-bin counts, mean confidence and accuracy, and the ECE over in-range rows."""
    c, y = as_scores_labels(confidence, correct)
    e = check_edges(edges)
    idx = np.searchsorted(np.asarray(e), c, side="right") - 1
    idx[c == e[-1]] = len(e) - 2
    inside = (idx >= 0) & (idx < len(e) - 1)
    n = int(inside.sum())
    if n == 0:
        raise UndefinedStatistic("no confidence falls inside the pre-registered bins")
    bins: list[ReliabilityBin] = []
    ece = 0.0
    for i in range(len(e) - 1):
        mask = inside & (idx == i)
        count = int(mask.sum())
        if count:
            conf = float(c[mask].mean())
            acc = float(y[mask].mean())
            ece += count / n * abs(acc - conf)
            bins.append(ReliabilityBin(e[i], e[i + 1], count, conf, acc))
        else:
            bins.append(ReliabilityBin(e[i], e[i + 1], 0, None, None))
    return Reliability(tuple(bins), ece, n, int(c.size - n))
