"""P3 — can a right/wrong outcome be detected by machine within the window?

Completed tasks with at least ``min_follow_up_days`` of follow-up in the data (the others are
right-censored: excluded and counted). A task is *detectable* when any signal falls within
``window_days`` after completion (``0 <= at - completed_at <= window``, so day 30 counts and
day 31 does not): reopened; a regression / caused-by link (dated by the linked task's
creation); a revert of, or a fix-like commit touching a file of, a commit linked to the task;
a verified / confirmed state or label. Statistic: detectable fraction with a Wilson CI;
below ``kill_fraction_below`` -> kill (caveat notes only).
"""

from __future__ import annotations

from datetime import datetime
from fractions import Fraction
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from agent_reflection.db import read_sql
from agent_reflection.experiments.preregistration import P3Params, Preregistration, params_dict
from agent_reflection.experiments.results import ExperimentResult, Metric
from agent_reflection.stats.wilson import wilson_ci

TITLE = "P3 — outcome detectability (machine signal within the window)"
SIGNAL_KINDS = ("reopened", "regression-link", "revert", "fix", "verified")


def kill_condition(p: P3Params) -> str:
    return (
        f"kill (caveat notes only) when fewer than {p.kill_fraction_below:.0%} of completed "
        f"tasks with >= {p.min_follow_up_days} days of follow-up get a signal within "
        f"{p.window_days} days; fewer than {p.min_tasks} such tasks -> insufficient-data"
    )


def resolve_as_of(con: duckdb.DuckDBPyConnection, p: P3Params) -> datetime | None:
    if p.as_of != "data":
        return datetime.fromisoformat(p.as_of)
    value = con.execute(read_sql("experiments/p3_as_of.sql")).fetchone()
    return value[0] if value else None


def signals(con: duckdb.DuckDBPyConnection, p: P3Params) -> pd.DataFrame:
    """Every signal about every completed task (task_ref, kind, polarity, at, detail)."""
    return con.execute(
        read_sql("experiments/p3_signals.sql"),
        {
            "reopen_kinds": list(p.reopen_event_kinds),
            "link_pattern": p.regression_link_pattern,
            "verified_pattern": p.verified_pattern,
            "verified_kinds": list(p.verified_event_kinds),
            "commit_signals": p.commit_signals,
        },
    ).df()


def task_outcomes(
    con: duckdb.DuckDBPyConnection, p: P3Params, as_of: datetime | None = None
) -> pd.DataFrame:
    """One row per completed task: censored, detectable, first signal, negative/positive."""
    as_of = as_of or resolve_as_of(con, p)
    tasks = con.execute(read_sql("experiments/p3_tasks.sql"), {"as_of": as_of}).df()
    sig = signals(con, p)
    return outcomes_from(tasks, sig, p)


def outcomes_from(tasks: pd.DataFrame, sig: pd.DataFrame, p: P3Params) -> pd.DataFrame:
    """Join tasks and signals into per-task outcomes (pure; used with data frames too)."""
    out = tasks.copy()
    out["censored"] = out["follow_up_days"].isna() | (out["follow_up_days"] < p.min_follow_up_days)
    if sig.empty:
        sig = pd.DataFrame(columns=["task_ref", "kind", "polarity", "at", "detail"])
    s = sig.merge(out[["task_ref", "completed_at"]], on="task_ref", how="inner")
    delta = pd.to_datetime(s["at"], utc=True) - pd.to_datetime(s["completed_at"], utc=True)
    s["days"] = delta.dt.total_seconds() / 86400.0
    window = float(p.window_days)
    s["in_window"] = s["days"].notna() & (s["days"] >= 0) & (s["days"] <= window)
    inw = s[s["in_window"]].sort_values(["task_ref", "days", "kind"])
    first = inw.groupby("task_ref", sort=False).first()
    out["detectable"] = out["task_ref"].isin(inw["task_ref"])
    out["first_signal_kind"] = out["task_ref"].map(first["kind"]) if len(first) else None
    out["days_to_signal"] = out["task_ref"].map(first["days"]) if len(first) else np.nan
    neg = set(inw.loc[inw["polarity"] == "negative", "task_ref"])
    pos = set(inw.loc[inw["polarity"] == "positive", "task_ref"])
    out["negative"] = out["task_ref"].isin(neg)
    out["positive"] = out["task_ref"].isin(pos)
    for kind in SIGNAL_KINDS:
        out[f"has_{kind}"] = out["task_ref"].isin(set(inw.loc[inw["kind"] == kind, "task_ref"]))
    return out


def run_p3(con: duckdb.DuckDBPyConnection, prereg: Preregistration) -> ExperimentResult:
    p = prereg.p3
    as_of = resolve_as_of(con, p)
    tasks = con.execute(read_sql("experiments/p3_tasks.sql"), {"as_of": as_of}).df()
    sig = signals(con, p)
    return analyse_p3(tasks, sig, prereg, as_of=as_of)


def analyse_p3(
    tasks: pd.DataFrame,
    sig: pd.DataFrame,
    prereg: Preregistration,
    *,
    as_of: datetime | None = None,
) -> ExperimentResult:
    """P3 from a tasks frame (task_ref, project, source, completed_at, follow_up_days) and a
    signals frame (task_ref, kind, polarity, at, detail)."""
    p = prereg.p3
    out = outcomes_from(tasks, sig, p)
    eligible = out[~out["censored"]]
    n = len(eligible)
    k = int(eligible["detectable"].sum())
    notes = [f"as of {as_of.isoformat() if as_of else 'unknown (no timestamps)'}"]
    censored = int(out["censored"].sum())
    if censored:
        notes.append(f"{censored} completed task(s) right-censored (< {p.min_follow_up_days} "
                     "days of follow-up): excluded")  # fmt: skip
    metric = Metric("detectable_fraction", None, None, None, "wilson", p.confidence_level)
    if n:
        w = wilson_ci(k, n, p.confidence_level)
        metric = Metric("detectable_fraction", w.proportion, w.ci_low, w.ci_high, "wilson",
                        p.confidence_level)  # fmt: skip
    if n < p.min_tasks:
        verdict = "insufficient-data"
        notes.append(f"{n} eligible completed task(s); {p.min_tasks} needed for a verdict")
    elif Fraction(k, n) < Fraction(str(p.kill_fraction_below)):
        verdict = "kill"
        notes.append(
            f"caveat notes only: {k}/{n} = {k / n:.1%} of tasks get a machine signal within "
            f"{p.window_days} days (< {p.kill_fraction_below:.0%})"
        )
    else:
        verdict = "continue"
    undated = int(sig["at"].isna().sum()) if len(sig) else 0
    if undated:
        notes.append(f"{undated} signal(s) have no date (e.g. links to tasks not in the data) "
                     "and do not count")  # fmt: skip
    details = {
        "as_of": as_of.isoformat() if as_of else None,
        "completed": len(out),
        "censored": censored,
        "eligible": n,
        "detectable": k,
        "by_kind": _by_kind(eligible),
        "by_project": _by_project(eligible, p),
        "time_to_signal_days": [float(x) for x in
                                eligible.loc[eligible["detectable"], "days_to_signal"]],
        "time_to_signal_summary": _summary(eligible.loc[eligible["detectable"], "days_to_signal"]),
        "tasks": _task_rows(eligible),
    }  # fmt: skip
    return ExperimentResult(
        experiment="p3",
        title=TITLE,
        verdict=verdict,
        metric=metric,
        n=n,
        thresholds={"kill_fraction_below": p.kill_fraction_below, "window_days": p.window_days,
                    "min_follow_up_days": p.min_follow_up_days, "min_tasks": p.min_tasks},
        kill_condition=kill_condition(p),
        notes=tuple(notes),
        exploratory=prereg.exploratory,
        preregistration=prereg.provenance(),
        parameters=params_dict(p),
        details=details,
    )  # fmt: skip


def _by_kind(eligible: pd.DataFrame) -> list[dict[str, Any]]:
    n = len(eligible)
    return [
        {"kind": kind, "tasks": int(eligible[f"has_{kind}"].sum()),
         "fraction": float(eligible[f"has_{kind}"].mean()) if n else None}
        for kind in SIGNAL_KINDS
    ]  # fmt: skip


def _by_project(eligible: pd.DataFrame, p: P3Params) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for project, g in eligible.groupby("project", dropna=False, sort=True):
        k, n = int(g["detectable"].sum()), len(g)
        w = wilson_ci(k, n, p.confidence_level)
        rows.append({"project": str(project), "n": n, "detectable": k, "fraction": w.proportion,
                     "ci_low": w.ci_low, "ci_high": w.ci_high})  # fmt: skip
    return rows


#: Per-task rows kept in results.json (the rest are counted, not listed).
MAX_TASK_ROWS = 5000


def _task_rows(eligible: pd.DataFrame) -> list[dict[str, Any]]:
    cols = ["task_ref", "project", "detectable", "first_signal_kind", "days_to_signal"]
    rows = [{str(k): v for k, v in r.items()}
            for r in eligible[cols].head(MAX_TASK_ROWS).to_dict("records")]  # fmt: skip
    for r in rows:
        r["detectable"] = bool(r["detectable"])
        if not r["detectable"]:
            r["first_signal_kind"] = None
            r["days_to_signal"] = None
    return rows


def _summary(values: pd.Series) -> dict[str, float] | None:
    if values.empty:
        return None
    v = values.astype(float)
    return {"min": float(v.min()), "median": float(v.median()), "mean": float(v.mean()),
            "max": float(v.max())}  # fmt: skip
