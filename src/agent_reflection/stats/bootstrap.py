"""Seeded BCa bootstrap CI of the AUC (SciPy's ``scipy.stats.bootstrap``)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from agent_reflection.stats._common import UndefinedStatistic, as_scores_labels, class_counts
from agent_reflection.stats.auc import roc_auc
from agent_reflection.stats.interval import Interval


@dataclass(frozen=True)
class BootstrapResult(Interval):
    """The AUC (``value``) with its bootstrap interval."""

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


#: Count-table cells per batch of rows in :func:`_auc_rows` (bounds its memory: 2 x 32 MiB).
_CELLS_PER_BATCH = 4_000_000


def _auc_rows(
    keys: npt.NDArray[np.float64], y: npt.NDArray[np.float64], axis: int = -1
) -> npt.NDArray[np.float64]:
    """AUC of every resample at once; NaN where a resample lost a class.

    ``keys`` are the scores' dense ranks (0, 1, ... in score order; the AUC only depends on
    the order). Per row, positives and negatives are counted per key, and each positive wins
    over the negatives with a smaller key and half of those with the same key (Mann-Whitney,
    ties one half): O(n + distinct scores) a row, no sort. SciPy passes all resamples, and the
    jackknife's leave-one-out rows, as one array: no Python call per resample.
    """
    keys, y = np.moveaxis(keys, axis, -1), np.moveaxis(y, axis, -1)
    shape, n = keys.shape[:-1], keys.shape[-1]
    k = keys.reshape(-1, n).astype(np.int64)
    positive = y.reshape(-1, n) > 0.5
    rows = k.shape[0]
    width = int(k.max()) + 1 if k.size else 1
    out = np.empty(rows)
    step = max(1, _CELLS_PER_BATCH // width)
    for start in range(0, rows, step):
        kk, pp = k[start : start + step], positive[start : start + step]
        r = kk.shape[0]
        cells = kk + (np.arange(r) * width)[:, None]
        pos = np.bincount(cells[pp], minlength=r * width).reshape(r, width)
        neg = np.bincount(cells[~pp], minlength=r * width).reshape(r, width)
        below = np.cumsum(neg, axis=1) - neg  # negatives with a smaller key
        wins = (pos * (below + 0.5 * neg)).sum(axis=1)
        n1, n0 = pos.sum(axis=1), neg.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            out[start : start + r] = np.where((n1 > 0) & (n0 > 0), wins / (n1 * n0), np.nan)
    return out.reshape(shape)


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
        keys = np.unique(s, return_inverse=True)[1].astype(np.float64)  # dense ranks
        res = bootstrap(
            (keys, y.astype(np.float64)),
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
    return BootstrapResult(
        value=roc_auc(s, y),
        ci_low=low,
        ci_high=high,
        confidence_level=confidence_level,
        method=method,
        n_resamples=n_resamples,
        seed=seed,
    )
