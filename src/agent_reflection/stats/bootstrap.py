"""Seeded BCa bootstrap CI of the AUC (SciPy's ``scipy.stats.bootstrap``)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from agent_reflection.stats._common import UndefinedStatistic, as_scores_labels, class_counts
from agent_reflection.stats.auc import roc_auc


@dataclass(frozen=True)
class BootstrapResult:
    estimate: float
    ci_low: float
    ci_high: float
    confidence_level: float
    method: str
    n_resamples: int
    seed: int


def _auc_or_nan(s: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> float:
    """One resample's AUC (the reference the vectorised form is tested against)."""
    try:
        return roc_auc(s, y.astype(bool))
    except UndefinedStatistic:
        return float("nan")


def _auc_rows(
    s: npt.NDArray[np.float64], y: npt.NDArray[np.float64], axis: int = -1
) -> npt.NDArray[np.float64]:
    """AUC of every resample at once (Mann-Whitney on average ranks: ties count one half);
    NaN where a resample lost a class. SciPy passes all resamples, and the jackknife's
    leave-one-out rows, as one array: no Python call per resample."""
    from scipy.stats import rankdata

    s, y = np.moveaxis(s, axis, -1), np.moveaxis(y, axis, -1)
    ranks = rankdata(s, axis=-1)
    positives = y.sum(axis=-1)
    negatives = y.shape[-1] - positives
    rank_sum = (ranks * y).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        auc = (rank_sum - positives * (positives + 1) / 2) / (positives * negatives)
    return np.where((positives > 0) & (negatives > 0), auc, np.nan)


def bootstrap_auc_ci(
    scores: Sequence[float] | npt.ArrayLike,
    labels: Sequence[bool] | npt.ArrayLike,
    *,
    confidence_level: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
    method: str = "BCa",
) -> BootstrapResult:
    """Paired bootstrap of (score, label) rows; the same seed gives the same interval.

    Resamples that lose a class give NaN; if SciPy then cannot form the interval, it is
    reported as undefined (:class:`UndefinedStatistic`).
    """
    s, y = as_scores_labels(scores, labels)
    m, n = class_counts(y)
    if m < 2 or n < 2:
        raise UndefinedStatistic("a bootstrap CI of the AUC needs at least two of each class")
    from scipy.stats import bootstrap  # heavy import: only when a bootstrap is asked for

    with warnings.catch_warnings():
        # degenerate data (e.g. constant scores) gives NaN bounds, reported below
        warnings.simplefilter("ignore")
        res = bootstrap(
            (s, y.astype(np.float64)),
            _auc_rows,
            paired=True,
            vectorized=True,
            n_resamples=n_resamples,
            confidence_level=confidence_level,
            method=method,
            random_state=np.random.default_rng(seed),
        )
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if not (np.isfinite(low) and np.isfinite(high)):
        raise UndefinedStatistic("the bootstrap interval is undefined on this data")
    return BootstrapResult(roc_auc(s, y), low, high, confidence_level, method, n_resamples, seed)
