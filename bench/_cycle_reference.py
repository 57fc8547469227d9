"""The design's four tier-1 rules written the way a user would without this package: SQLite
(the standard library's ``sqlite3``) and plain Python, one query per task. ``bench/cycle.py``
times ``reflect cycle run`` against it and checks, before timing, that both give the same
findings (rule, subject, count) on the bench's data.

It follows ``docs/cycle.md``'s rule table for data whose every session is reported by one file
(the bench's shapes): the window ``(now - lookback, now]``, newest first by ``finished_at`` then
``session_id``, failing = failed or timeout, rules in order, a task paused by the first rule is
no longer active for the others.

As a script (a whole process, as a user runs it) it prints one finding per line::

    python bench/_cycle_reference.py FILE.sqlite NOW_ISO LOOKBACK_SECONDS

:func:`copy_to_sqlite` makes the SQLite file from a DuckDB database (the three tables the rules
read, with the indexes a user would add); it is not timed.
"""

from __future__ import annotations

import sqlite3
import sys
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

FAILING = ("failed", "timeout")
#: The rules' limits, as ``CycleConfig``'s defaults (the bench changes only the lookback).
CONSECUTIVE_FAILURE_LIMIT = 3
TIMEOUT_PATTERN_LIMIT = 3
MIN_RESULT_LENGTH = 50
STREAK_SCAN_LIMIT = 10
SKILL_MIN_SESSIONS = 3

SCHEMA = """
CREATE TABLE run_outcomes (session_id TEXT, task_id TEXT, status TEXT, finished_at INTEGER,
                           result_length INTEGER);
CREATE TABLE run_tasks (task_id TEXT PRIMARY KEY, status TEXT, run_count INTEGER,
                        ai_prompt TEXT, last_result_summary TEXT);
CREATE TABLE run_steps (session_id TEXT, action TEXT, skill TEXT);
"""
INDEXES = """
CREATE INDEX outcomes_by_time ON run_outcomes (finished_at);
CREATE INDEX outcomes_by_task ON run_outcomes (task_id, finished_at, session_id);
CREATE INDEX steps_by_session ON run_steps (session_id);
"""


def micros(moment: datetime) -> int:
    return round(moment.timestamp() * 1_000_000)


def copy_to_sqlite(duckdb_path: Path, sqlite_path: Path) -> None:
    """The three tables the rules read, from the DuckDB file into a new SQLite file."""
    import duckdb

    source = duckdb.connect(str(duckdb_path), read_only=True)
    target = sqlite3.connect(sqlite_path)
    target.executescript(SCHEMA)
    queries = {
        "run_outcomes": "SELECT session_id, task_id, status, epoch_us(finished_at), "
        "result_length FROM run_outcomes",
        "run_tasks": "SELECT task_id, status, run_count, ai_prompt, last_result_summary "
        "FROM run_tasks",
        "run_steps": "SELECT session_id, action, skill FROM run_steps",
    }
    for table, query in queries.items():
        cursor = source.execute(query)
        marks = ", ".join("?" * len(cursor.description or ()))
        while rows := cursor.fetchmany(50_000):
            target.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
    target.executescript(INDEXES)
    target.commit()
    target.close()
    source.close()


def evaluate(con: sqlite3.Connection, now: datetime, lookback_seconds: int) -> list[Any]:
    """The findings at ``now``: (rule, subject_id, count), in rule order and by subject."""
    end = micros(now)
    start = micros(now - timedelta(seconds=lookback_seconds))
    window: dict[str, list[tuple[int, str, str, int | None]]] = defaultdict(list)
    for task, session, status, at, length in con.execute(
        "SELECT task_id, session_id, status, finished_at, result_length FROM run_outcomes "
        "WHERE finished_at > ? AND finished_at <= ?",
        (start, end),
    ):
        if task is not None:
            window[task].append((at, session, status, length))
    tasks = {
        row[0]: row[1:]
        for row in con.execute(
            "SELECT task_id, status, run_count, ai_prompt, last_result_summary FROM run_tasks"
        )
    }

    def status_of(task: str) -> str:
        return tasks[task][0] if task in tasks else "active"

    found: list[tuple[str, str, int]] = []
    paused: set[str] = set()
    for task in sorted(window):  # consecutive_failures, over the task's whole history
        newest = con.execute(
            "SELECT status FROM run_outcomes WHERE task_id = ? AND finished_at <= ? "
            "ORDER BY finished_at DESC, session_id DESC LIMIT ?",
            (task, end, STREAK_SCAN_LIMIT),
        ).fetchall()
        streak = 0
        for (status,) in newest:
            if status not in FAILING:
                break
            streak += 1
        if streak >= CONSECUTIVE_FAILURE_LIMIT and status_of(task) == "active":
            paused.add(task)
            found.append(("consecutive_failures", task, streak))
    for task in sorted(window):  # timeout_pattern, inside the window
        if task in paused or status_of(task) != "active":
            continue
        rows = sorted(window[task], reverse=True)
        head = rows[:TIMEOUT_PATTERN_LIMIT]
        if len(rows) >= TIMEOUT_PATTERN_LIMIT and all(r[2] == "timeout" for r in head):
            found.append(("timeout_pattern", task, TIMEOUT_PATTERN_LIMIT))
    for task in sorted(tasks):  # stale_task
        status, runs, prompt, summary = tasks[task]
        if status != "active" or (runs or 0) <= 0 or not (prompt or "").strip(" "):
            continue
        if task in paused:
            continue
        lengths = [r[3] for r in window.get(task, ()) if r[3] is not None]
        if not lengths:  # the newest known result up to the clock, from older history
            last = con.execute(
                "SELECT result_length FROM run_outcomes WHERE task_id = ? AND finished_at <= ? "
                "AND result_length IS NOT NULL ORDER BY finished_at DESC, session_id DESC "
                "LIMIT 1",
                (task, end),
            ).fetchone()
            if last is not None:
                lengths = [last[0]]
            elif con.execute(
                "SELECT 1 FROM run_outcomes WHERE task_id = ? LIMIT 1", (task,)
            ).fetchone():
                continue  # it has outcomes, none of them yet (or none with a length)
            else:
                if len(summary or "") < MIN_RESULT_LENGTH:
                    found.append(("stale_task", task, 0))
                continue
        if max(lengths) < MIN_RESULT_LENGTH:
            found.append(("stale_task", task, len(lengths)))
    failing: dict[str, set[str]] = defaultdict(set)  # session -> its failing tasks in the window
    for task, rows in window.items():
        for _at, session, status, _length in rows:
            if status in FAILING:
                failing[session].add(task)
    per_skill: dict[str, set[tuple[str, str]]] = defaultdict(set)
    sessions = sorted(failing)
    for i in range(0, len(sessions), 500):  # skill_failure_correlation
        chunk = sessions[i : i + 500]
        marks = ", ".join("?" * len(chunk))
        for session, skill in con.execute(
            f"SELECT session_id, skill FROM run_steps WHERE session_id IN ({marks}) "
            "AND action = 'tool_call' AND skill IS NOT NULL",
            chunk,
        ):
            per_skill[skill].update((task, session) for task in failing[session])
    for skill in sorted(per_skill):
        if len(per_skill[skill]) >= SKILL_MIN_SESSIONS:
            found.append(("skill_failure_correlation", skill, len(per_skill[skill])))
    return found


def main() -> None:
    path, now, lookback = sys.argv[1], datetime.fromisoformat(sys.argv[2]), int(sys.argv[3])
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    for rule, subject, count in evaluate(con, now, lookback):
        print(f"{rule}\t{subject}\t{count}")


if __name__ == "__main__":
    main()
