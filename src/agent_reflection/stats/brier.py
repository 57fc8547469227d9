"""Brier score: mean squared difference between confidence and the 0/1 outcome."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from agent_reflection.stats._common import UndefinedStatistic, as_scores_labels


def brier_score(
    confidence: Sequence[float] | npt.ArrayLike, correct: Sequence[bool] | npt.ArrayLike
) -> float:
    """Equals ``sklearn.metrics.brier_score_loss(correct, confidence)``."""
    c, y = as_scores_labels(confidence, correct)
    if c.size == 0:
        raise UndefinedStatistic("the Brier score needs at least one row")
    return float(np.mean((c - y.astype(np.float64)) ** 2))
