"""P1 — is self-rated confidence a usable signal of correctness?

Statistic (pre-registered): ROC AUC of confidence for correctness on the self-rated-high
subset (confidence >= threshold), with a DeLong CI and a seeded BCa bootstrap CI. Kill when
the CI's lower bound <= 0.5 or the AUC < 0.55; fewer than ``min_per_class`` of either class
is "insufficient-data". Also: per-group AUC, Brier score, top-decile lift, ROC curve points
and a reliability diagram (with per-bin counts) over all rows.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import asdict
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from agent_reflection.db import read_sql
from agent_reflection.experiments.preregistration import P1Params, Preregistration, params_dict
from agent_reflection.experiments.results import ExperimentResult, Metric
from agent_reflection.stats import UndefinedStatistic
from agent_reflection.stats.bootstrap import bootstrap_auc_ci
from agent_reflection.stats.brier import brier_score
from agent_reflection.stats.delong import delong_ci
from agent_reflection.stats.ece import reliability
from agent_reflection.stats.lift import top_fraction_lift
from agent_reflection.stats.roc import roc_curve_points

#: ROC points kept in results.json (evenly spaced along the curve).
ROC_POINTS = 500
TITLE = "P1 — confidence calibration (AUC on the self-rated-high subset)"


def kill_condition(p: P1Params) -> str:
    return (
        f"kill when the {p.confidence_level:.0%} DeLong CI's lower bound <= "
        f"{p.kill_ci_lower_at_most} or AUC < {p.kill_auc_below} on confidence >= "
        f"{p.high_confidence_threshold}; fewer than {p.min_per_class} correct or incorrect "
        "rows there -> insufficient-data"
    )


def corpus_labels(con: duckdb.DuckDBPyConnection, corpus: str | None = None) -> pd.DataFrame:
    """Rows of the ``labels`` table: confidence, correct, corpus and one column per group key."""
    df = con.execute(read_sql("experiments/p1_corpus_labels.sql"), {"corpus": corpus}).df()
    return _expand_groups(df)


def _expand_groups(df: pd.DataFrame) -> pd.DataFrame:
    if "groups" not in df.columns:
        return df
    groups = pd.DataFrame([json.loads(g) if g else {} for g in df["groups"]], index=df.index)
    return pd.concat([df.drop(columns=["groups"]), groups], axis=1)


def loop_labels(con: duckdb.DuckDBPyConnection, prereg: Preregistration) -> pd.DataFrame:
    """Sidecar confidence joined to P3 outcomes: wrong = a negative signal in the window."""
    from agent_reflection.experiments.p3 import task_outcomes

    outcomes = task_outcomes(con, prereg.p3)
    refl = con.execute(read_sql("experiments/p1_loop_reflections.sql")).df()
    if refl.empty or outcomes.empty:
        return pd.DataFrame(columns=["confidence", "correct", "agent", "repo", "task_ref"])
    usable = outcomes[~outcomes["censored"]]
    merged = refl.merge(usable[["task_ref", "negative"]], on="task_ref", how="inner")
    merged["correct"] = ~merged["negative"].astype(bool)
    return merged.drop(columns=["negative"])


def run_p1(
    con: duckdb.DuckDBPyConnection, prereg: Preregistration, *, corpus: str | None = None
) -> ExperimentResult:
    """P1 on the labels chosen by ``prereg.p1.label_source``."""
    if prereg.p1.label_source == "loop":
        df = loop_labels(con, prereg)
        source = "loop: sidecar confidence joined to P3 outcome signals"
    else:
        df = corpus_labels(con, corpus)
        source = f"corpus: labels table ({corpus or 'all corpora'})"
    return analyse_p1(df, prereg, source=source)


def _auc_block(conf: np.ndarray[Any, Any], y: np.ndarray[Any, Any], p: P1Params) -> dict[str, Any]:
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    out: dict[str, Any] = {"n": int(y.size), "n_correct": n_pos, "n_incorrect": n_neg}
    try:
        d = delong_ci(conf, y, p.confidence_level)
        out.update(auc=d.auc, ci_low=d.ci_low, ci_high=d.ci_high, se=d.se)
    except UndefinedStatistic as exc:
        out.update(auc=None, ci_low=None, ci_high=None, se=None, undefined=str(exc))
    return out


def analyse_p1(df: pd.DataFrame, prereg: Preregistration, *, source: str = "") -> ExperimentResult:
    """P1 on a frame with ``confidence`` (0–1) and ``correct`` (bool) columns."""
    p = prereg.p1
    notes: list[str] = [f"labels from {source}"] if source else []
    conf_all = df["confidence"].to_numpy(dtype=np.float64) if len(df) else np.zeros(0)
    y_all = df["correct"].to_numpy(dtype=bool) if len(df) else np.zeros(0, dtype=bool)
    high = conf_all >= p.high_confidence_threshold
    conf, y = conf_all[high], y_all[high]
    block = _auc_block(conf, y, p)
    n_pos, n_neg = block["n_correct"], block["n_incorrect"]

    auc, lo, hi = block["auc"], block["ci_low"], block["ci_high"]
    if auc is None:
        notes.append(f"AUC undefined on the high subset: {block['undefined']}")
    if n_pos < p.min_per_class or n_neg < p.min_per_class:
        verdict = "insufficient-data"
        notes.append(
            f"the high subset has {n_pos} correct and {n_neg} incorrect rows; "
            f"{p.min_per_class} of each are needed for a verdict"
        )
    elif lo is not None and (lo <= p.kill_ci_lower_at_most or auc < p.kill_auc_below):
        verdict = "kill"
        notes.append(
            f"AUC {auc:.3f} (CI {lo:.3f}–{hi:.3f}) is not distinguishable from chance "
            f"(lower bound <= {p.kill_ci_lower_at_most} or AUC < {p.kill_auc_below})"
        )
    else:
        verdict = "continue"

    details: dict[str, Any] = {"label_source": source, "n_all": int(y_all.size),
                               "high_subset": block}  # fmt: skip
    details["bootstrap"] = _bootstrap(conf, y, p, notes)
    details["groups"] = _groups(df[high] if len(df) else df, p)
    details.update(_secondary(conf_all, y_all, conf, y, p, notes))

    return ExperimentResult(
        experiment="p1",
        title=TITLE,
        verdict=verdict,
        metric=Metric("roc_auc", auc, lo, hi, "delong", p.confidence_level),
        n=int(y.size),
        thresholds={
            "high_confidence_threshold": p.high_confidence_threshold,
            "kill_ci_lower_at_most": p.kill_ci_lower_at_most,
            "kill_auc_below": p.kill_auc_below,
            "min_per_class": p.min_per_class,
        },
        kill_condition=kill_condition(p),
        notes=tuple(notes),
        exploratory=prereg.exploratory,
        preregistration=prereg.provenance(),
        parameters=params_dict(p),
        details=details,
    )


def _bootstrap(
    conf: np.ndarray[Any, Any], y: np.ndarray[Any, Any], p: P1Params, notes: list[str]
) -> dict[str, Any] | None:
    if y.size > p.bootstrap_max_rows:
        notes.append(f"bootstrap CI skipped: {y.size:,} rows > bootstrap_max_rows")
        return None
    try:
        b = bootstrap_auc_ci(
            conf, y, confidence_level=p.confidence_level, n_resamples=p.bootstrap_resamples,
            seed=p.seed, method=p.bootstrap_method,
        )  # fmt: skip
    except (UndefinedStatistic, ValueError) as exc:
        notes.append(f"bootstrap CI not available: {exc}")
        return None
    return asdict(b)


def _groups(df: pd.DataFrame, p: P1Params) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for column in p.group_columns:
        if column not in df.columns:
            continue
        for value, g in df.groupby(column, dropna=True, sort=True):
            row: dict[str, Any] = {"column": column, "group": str(value)}
            if len(g) < p.min_group_rows:
                row.update(n=len(g), auc=None, note=f"fewer than {p.min_group_rows} rows")
            else:
                row.update(
                    _auc_block(
                        g["confidence"].to_numpy(dtype=np.float64),
                        g["correct"].to_numpy(dtype=bool), p,
                    )
                )  # fmt: skip
            out.append(row)
    return out


def _secondary(
    conf_all: np.ndarray[Any, Any],
    y_all: np.ndarray[Any, Any],
    conf: np.ndarray[Any, Any],
    y: np.ndarray[Any, Any],
    p: P1Params,
    notes: list[str],
) -> dict[str, Any]:
    out: dict[str, Any] = {"brier_all": None, "brier_high": None, "lift": None,
                           "reliability": None, "roc": None}  # fmt: skip
    if y_all.size:
        out["brier_all"] = brier_score(conf_all, y_all)
    if y.size:
        out["brier_high"] = brier_score(conf, y)
    try:
        out["lift"] = asdict(top_fraction_lift(conf_all, y_all, p.lift_fraction))
    except UndefinedStatistic as exc:
        notes.append(f"lift not available: {exc}")
    try:
        rel = reliability(conf_all, y_all, p.ece_bins)
        out["reliability"] = {"ece": rel.ece, "n": rel.n, "out_of_range": rel.out_of_range,
                              "bins": [asdict(b) for b in rel.bins]}  # fmt: skip
    except UndefinedStatistic as exc:
        notes.append(f"reliability diagram not available: {exc}")
    with contextlib.suppress(UndefinedStatistic):
        out["roc"] = asdict(roc_curve_points(conf, y, max_points=ROC_POINTS))
    return out
