"""Replaying history against a moving clock: what the rules would have said, step by step.

Used by the notebook on exported runs (whose clock is long past): the rules are evaluated at
each step without acting (pure :func:`~agent_reflection.cycle.rules.evaluate`).
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import duckdb

from agent_reflection.cycle.config import CycleConfig
from agent_reflection.cycle.rules import findings_and_streaks
from agent_reflection.store.db import read_sql

if TYPE_CHECKING:
    import pandas as pd


#: The columns of :func:`replay`'s tables: a finding, or a task's failure streak, at a clock.
COLUMNS = ["clock", "rule", "subject_type", "subject_id", "count", "detail"]


def span(con: duckdb.DuckDBPyConnection) -> tuple[datetime, datetime]:
    """Earliest and latest ``finished_at`` in run_outcomes."""
    row = con.execute(read_sql("cycle/outcome_time_range.sql")).fetchone()
    if row is None or row[0] is None:
        raise ValueError("run_outcomes is empty: load runs first (reflect load runs FILE)")
    return row[0], row[1]


def clocks(
    start: datetime, end: datetime, step: timedelta, max_clocks: int | None = None
) -> list[datetime]:
    """``start``, ``start + step``, ... up to and including ``end``. With ``max_clocks``, a step
    that would give more clocks is widened (to whole minutes) so that at most that many are
    given: a history of months replays in the same number of passes as one of hours."""
    if max_clocks is not None and max_clocks > 1 and end > start:
        needed = (end - start) / (max_clocks - 1)
        if needed > step:
            step = timedelta(minutes=math.ceil(needed / timedelta(minutes=1)))
    out = []
    clock = start
    while clock < end:
        out.append(clock)
        clock += step
    out.append(end)
    return out


def replay(
    con: duckdb.DuckDBPyConnection, config: CycleConfig, at: list[datetime]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(findings, streaks) at every clock in ``at``, as tables of :data:`COLUMNS`; nothing is
    recorded or paused."""
    import pandas as pd

    findings: list[tuple[object, ...]] = []
    streaks: list[tuple[object, ...]] = []
    for clock in at:
        found, streak_of = findings_and_streaks(con, clock, config)
        findings += (
            (clock, f.rule, f.subject_type, f.subject_id, f.count, f.detail) for f in found
        )
        streaks += ((clock, "streak", "task", task, n, "") for task, n in streak_of.items())
    return pd.DataFrame(findings, columns=COLUMNS), pd.DataFrame(streaks, columns=COLUMNS)
