"""Replaying history against a moving clock: what the rules would have said, step by step.

Used by the notebook on exported runs (whose clock is long past): the rules are evaluated at
each step without acting (pure :func:`~agent_reflection.cycle.rules.evaluate`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import duckdb

from agent_reflection.cycle.config import CycleConfig
from agent_reflection.cycle.rules import evaluate, failure_streaks
from agent_reflection.store.db import read_sql


@dataclass(frozen=True)
class ReplayRow:
    """One finding at one clock, or one task's failure streak at one clock."""

    clock: datetime
    rule: str
    subject_type: str
    subject_id: str
    count: int
    detail: str


def span(con: duckdb.DuckDBPyConnection) -> tuple[datetime, datetime]:
    """Earliest and latest ``finished_at`` in run_outcomes."""
    row = con.execute(read_sql("cycle/outcome_time_range.sql")).fetchone()
    if row is None or row[0] is None:
        raise ValueError("run_outcomes is empty: load runs first (reflect load runs FILE)")
    return row[0], row[1]


def clocks(start: datetime, end: datetime, step: timedelta) -> list[datetime]:
    """``start``, ``start + step``, ... up to and including ``end``."""
    out = []
    clock = start
    while clock < end:
        out.append(clock)
        clock += step
    out.append(end)
    return out


def replay(
    con: duckdb.DuckDBPyConnection, config: CycleConfig, at: list[datetime]
) -> tuple[list[ReplayRow], list[ReplayRow]]:
    """(findings, streaks) at every clock in ``at``; nothing is recorded or paused."""
    findings: list[ReplayRow] = []
    streaks: list[ReplayRow] = []
    for clock in at:
        for f in evaluate(con, clock, config):
            findings.append(
                ReplayRow(clock, f.rule, f.subject_type, f.subject_id, f.count, f.detail)
            )
        for task_id, streak in failure_streaks(con, clock, config).items():
            streaks.append(ReplayRow(clock, "streak", "task", task_id, streak, ""))
    return findings, streaks
