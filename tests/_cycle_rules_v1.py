"""The tier-1 rules as they were before the findings were built in bulk: ``data/cycle/rules_v1.sql``
returns one candidate row per finding and Python builds each finding one dataclass at a time.

Kept only as the reference ``tests/test_cycle_rules_bulk.py`` compares
:func:`agent_reflection.cycle.rules.evaluate` with: same findings, same order, same texts.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import duckdb

from agent_reflection.cycle.config import CycleConfig
from agent_reflection.cycle.findings import ReflectionFinding
from agent_reflection.cycle.rules import RECENT_LOOKBACKS, Scope

_RULES_SQL = Path(__file__).parent / "data" / "cycle" / "rules_v1.sql"


@dataclass(frozen=True)
class _Candidate:
    """One row of ``sql/cycle/rules.sql``: a finding before status, scope and rule order."""

    rule: str
    subject_id: str
    task_status: str | None
    count: int
    sessions: list[str] | None
    latest_at: datetime | None
    in_window: int | None
    longest: int | None
    from_summary: bool | None
    reads: int | None


def _candidates(
    con: duckdb.DuckDBPyConnection, now: datetime, config: CycleConfig, min_streak: int
) -> list[_Candidate]:
    lookback = timedelta(seconds=config.lookback_seconds)
    params = {
        "now": now,
        "start": now - lookback,
        "horizon": now - lookback * (1 + RECENT_LOOKBACKS),
        "scan_limit": config.streak_scan_limit,
        "min_streak": min_streak,
        "timeout_limit": config.timeout_pattern_limit,
        "min_result_length": config.min_result_length,
        "skill_min_sessions": config.skill_failure_min,
    }
    rows = con.execute(_RULES_SQL.read_text("utf-8"), params).fetchall()
    return [_Candidate(*row) for row in rows]


def failure_streaks(
    con: duckdb.DuckDBPyConnection, now: datetime, config: CycleConfig
) -> dict[str, int]:
    """task_id → failure streak, for every candidate task (outcomes in the window)."""
    return {
        c.subject_id: c.count
        for c in _candidates(con, now, config, min_streak=0)
        if c.rule == "consecutive_failures"
    }


def _iso(at: datetime | None) -> str:
    return at.isoformat() if at else "-"


def evaluate(
    con: duckdb.DuckDBPyConnection,
    now: datetime,
    config: CycleConfig,
    scope: Scope | None = None,
) -> tuple[ReflectionFinding, ...]:
    """Every finding of the four rules at clock ``now``, in rule order."""
    window = f"{config.lookback_seconds:,} s before {now.isoformat()}"
    by_rule: dict[str, list[_Candidate]] = {}
    for candidate in _candidates(con, now, config, min_streak=config.consecutive_failure_limit):
        by_rule.setdefault(candidate.rule, []).append(candidate)
    task_ids = None if scope is None else scope.task_ids
    pauses = _pauses(by_rule.get("consecutive_failures", []), config, task_ids)
    paused = {f.subject_id for f in pauses}
    return (
        *pauses,
        *_timeout_warnings(by_rule.get("timeout_pattern", []), window, task_ids, paused),
        *_stale_warnings(by_rule.get("stale_task", []), config, window, task_ids, paused),
        *_skill_flags(by_rule.get("skill_failure_correlation", []), config, scope),
    )


def _pauses(
    candidates: list[_Candidate], config: CycleConfig, task_ids: frozenset[str] | None
) -> list[ReflectionFinding]:
    """``consecutive_failures``: pause each active task in scope whose last outcomes failed."""
    limit = config.consecutive_failure_limit
    findings: list[ReflectionFinding] = []
    for c in candidates:
        if c.task_status != "active" or not _in_scope(c.subject_id, task_ids):
            continue
        newest = c.latest_at.isoformat() if c.latest_at else "?"
        findings.append(
            ReflectionFinding(
                rule="consecutive_failures",
                severity="action_taken",
                subject_type="task",
                subject_id=c.subject_id,
                detail=(
                    f"last {c.count} outcomes failed or timed out (limit {limit}; newest "
                    f"at {newest}): {', '.join(c.sessions or [])}; pause the task"
                ),
                action_taken="paused_task",
                count=c.count,
                evidence=f"streak {c.count}: {', '.join(c.sessions or [])}",
            )
        )
    return findings


def _timeout_warnings(
    candidates: list[_Candidate],
    window: str,
    task_ids: frozenset[str] | None,
    paused: set[str],
) -> list[ReflectionFinding]:
    """``timeout_pattern``: warn about each active task in scope whose newest outcomes timed
    out, unless ``consecutive_failures`` just paused it."""
    return [
        ReflectionFinding(
            rule="timeout_pattern",
            severity="warning",
            subject_type="task",
            subject_id=c.subject_id,
            detail=(
                f"newest {c.count} of its {c.in_window} outcomes in the window ({window}) "
                "timed out: give it a longer timeout or a simpler prompt"
            ),
            action_taken="",
            count=c.count,
            evidence=f"newest {c.count} timed out, newest at {_iso(c.latest_at)}",
        )
        for c in candidates
        if c.task_status == "active"
        and c.subject_id not in paused
        and _in_scope(c.subject_id, task_ids)
    ]


def _stale_warnings(
    candidates: list[_Candidate],
    config: CycleConfig,
    window: str,
    task_ids: frozenset[str] | None,
    paused: set[str],
) -> list[ReflectionFinding]:
    """``stale_task``: warn about each task in scope without meaningful output, unless
    ``consecutive_failures`` just paused it."""
    findings: list[ReflectionFinding] = []
    for c in candidates:
        if c.subject_id in paused or not _in_scope(c.subject_id, task_ids):
            continue
        basis = (
            f"its last_result_summary is {c.longest} characters"
            if c.from_summary
            else f"all {c.count} recent results (window {window}, at least the last) are "
            f"shorter than {config.min_result_length} characters (longest {c.longest})"
        )
        findings.append(
            ReflectionFinding(
                rule="stale_task",
                severity="warning",
                subject_type="task",
                subject_id=c.subject_id,
                detail=f"active task without meaningful output: {basis}",
                action_taken="",
                count=c.count,
                evidence=(
                    f"last_result_summary {c.longest} characters"
                    if c.from_summary
                    else f"newest result at {_iso(c.latest_at)}, longest {c.longest}"
                ),
            )
        )
    return findings


def _skill_flags(
    candidates: list[_Candidate], config: CycleConfig, scope: Scope | None
) -> list[ReflectionFinding]:
    """``skill_failure_correlation``: flag each skill read in failed sub-sessions (with a
    scope: only skills one of its sessions read)."""
    findings: list[ReflectionFinding] = []
    for c in candidates:
        sessions = c.sessions or []
        if scope is not None and not set(sessions) & scope.session_ids:
            continue
        shown = ", ".join(sessions[:5]) + (" ..." if len(sessions) > 5 else "")
        findings.append(
            ReflectionFinding(
                rule="skill_failure_correlation",
                severity="warning",
                subject_type="skill",
                subject_id=c.subject_id,
                detail=(
                    f"read in {c.count} failed or timed-out sub-sessions ({c.reads} reads) in "
                    f"the last {config.lookback_seconds:,} s: {shown}"
                ),
                action_taken="flagged_skill",
                count=c.count,
                evidence=f"failed sub-sessions: {', '.join(sessions)}",
            )
        )
    return findings


def _in_scope(task_id: str, task_ids: frozenset[str] | None) -> bool:
    """Whether a task is in the run's scope (None: every task is)."""
    return task_ids is None or task_id in task_ids
