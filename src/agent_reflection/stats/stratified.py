"""Stratified ROC AUC: per-stratum AUCs weighted by their positive x negative pairs.

Pooling rows from strata (e.g. models) with different base rates or mean confidence ranks
rows *across* strata, so between-stratum differences can drag the pooled AUC towards (or
past) 0.5 while every stratum discriminates (Simpson's paradox). The stratified AUC only
compares a positive with a negative of the same stratum:

    AUC_strat = sum_s P_s AUC_s / sum_s P_s,  P_s = n_pos_s * n_neg_s

Strata with a single class have no pairs: they are listed and dropped.

Its variance (:func:`stratified_auc`) comes from DeLong's structural components (per row, in
the rows' order: :func:`~agent_reflection.stats.auc.row_components`), summed per
*cluster* before squaring (Obuchowski's clustered AUC variance): rows sharing a cluster (one
question answered by several models) are not independent, and treating them as such
understates the variance. The influence of a positive row of stratum s is
``n_neg_s (V10 - AUC_s) / P``, of a negative ``n_pos_s (V01 - AUC_s) / P``, with
``P = sum_s P_s``; the variance is ``C / (C - 1) * sum_c (sum of influences in c)^2``.

Heterogeneity (:func:`heterogeneity`): Cochran's Q of the per-stratum AUCs around their
inverse-variance weighted mean, with I^2 = max(0, (Q - df) / Q).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from agent_reflection.stats._common import (
    UndefinedStatistic,
    as_scores_labels,
    normal_interval,
    two_sided_z,
)
from agent_reflection.stats.auc import row_components
from agent_reflection.stats.delong import delong_variance
from agent_reflection.stats.interval import Interval

IntArray = npt.NDArray[np.int64]
#: The stratum of rows with no stratum value.
MISSING_STRATUM = "(missing)"


@dataclass(frozen=True)
class StratumAUC:
    """One stratum: counts, base rate, mean score, AUC with its DeLong CI (None: the stratum
    has one class), share of pairs."""

    stratum: str
    n: int
    n_pos: int
    n_neg: int
    accuracy: float
    mean_score: float
    auc: Interval | None
    se: float | None
    pair_weight: float

    def to_dict(self) -> dict[str, Any]:
        """The stratum as one flat row (results.json's ``details.strata``)."""
        auc = self.auc
        return {
            "stratum": self.stratum,
            "n": self.n,
            "n_pos": self.n_pos,
            "n_neg": self.n_neg,
            "accuracy": self.accuracy,
            "mean_score": self.mean_score,
            "auc": None if auc is None else auc.value,
            "se": self.se,
            "ci_low": None if auc is None else auc.ci_low,
            "ci_high": None if auc is None else auc.ci_high,
            "pair_weight": self.pair_weight,
        }


@dataclass(frozen=True)
class StratifiedAUC(Interval):
    """The stratified AUC (``value``) with its cluster-robust normal interval."""

    se: float
    #: the same variance with every row its own cluster (to show the design effect)
    se_rows_independent: float
    confidence_level: float
    n_pos: int
    n_neg: int
    n_clusters: int
    strata: tuple[StratumAUC, ...]
    #: strata with one class only (no pairs): listed, not used
    dropped: tuple[str, ...]


@dataclass(frozen=True)
class Heterogeneity:
    """Cochran's Q over the strata with an AUC and a positive SE."""

    q: float | None
    df: int
    p_value: float | None
    i_squared: float | None
    fixed_effect_auc: float | None
    strata_used: int


def encode(values: Sequence[object] | npt.ArrayLike) -> tuple[list[str], IntArray]:
    """Distinct values (as strings, in sorted order) and each row's index into them.

    Missing values (None, NaN) form one value of their own, "(missing)".
    """
    import pandas as pd  # factorize: hash-based, fast on object columns

    codes, uniques = pd.factorize(pd.Series(np.asarray(values, dtype=object).ravel()), sort=True)
    names = [str(u) for u in uniques]
    out = np.asarray(codes, dtype=np.int64)
    if out.size and out.min() < 0:
        out[out < 0] = len(names)
        names.append(MISSING_STRATUM)
    return names, out


def encode_clusters(values: Sequence[object] | npt.ArrayLike | None, n: int) -> IntArray:
    """Each row's cluster index (ids in sorted order, so the row order does not change a
    seeded bootstrap); a row with no cluster id (None, NaN) is a cluster of its own,
    and ``values`` None makes every row its own cluster."""
    if values is None:
        return np.arange(n, dtype=np.int64)
    import pandas as pd

    codes = np.asarray(
        pd.factorize(pd.Series(np.asarray(values, dtype=object).ravel()), sort=True)[0],
        dtype=np.int64,
    )
    if codes.size != n:
        raise ValueError(f"clusters ({codes.size}) and scores ({n}) differ in length")
    missing = codes < 0
    if missing.any():
        codes[missing] = codes.max(initial=-1) + 1 + np.arange(int(missing.sum()))
    return codes


@dataclass(frozen=True)
class EncodedDesign:
    """The strata and clusters of some rows, encoded once for every statistic that needs them."""

    #: distinct strata (as strings, in sorted order; "(missing)" last if any row has none)
    stratum_names: tuple[str, ...]
    #: per row, its stratum's index into ``stratum_names``
    strata: IntArray
    #: per row, its cluster: dense indices 0 .. C-1, ids in sorted order (see encode_clusters)
    clusters: IntArray


def encode_design(
    strata: Sequence[object] | npt.ArrayLike,
    clusters: Sequence[object] | npt.ArrayLike | None,
    n: int,
) -> EncodedDesign:
    """The strata and clusters of ``n`` rows, encoded (one pass each)."""
    names, sidx = encode(strata)
    if sidx.size != n:
        raise ValueError(f"strata ({sidx.size}) and scores ({n}) differ in length")
    return EncodedDesign(tuple(names), sidx, encode_clusters(clusters, n))


def stratified_auc(
    scores: Sequence[float] | npt.ArrayLike,
    labels: Sequence[bool] | npt.ArrayLike,
    strata: Sequence[object] | npt.ArrayLike,
    clusters: Sequence[object] | npt.ArrayLike | None = None,
    *,
    confidence_level: float = 0.95,
    encoded: EncodedDesign | None = None,
) -> StratifiedAUC:
    """Pair-weighted stratified AUC with a cluster-robust DeLong-type normal CI.

    ``clusters`` None means every row is its own cluster (so does a missing id). ``encoded``
    (from :func:`encode_design`) replaces ``strata`` and ``clusters`` when the caller has
    encoded them already. Raises :class:`UndefinedStatistic` when no stratum has both classes.
    """
    z = two_sided_z(confidence_level)
    s, y = as_scores_labels(scores, labels)
    if encoded is None:
        encoded = encode_design(strata, clusters, s.size)
    elif encoded.strata.size != s.size:
        raise ValueError(f"strata ({encoded.strata.size}) and scores ({s.size}) differ in length")
    names, sidx, cidx = list(encoded.stratum_names), encoded.strata, encoded.clusters

    influence = np.zeros(s.size)
    rows: list[StratumAUC] = []
    dropped: list[str] = []
    pairs: dict[int, float] = {}
    aucs: dict[int, float] = {}
    for k, name in enumerate(names):
        mask = sidx == k
        ys, ss = y[mask], s[mask]
        m, n = int(ys.sum()), int((~ys).sum())
        acc, mean_score = float(ys.mean()), float(ss.mean())
        if m == 0 or n == 0:
            dropped.append(name)
            rows.append(StratumAUC(name, int(ys.size), m, n, acc, mean_score, None, None, 0.0))
            continue
        pairs[k] = float(m) * float(n)
        comp = row_components(ss, ys)
        a = aucs[k] = float(comp[ys].mean())
        influence[mask] = np.where(ys, n, m) * (comp - a)
        # DeLong's variance from the same components
        e = math.sqrt(max(delong_variance(comp[ys], comp[~ys]), 0.0))
        auc_k = Interval(a, *normal_interval(a, e, z))
        # the pair weight is this stratum's pairs until their total is known
        rows.append(StratumAUC(name, int(ys.size), m, n, acc, mean_score, auc_k, e, pairs[k]))
    total_pairs = sum(pairs.values())
    if not pairs:
        raise UndefinedStatistic(
            "stratified AUC is undefined: no stratum has both correct and incorrect rows"
        )
    influence /= total_pairs
    rows = [replace(r, pair_weight=r.pair_weight / total_pairs) for r in rows]
    auc = sum(pairs[k] * aucs[k] for k in pairs) / total_pairs
    used = np.isin(sidx, list(pairs))
    se = _clustered_se(influence[used], cidx[used])
    se_rows = _clustered_se(influence[used], None)
    ci_low, ci_high = normal_interval(auc, se, z)
    return StratifiedAUC(
        value=auc,
        ci_low=ci_low,
        ci_high=ci_high,
        se=se,
        se_rows_independent=se_rows,
        confidence_level=confidence_level,
        n_pos=int(y[used].sum()),
        n_neg=int((~y[used]).sum()),
        n_clusters=int(np.count_nonzero(np.bincount(cidx[used]))),
        strata=tuple(rows),
        dropped=tuple(dropped),
    )


def _clustered_se(influence: npt.NDArray[np.float64], cluster: IntArray | None) -> float:
    """sqrt(C / (C - 1) * sum over clusters of the squared summed influence); ``cluster``
    None: every row its own cluster."""
    if cluster is None:
        sums = influence
    else:
        summed = np.bincount(cluster, weights=influence).astype(np.float64)
        sums = summed[np.bincount(cluster) > 0]
    c = sums.size
    if c < 2:
        return 0.0
    return math.sqrt(c / (c - 1) * float(np.sum(sums * sums)))


def heterogeneity(strata: Sequence[StratumAUC]) -> Heterogeneity:
    """Cochran's Q and I^2 of the per-stratum AUCs (inverse-variance weights)."""
    usable = [r for r in strata if r.auc is not None and r.se is not None and r.se > 0]
    k = len(usable)
    if k < 2:
        return Heterogeneity(None, max(k - 1, 0), None, None, None, k)
    w = np.array([1 / (r.se * r.se) for r in usable if r.se])
    a = np.array([r.auc.value for r in usable if r.auc], dtype=np.float64)
    mean = float(np.sum(w * a) / np.sum(w))
    q = float(np.sum(w * (a - mean) ** 2))
    df = k - 1
    from scipy.special import chdtrc  # survival function of chi-square(df) at q

    p_value = float(chdtrc(df, q))
    i2 = max(0.0, (q - df) / q) if q > 0 else 0.0
    return Heterogeneity(q, df, p_value, i2, mean, k)
