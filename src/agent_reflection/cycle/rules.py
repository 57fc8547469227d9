"""Tier 1: the four rules, as one SQL statement over DuckDB (``sql/cycle/rules.sql``), at a clock.

Order matters, as in the peer: ``consecutive_failures`` runs first and pauses its tasks, and the
later task rules only look at tasks still active, so three straight timeouts give a pause and no
``timeout_pattern`` warning. Evaluation is pure: pauses are simulated here and applied (or only
reported, in a dry run) by :mod:`agent_reflection.cycle.actions`.

The statement returns the findings themselves, in bulk: status, scope and rule order are applied
and every text is built in SQL; Python turns the rows into columns (:class:`Findings`) in one
transposition, with no object per finding.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import duckdb

from agent_reflection.cycle.config import CycleConfig
from agent_reflection.cycle.findings import Findings
from agent_reflection.store.db import read_sql


@dataclass(frozen=True)
class Scope:
    """Restrict a rule run to some tasks and the skills some sessions read (failure trigger)."""

    task_ids: frozenset[str]
    session_ids: frozenset[str]


_RULES_SQL = "cycle/rules.sql"
#: How far back, in lookbacks before the window, the first read of run_outcomes goes. Older
#: history is read again only for tasks this recent past does not settle; the answer is the same
#: either way. Reading more rows in that first scan costs little: its cost is the columns' width.
RECENT_LOOKBACKS = 7


def _rows(
    con: duckdb.DuckDBPyConnection,
    now: datetime,
    config: CycleConfig,
    *,
    min_streak: int,
    scope: Scope | None,
    every_candidate: bool,
) -> list[tuple[Any, ...]]:
    """Rows of ``sql/cycle/rules.sql``: (rule, severity, subject_type, subject_id, detail,
    action_taken, count, evidence, is_finding), in rule order."""
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
        "failure_limit": config.consecutive_failure_limit,
        "lookback_text": f"{config.lookback_seconds:,}",
        "window_text": f"{config.lookback_seconds:,} s before {now.isoformat()}",
        "scope_tasks": None if scope is None else sorted(scope.task_ids),
        "scope_sessions": None if scope is None else sorted(scope.session_ids),
        "every_candidate": every_candidate,
    }
    return con.execute(read_sql(_RULES_SQL), params).fetchall()


def failure_streaks(
    con: duckdb.DuckDBPyConnection, now: datetime, config: CycleConfig
) -> dict[str, int]:
    """task_id → failure streak, for every candidate task (outcomes in the window)."""
    return findings_and_streaks(con, now, config)[1]


def findings_and_streaks(
    con: duckdb.DuckDBPyConnection, now: datetime, config: CycleConfig
) -> tuple[Findings, dict[str, int]]:
    """:func:`evaluate` (no scope) and :func:`failure_streaks` at ``now`` from one run of the
    statement: a replay of many clocks pays its fixed cost once a clock, not twice (about 30 ms
    a run on a history of 63 outcomes, 13 ms of it binding, optimizing and planning)."""
    rows = _rows(con, now, config, min_streak=0, scope=None, every_candidate=True)
    streaks = {row[3]: row[6] for row in rows if row[0] == "consecutive_failures"}
    return Findings.from_rows([row[:-1] for row in rows if row[-1]]), streaks


def evaluate(
    con: duckdb.DuckDBPyConnection,
    now: datetime,
    config: CycleConfig,
    scope: Scope | None = None,
) -> Findings:
    """Every finding of the four rules at clock ``now``, in rule order."""
    rows = _rows(
        con,
        now,
        config,
        min_streak=config.consecutive_failure_limit,
        scope=scope,
        every_candidate=False,
    )
    return Findings.from_rows([row[:-1] for row in rows])
