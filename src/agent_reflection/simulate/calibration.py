"""Seeded calibration scenarios for P1: strata with a known AUC, base rate and mean confidence.

Within a stratum, a correct answer's latent score is N(d, 1) and a wrong one's N(0, 1) with
``d = sqrt(2) * Phi^-1(auc)``, so the stratum's population AUC is ``auc`` exactly (binormal,
equal variances). Confidence is a monotone map of the latent score into the self-rated-high
range, ``low + (1 - low) * Phi(x - d / 2 + shift)``, which keeps every within-stratum AUC and
lets ``shift`` move the stratum's mean confidence. Strata that differ in ``base_rate`` and
``shift`` reproduce the pooling paradox: each discriminates, the pooled AUC does not.

Clusters: ``questions`` question ids shared by all strata; each row draws one at random (a
question answered by several models). With ``question_effect`` = rho > 0 a row's latent score
is ``d * correct + sqrt(rho) * u_q + sqrt(1 - rho) * e`` (``u_q`` one draw per question): rows
of a question are correlated, yet each class's score is still N(d * correct, 1), so every
stratum's AUC is unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import norm


@dataclass(frozen=True)
class StratumSpec:
    """One stratum of a scenario: rows, population AUC, share correct, confidence shift."""

    name: str
    n: int
    auc: float
    base_rate: float
    shift: float = 0.0


def stratified_truth(strata: Sequence[StratumSpec]) -> float:
    """The population stratified AUC: per-stratum AUCs weighted by expected pairs."""
    pairs = [s.n * s.base_rate * s.n * (1 - s.base_rate) for s in strata]
    return sum(p * s.auc for p, s in zip(pairs, strata, strict=True)) / sum(pairs)


def simulate_calibration(
    strata: Sequence[StratumSpec],
    *,
    seed: int,
    questions: int | None = None,
    question_effect: float = 0.0,
    low: float = 0.8,
) -> pd.DataFrame:
    """Rows ``{confidence, correct, model, question_id}`` for the given strata (seeded)."""
    if not strata:
        raise ValueError("a scenario needs at least one stratum")
    if not 0 <= question_effect < 1:
        raise ValueError(f"question_effect must be in [0, 1), got {question_effect}")
    rng = np.random.default_rng(seed)
    total = sum(s.n for s in strata)
    q = questions if questions is not None else total
    if q < 1:
        raise ValueError(f"questions must be >= 1, got {q}")
    effect = rng.normal(size=q)
    question = rng.integers(0, q, size=total)
    frames = []
    start = 0
    for spec in strata:
        if not 0 < spec.auc < 1 or not 0 <= spec.base_rate <= 1 or spec.n < 0:
            raise ValueError(f"stratum {spec.name}: auc in (0, 1), base_rate in [0, 1], n >= 0")
        d = float(np.sqrt(2) * norm.ppf(spec.auc))
        correct = rng.random(spec.n) < spec.base_rate
        own = question[start : start + spec.n]
        start += spec.n
        noise = np.sqrt(question_effect) * effect[own]
        noise += np.sqrt(1 - question_effect) * rng.normal(size=spec.n)
        x = noise + d * correct
        confidence = low + (1 - low) * norm.cdf(x - d / 2 + spec.shift)
        frames.append(
            pd.DataFrame({"confidence": confidence, "correct": correct, "model": spec.name})
        )
    df = pd.concat(frames, ignore_index=True)
    df["question_id"] = [f"q{i}" for i in question]
    return df


def pooling_paradox(n_per_stratum: int = 2000, auc: float = 0.65) -> tuple[StratumSpec, ...]:
    """Two strata with the same AUC: one often right and modest, one rarely right and sure."""
    return (
        StratumSpec("modest", n_per_stratum, auc, base_rate=0.6, shift=-1.5),
        StratumSpec("overconfident", n_per_stratum, auc, base_rate=0.1, shift=1.5),
    )
