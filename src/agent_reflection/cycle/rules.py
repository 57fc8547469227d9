"""Tier 1: the four rules, as SQL over DuckDB (``sql/cycle/*.sql``), against an explicit clock.

Order matters, as in the peer: ``consecutive_failures`` runs first and pauses its tasks, and the
later task rules only look at tasks still active, so three straight timeouts give a pause and no
``timeout_pattern`` warning. Evaluation is pure: pauses are simulated here and applied (or only
reported, in a dry run) by :mod:`agent_reflection.cycle.actions`.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta

import duckdb

from agent_reflection.cycle.config import CycleConfig
from agent_reflection.cycle.findings import ReflectionFinding
from agent_reflection.db import read_sql


@dataclass(frozen=True)
class Scope:
    """Restrict a rule run to some tasks and the skills some sessions read (failure trigger)."""

    task_ids: frozenset[str]
    session_ids: frozenset[str]


def fill_window(con: duckdb.DuckDBPyConnection, now: datetime, config: CycleConfig) -> datetime:
    """Fill the temporary ``cycle_window`` (outcomes in the window) and ``cycle_history`` (the
    older outcomes some tasks need) tables; returns the window start."""
    start = now - timedelta(seconds=config.lookback_seconds)
    con.execute(read_sql("cycle/window.sql"), [now, start])
    con.execute(read_sql("cycle/history.sql"), [start])
    return start


def failure_streaks(
    con: duckdb.DuckDBPyConnection, now: datetime, config: CycleConfig
) -> dict[str, int]:
    """task_id → failure streak, for every candidate task (outcomes in the window)."""
    fill_window(con, now, config)
    rows = con.execute(
        read_sql("cycle/failure_streaks.sql"), [config.streak_scan_limit, 0]
    ).fetchall()
    return {str(r[0]): int(r[1]) for r in rows}


def evaluate(
    con: duckdb.DuckDBPyConnection,
    now: datetime,
    config: CycleConfig,
    scope: Scope | None = None,
) -> tuple[ReflectionFinding, ...]:
    """Every finding of the four rules at clock ``now``, in rule order."""
    findings: list[ReflectionFinding] = []
    paused: set[str] = set()
    window = f"{config.lookback_seconds:,} s before {now.isoformat()}"
    limit = config.consecutive_failure_limit

    def in_scope(task_id: str) -> bool:
        return scope is None or task_id in scope.task_ids

    fill_window(con, now, config)
    streak_rows = con.execute(
        read_sql("cycle/failure_streaks.sql"), [config.streak_scan_limit, limit]
    ).fetchall()
    for task_id, streak, latest_at, sessions, status in streak_rows:
        if streak >= limit and status == "active" and in_scope(task_id):
            paused.add(task_id)
            findings.append(
                ReflectionFinding(
                    rule="consecutive_failures",
                    severity="action_taken",
                    subject_type="task",
                    subject_id=task_id,
                    detail=(
                        f"last {streak} outcomes failed or timed out (limit {limit}; newest "
                        f"at {latest_at.isoformat()}): {', '.join(sessions[:streak])}; "
                        "pause the task"
                    ),
                    action_taken="paused_task",
                    count=int(streak),
                )
            )
    for task_id, in_window, timeouts, status in con.execute(
        read_sql("cycle/timeout_tails.sql"), [config.timeout_pattern_limit]
    ).fetchall():
        if status == "active" and task_id not in paused and in_scope(task_id):
            findings.append(
                ReflectionFinding(
                    rule="timeout_pattern",
                    severity="warning",
                    subject_type="task",
                    subject_id=task_id,
                    detail=(
                        f"newest {timeouts} of its {in_window} outcomes in the window ({window}) "
                        "timed out: give it a longer timeout or a simpler prompt"
                    ),
                    action_taken="",
                    count=int(timeouts),
                )
            )
    for task_id, results, longest, from_summary, _status in con.execute(
        read_sql("cycle/stale_tasks.sql"),
        [now, config.min_result_length],
    ).fetchall():
        if task_id in paused or not in_scope(task_id):
            continue
        basis = (
            f"its last_result_summary is {longest} characters"
            if from_summary
            else f"all {results} recent results (window {window}, at least the last) are "
            f"shorter than {config.min_result_length} characters (longest {longest})"
        )
        findings.append(
            ReflectionFinding(
                rule="stale_task",
                severity="warning",
                subject_type="task",
                subject_id=task_id,
                detail=f"active task without meaningful output: {basis}",
                action_taken="",
                count=int(results),
            )
        )
    findings.extend(
        skill_findings(con, now, config, scope.session_ids if scope else None, window_ready=True)
    )
    return tuple(findings)


def skill_findings(
    con: duckdb.DuckDBPyConnection,
    now: datetime,
    config: CycleConfig,
    session_ids: Collection[str] | None = None,
    *,
    window_ready: bool = False,
) -> list[ReflectionFinding]:
    """``skill_failure_correlation``: skills read in ≥ ``skill_failure_min`` failed sessions."""
    out: list[ReflectionFinding] = []
    if not window_ready:
        fill_window(con, now, config)
    rows = con.execute(read_sql("cycle/skill_failures.sql"), [config.skill_failure_min]).fetchall()
    for skill, sessions, reads, session_list in rows:
        if session_ids is not None and not set(session_list) & set(session_ids):
            continue
        shown = ", ".join(session_list[:5]) + (" ..." if len(session_list) > 5 else "")
        out.append(
            ReflectionFinding(
                rule="skill_failure_correlation",
                severity="warning",
                subject_type="skill",
                subject_id=str(skill),
                detail=(
                    f"read in {sessions} failed or timed-out sub-sessions ({reads} reads) in "
                    f"the last {config.lookback_seconds:,} s: {shown}"
                ),
                action_taken="flagged_skill",
                count=int(sessions),
            )
        )
    return out
