"""P2 — do failures happen that only self-reflection could have caught?

Failure signals (pre-registered): reverts, and fix-like commits within ``window_days`` after
a feature change (a merged PR or a ``feat`` commit) touching at least one of its files. Each is
classified by the ordered, first-match rule table of the pre-registration into *ci*,
*human-review* or *only-self-reflection*; a revert's target commit is resolved and its risk
floor (capture kernel) computed from its files. Kill when the only-self-reflection bucket
holds fewer than ``kill_share_below`` of signals or fewer than ``kill_count_below``.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import duckdb
import pandas as pd

from agent_reflection.db import read_sql
from agent_reflection.experiments.preregistration import (
    BUCKETS,
    P2Params,
    Preregistration,
    Rule,
    params_dict,
)
from agent_reflection.experiments.results import ExperimentResult, Metric
from agent_reflection.risk_floor import RiskVerdict, evaluate_risk_floor
from agent_reflection.stats.wilson import wilson_ci

TITLE = "P2 — git history (what would only self-reflection have caught?)"
ONLY_SELF = "only-self-reflection"


@dataclass(frozen=True)
class Classified:
    bucket: str
    rule: str
    why: str


def kill_condition(p: P2Params) -> str:
    return (
        f"kill when the only-self-reflection bucket holds < {p.kill_share_below:.0%} of "
        f"failure signals or fewer than {p.kill_count_below}; no signals -> insufficient-data"
    )


def classify(
    rules: tuple[Rule, ...],
    fixing_paths: list[str],
    message: str,
    failing_risk: RiskVerdict | None,
) -> Classified:
    """The first rule with a matching condition (a rule without conditions always matches)."""
    lowered = [p.replace("\\", "/").lower() for p in fixing_paths]
    for rule in rules:
        reasons: list[str] = []
        has_condition = False
        if rule.fixing_paths:
            has_condition = True
            hits = sorted({p for p in lowered for pat in rule.fixing_paths if pat in p})
            if hits:
                reasons.append(f"fixing commit changes {', '.join(hits[:3])}")
        if rule.fixing_message:
            has_condition = True
            m = re.search(rule.fixing_message, message, re.IGNORECASE)
            if m:
                reasons.append(f"message says {m.group(0)!r}")
        if rule.failing_risk_needs_review is not None:
            has_condition = True
            if failing_risk is not None and (
                failing_risk.needs_review == rule.failing_risk_needs_review
            ):
                reasons.append(f"failing change's risk floor: {failing_risk.reason}")
        if not has_condition:
            return Classified(rule.bucket, rule.name, "no earlier rule matched")
        if reasons:
            return Classified(rule.bucket, rule.name, "; ".join(reasons))
    raise AssertionError("the last pre-registered rule must be a catch-all")  # pragma: no cover


def signal_frame(con: duckdb.DuckDBPyConnection, p: P2Params) -> pd.DataFrame:
    return con.execute(
        read_sql("experiments/p2_signals.sql"),
        {
            "time_column": p.time_column,
            "feature_types": list(p.feature_cc_types),
            "feature_merged_pr": p.feature_merged_pr,
            "window_days": p.window_days,
        },
    ).df()


def _files(
    con: duckdb.DuckDBPyConnection, pairs: set[tuple[str, str]]
) -> dict[tuple[str, str], list[str]]:
    out: dict[tuple[str, str], list[str]] = defaultdict(list)
    if not pairs:
        return out
    ordered = sorted(pairs)
    rows = con.execute(
        read_sql("experiments/p2_files.sql"),
        {"repos": [r for r, _ in ordered], "shas": [s for _, s in ordered]},
    ).fetchall()
    for repo, sha, path in rows:
        out[(repo, sha)].append(path)
    return out


def run_p2(con: duckdb.DuckDBPyConnection, prereg: Preregistration) -> ExperimentResult:
    p = prereg.p2
    frame = signal_frame(con, p)
    pairs = {(r, s) for r, s in zip(frame["repo"], frame["fixing_sha"], strict=True)}
    pairs |= {(r, s) for r, s in zip(frame["repo"], frame["failing_sha"], strict=True)
              if isinstance(s, str)}  # fmt: skip
    files = _files(con, pairs)
    repos = [r[0] for r in con.execute("SELECT DISTINCT repo FROM commits ORDER BY 1").fetchall()]
    return analyse_p2(frame, files, prereg, repos=repos)


def analyse_p2(
    frame: pd.DataFrame,
    files: dict[tuple[str, str], list[str]],
    prereg: Preregistration,
    *,
    repos: list[str] | None = None,
) -> ExperimentResult:
    """Classify every signal in ``frame`` (see p2_signals.sql) and judge the pooled tally."""
    p = prereg.p2
    signals: list[dict[str, Any]] = []
    notes: list[str] = []
    unresolved = 0
    for row in frame.to_dict("records"):
        failing = row["failing_sha"] if isinstance(row["failing_sha"], str) else None
        repo, fixing, kind = str(row["repo"]), str(row["fixing_sha"]), str(row["kind"])
        risk = None
        if failing is not None:
            risk = evaluate_risk_floor(files.get((repo, failing), []), threshold=p.risk_threshold)
        elif kind == "revert":
            unresolved += 1
        message = f"{row['subject']}\n{row['body'] or ''}"
        c = classify(p.rules, files.get((repo, fixing), []), message, risk)
        reverts_sha = row["reverts_sha"]
        signals.append({
            "repo": repo, "kind": kind, "fixing_sha": fixing,
            "at": _iso(row["at"]), "subject": str(row["subject"]), "failing_sha": failing,
            "reverts_sha": reverts_sha if isinstance(reverts_sha, str) else None,
            "failing_risk": risk.to_dict() if risk else None,
            "bucket": c.bucket, "rule": c.rule, "why": c.why,
        })  # fmt: skip
    if unresolved:
        notes.append(f"{unresolved} revert(s) whose target commit is not in the data: "
                     "no risk floor, so the human-review rule cannot fire for them")  # fmt: skip

    pooled = Counter(s["bucket"] for s in signals)
    n = len(signals)
    only = pooled.get(ONLY_SELF, 0)
    metric = Metric("only_self_reflection_share", None, None, None, "wilson", 0.95)
    if n:
        w = wilson_ci(only, n)
        metric = Metric("only_self_reflection_share", w.proportion, w.ci_low, w.ci_high,
                        "wilson", 0.95)  # fmt: skip
    if n < max(p.min_signals, 1):
        verdict = "insufficient-data"
        notes.append(f"{n} failure signal(s); {max(p.min_signals, 1)} needed for a verdict")
    elif only < p.kill_count_below or Fraction(only, n) < Fraction(str(p.kill_share_below)):
        verdict = "kill"
        notes.append(f"only-self-reflection bucket holds {only}/{n} signals "
                     f"({only / n:.1%}): near-empty, so no closed loop")  # fmt: skip
    else:
        verdict = "continue"

    per_repo: dict[str, Counter[str]] = {r: Counter() for r in (repos or [])}
    for s in signals:
        per_repo.setdefault(s["repo"], Counter())[s["bucket"]] += 1
    by_repo = [
        {"repo": r, "signals": sum(c.values()), **{b: c.get(b, 0) for b in BUCKETS}}
        for r, c in sorted(per_repo.items())
    ]
    kinds = Counter(s["kind"] for s in signals)
    rules = Counter(s["rule"] for s in signals)
    return ExperimentResult(
        experiment="p2",
        title=TITLE,
        verdict=verdict,
        metric=metric,
        n=n,
        thresholds={"kill_share_below": p.kill_share_below, "kill_count_below": p.kill_count_below,
                    "window_days": p.window_days, "min_signals": p.min_signals},
        kill_condition=kill_condition(p),
        notes=tuple(notes),
        exploratory=prereg.exploratory,
        preregistration=prereg.provenance(),
        parameters=params_dict(p),
        details={
            "pooled": {b: pooled.get(b, 0) for b in BUCKETS},
            "by_repo": by_repo,
            "by_kind": dict(sorted(kinds.items())),
            "by_rule": dict(sorted(rules.items())),
            "signals": signals,
        },
    )  # fmt: skip


def _iso(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and value != value):
        return None
    return str(pd.Timestamp(value).isoformat())
