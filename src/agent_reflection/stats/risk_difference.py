"""The Mantel-Haenszel risk difference over strata: two groups' event rates compared within
each stratum (e.g. change kind x month), weighted by ``n_a n_b / (n_a + n_b)``, with the
Greenland-Robins (1985) variance (the large-strata one: each stratum's difference variance,
weighted). Strata that hold only one group say nothing about the difference and are left out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from agent_reflection.stats._common import two_sided_z
from agent_reflection.stats.interval import Interval


@dataclass(frozen=True)
class StratifiedDifference(Interval):
    """``value``: the weighted difference (a - b); the strata that held both groups."""

    strata_used: int
    n_a: int
    n_b: int


def mantel_haenszel_difference(
    strata: Sequence[tuple[int, int, int, int]], confidence_level: float = 0.95
) -> StratifiedDifference | None:
    """``strata``: (events a, trials a, events b, trials b) per stratum; None when no stratum
    holds both groups."""
    used = [(ea, na, eb, nb) for ea, na, eb, nb in strata if na > 0 and nb > 0]
    if not used:
        return None
    weights = [na * nb / (na + nb) for _, na, _, nb in used]
    total = sum(weights)
    diffs = [ea / na - eb / nb for ea, na, eb, nb in used]
    value = sum(w * d for w, d in zip(weights, diffs, strict=True)) / total
    variance = sum(
        w * w * ((ea / na) * (1 - ea / na) / na + (eb / nb) * (1 - eb / nb) / nb)
        for w, (ea, na, eb, nb) in zip(weights, used, strict=True)
    ) / (total * total)
    half = two_sided_z(confidence_level) * math.sqrt(variance)
    return StratifiedDifference(
        value=value,
        ci_low=max(-1.0, value - half),
        ci_high=min(1.0, value + half),
        strata_used=len(used),
        n_a=sum(na for _, na, _, _ in used),
        n_b=sum(nb for _, _, _, nb in used),
    )
