"""The one-statement Tier-1 SQL against a plain-Python reference of the four rules.

``sql/cycle/rules.sql`` takes shortcuts for speed (history is read only for some tasks, rows are
ordered only for candidates, ties in ``finished_at`` are settled by session_id). Random histories
with many ties, outcomes after the clock and before the window, tasks with and without records
check that the shortcuts never change an answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_reflection.cycle.config import CycleConfig
from agent_reflection.cycle.rules import evaluate, failure_streaks
from agent_reflection.store import db

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
CONFIG = CycleConfig(lookback_seconds=10 * 3600, streak_scan_limit=6)
FAILING = {"failed", "timeout"}
TASKS = ["A", "B", "C", "D"]


@dataclass(frozen=True)
class Outcome:
    session_id: str
    task_id: str | None
    status: str
    hours_before: int  # few distinct values: plenty of ties
    result_length: int | None

    @property
    def at(self) -> datetime:
        return NOW - timedelta(hours=self.hours_before)


@dataclass(frozen=True)
class Task:
    task_id: str
    status: str
    run_count: int
    ai_prompt: str
    summary: str | None


#: outcomes (task, status, hours before, length), tasks, steps (outcome index, skill, action)
HistoryParts = tuple[
    list[tuple[str | None, str, int, int | None]],
    dict[str, tuple[str, int, str, str | None]],
    list[tuple[int, str, str]],
]

outcome_parts = st.tuples(
    st.sampled_from([*TASKS, None]),
    st.sampled_from(["completed", "failed", "timeout", "cancelled"]),
    # hours before the clock: after it, in the window (10 h), before it, and around the
    # horizon of the first read (8 lookbacks = 80 h), so the second read is exercised too
    st.sampled_from([-2, -1, 0, 1, 2, 3, 5, 8, 9, 10, 11, 12, 14, 16, 40, 79, 80, 81, 120]),
    st.one_of(st.none(), st.integers(min_value=0, max_value=90)),
)
task_parts = st.tuples(
    st.sampled_from(["active", "paused"]),
    st.integers(min_value=0, max_value=2),
    st.sampled_from(["", "  ", "write the report"]),
    st.one_of(st.none(), st.text(alphabet="x", max_size=80)),
)
histories = st.tuples(
    st.lists(outcome_parts, max_size=40),
    st.dictionaries(st.sampled_from(TASKS), task_parts),
    st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=39),
            st.sampled_from(["k1", "k2"]),
            st.sampled_from(["tool_call", "step"]),
        ),
        max_size=30,
    ),
)


@cache
def _database() -> duckdb.DuckDBPyConnection:
    return db.connect(":memory:")


def empty_database() -> duckdb.DuckDBPyConnection:
    """One in-memory database for the module (creating the schema for each of 150 examples took
    a fifth of the time), its three tables the rules read emptied for each history."""
    con = _database()
    for table in ("run_outcomes", "run_tasks", "run_steps"):
        con.execute(f"DELETE FROM {table}")
    return con


def insert_rows(
    con: duckdb.DuckDBPyConnection, table: str, row: str, rows: list[list[object]]
) -> None:
    """Insert ``rows`` into ``table`` in one statement, ``row`` (its placeholders) once per row."""
    if rows:
        con.execute(
            f"INSERT INTO {table} VALUES " + ", ".join([row] * len(rows)),
            [value for values in rows for value in values],
        )


def build(
    history: HistoryParts,
) -> tuple[duckdb.DuckDBPyConnection, list[Outcome], dict[str, Task], list[tuple[str, str, str]]]:
    raw_outcomes, raw_tasks, raw_steps = history
    # session ids in random order relative to time, so ties are settled by an arbitrary id
    outcomes = [
        Outcome(f"s{(i * 7919) % 1000:03d}", task, status, hours, length)
        for i, (task, status, hours, length) in enumerate(raw_outcomes)
    ]
    tasks = {tid: Task(tid, *parts) for tid, parts in raw_tasks.items()}
    steps = [
        (outcomes[i].session_id, skill, action)
        for i, skill, action in raw_steps
        if i < len(outcomes)
    ]
    con = empty_database()
    # one INSERT per table (a statement per row was most of this test's time)
    insert_rows(
        con,
        "run_outcomes",
        "(?, ?, 'x', ?, NULL, ?, ?, NULL, 'jsonl', 't', 'task_id', '{}', 0)",
        [[o.session_id, o.task_id, o.status, o.at, o.result_length] for o in outcomes],
    )
    insert_rows(
        con,
        "run_tasks",
        "(?, ?, ?, ?, ?, ?, FALSE, 't', 0)",
        [
            [t.task_id, t.status, t.status, t.run_count, t.ai_prompt, t.summary]
            for t in tasks.values()
        ],
    )
    insert_rows(
        con,
        "run_steps",
        "(?, ?, ?, NULL, ?, 'skill', NULL, NULL, ?, 't', 0)",
        [[f"k{n}", session, n, action, skill] for n, (session, skill, action) in enumerate(steps)],
    )
    return con, outcomes, tasks, steps


def newest_first(rows: list[Outcome]) -> list[Outcome]:
    return sorted(rows, key=lambda o: (o.at, o.session_id), reverse=True)


def reference(
    outcomes: list[Outcome], tasks: dict[str, Task], steps: list[tuple[str, str, str]]
) -> tuple[dict[str, int], set[tuple[str, str, int, str]]]:
    """(streak per candidate, {(rule, subject, count, sessions)}) straight from the rules' text."""
    start = NOW - timedelta(seconds=CONFIG.lookback_seconds)
    upto_now = [o for o in outcomes if o.at <= NOW]
    window = [o for o in upto_now if o.at > start]
    candidates = sorted({o.task_id for o in window if o.task_id is not None})
    status = {tid: tasks[tid].status if tid in tasks else "active" for tid in candidates}
    streaks: dict[str, int] = {}
    found: set[tuple[str, str, int, str]] = set()
    paused: set[str] = set()
    for tid in candidates:
        ordered = newest_first([o for o in upto_now if o.task_id == tid])
        tail: list[Outcome] = []
        for o in ordered[: CONFIG.streak_scan_limit]:
            if o.status not in FAILING:
                break
            tail.append(o)
        streaks[tid] = len(tail)
        if len(tail) >= CONFIG.consecutive_failure_limit and status[tid] == "active":
            paused.add(tid)
            found.add(
                ("consecutive_failures", tid, len(tail), ", ".join(o.session_id for o in tail))
            )
    limit = CONFIG.timeout_pattern_limit
    for tid in candidates:
        ordered = newest_first([o for o in window if o.task_id == tid])
        head = ordered[:limit]
        if (
            len(ordered) >= limit
            and all(o.status == "timeout" for o in head)
            and status[tid] == "active"
            and tid not in paused
        ):
            found.add(("timeout_pattern", tid, limit, ""))
    for tid, task in tasks.items():
        if (
            task.status != "active"
            or task.run_count <= 0
            or not task.ai_prompt.strip()
            or tid in paused
        ):
            continue
        mine = [o for o in outcomes if o.task_id == tid]
        known = [
            o.result_length for o in window if o.task_id == tid and o.result_length is not None
        ]
        if known:
            results, longest = len(known), max(known)
        elif mine:
            with_length = newest_first(
                [o for o in upto_now if o.task_id == tid and o.result_length is not None]
            )
            if not with_length:
                continue
            results, longest = 1, with_length[0].result_length or 0
        else:
            results, longest = 0, len(task.summary or "")
        if longest < CONFIG.min_result_length:
            found.add(("stale_task", tid, results, ""))
    failed = {o.session_id for o in window if o.status in FAILING}
    by_skill: dict[str, set[str]] = {}
    for session, skill, action in steps:
        if action == "tool_call" and session in failed:
            by_skill.setdefault(skill, set()).add(session)
    for skill, sessions in by_skill.items():
        if len(sessions) >= CONFIG.skill_failure_min:
            found.add(("skill_failure_correlation", skill, len(sessions), ""))
    return streaks, found


def observed(con: duckdb.DuckDBPyConnection) -> set[tuple[str, str, int, str]]:
    out = set()
    for f in evaluate(con, NOW, CONFIG):
        sessions = ""
        if f.rule == "consecutive_failures":
            sessions = f.detail.split("): ", 1)[1].rsplit("; pause", 1)[0]
        out.add((f.rule, f.subject_id, f.count, sessions))
    return out


@pytest.mark.slow(reason="150 Hypothesis histories, each in DuckDB and the reference")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories)
def test_rules_match_the_reference(history: HistoryParts) -> None:
    con, outcomes, tasks, steps = build(history)
    streaks, expected = reference(outcomes, tasks, steps)
    assert failure_streaks(con, NOW, CONFIG) == streaks
    assert observed(con) == expected


def test_ties_are_settled_by_session_id() -> None:
    """Two outcomes at the same instant: the greater session_id counts as the newer one."""
    history: HistoryParts = (
        [("A", "failed", 1, 10), ("A", "completed", 1, 10), ("A", "failed", 2, 10)],
        {},
        [],
    )
    con, outcomes, _tasks, _steps = build(history)
    assert [o.session_id for o in outcomes[:2]] == ["s000", "s919"]
    # s919 (completed) is newer than s000 (failed) at the same instant: no streak
    assert failure_streaks(con, NOW, CONFIG) == {"A": 0}
    con.execute("UPDATE run_outcomes SET status = 'failed' WHERE session_id = 's919'")
    con.execute("UPDATE run_outcomes SET status = 'completed' WHERE session_id = 's000'")
    assert failure_streaks(con, NOW, CONFIG) == {"A": 1}
