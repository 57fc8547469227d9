"""Acting on findings: pause a task (our database, and with ``apply`` the SQLite source in one
transaction) and undo it (``reflect cycle resume``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from agent_reflection.errors import ReflectionError


class NotPausedByCycle(ReflectionError, LookupError):
    """``resume`` was asked for a task the reflection cycle did not pause."""


@dataclass(frozen=True)
class PauseResult:
    """What a pause did: tasks paused in our database and in the SQLite source."""

    task_ids: tuple[str, ...]
    applied: bool
    sqlite_source: str | None
    source_paused: tuple[str, ...]

    def lines(self) -> list[str]:
        if not self.task_ids:
            return []
        names = ", ".join(self.task_ids)
        if not self.applied:
            where = f" and in {self.sqlite_source}" if self.sqlite_source else ""
            return [f"DRY RUN: would pause {names} in the database{where}; pass --apply to do it"]
        out = [f"paused {names} in the database"]
        if self.sqlite_source:
            out.append(
                f"paused {', '.join(self.source_paused) or 'nothing'} in {self.sqlite_source}"
                " (undo: reflect cycle resume TASK)"
            )
        return out


def pause_tasks(
    con: duckdb.DuckDBPyConnection,
    task_ids: Sequence[str],
    *,
    apply: bool,
    sqlite_source: Path | None = None,
    cycle_run_id: int | None = None,
) -> PauseResult:
    """Pause ``task_ids``; a dry run (``apply=False``) changes nothing and says what it would do.

    With ``apply`` and a SQLite source, every pause of this call is one SQLite transaction
    (``UPDATE tasks SET status = 'paused'`` where active), committed after our database's.
    """
    source = str(sqlite_source.resolve()) if sqlite_source else None
    if not apply or not task_ids:
        return PauseResult(tuple(task_ids), False, source, ())
    now = datetime.now(UTC)
    sq = sqlite3.connect(source, timeout=10, isolation_level=None) if source else None
    source_paused: list[str] = []
    try:
        if sq is not None:
            sq.execute("BEGIN IMMEDIATE")
            for task_id in task_ids:
                cur = sq.execute(
                    "UPDATE tasks SET status = 'paused' WHERE id = ? AND status = 'active'",
                    [task_id],
                )
                if cur.rowcount:
                    source_paused.append(task_id)
        con.execute("BEGIN TRANSACTION")
        try:
            for task_id in task_ids:
                row = con.execute(
                    "SELECT status FROM run_tasks WHERE task_id = ?", [task_id]
                ).fetchone()
                con.execute("UPDATE run_tasks SET status = 'paused' WHERE task_id = ?", [task_id])
                con.execute(
                    "INSERT INTO task_actions VALUES (?, 'pause', ?, ?, ?, ?)",
                    [task_id, row[0] if row else None,
                     source if task_id in source_paused else None, cycle_run_id, now],
                )  # fmt: skip
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        if sq is not None:
            sq.execute("COMMIT")
    except BaseException:
        if sq is not None and sq.in_transaction:
            sq.execute("ROLLBACK")
        raise
    finally:
        if sq is not None:
            sq.close()
    return PauseResult(tuple(task_ids), True, source, tuple(source_paused))


@dataclass(frozen=True)
class ResumeResult:
    task_id: str
    status: str
    sqlite_source: str | None

    def line(self) -> str:
        where = f" and in {self.sqlite_source}" if self.sqlite_source else ""
        return f"resumed {self.task_id} (status {self.status}) in the database{where}"


def resume_task(con: duckdb.DuckDBPyConnection, task_id: str) -> ResumeResult:
    """Undo the cycle's last pause of ``task_id`` here and in the SQLite file it paused."""
    row = con.execute(
        """SELECT action, previous_status, sqlite_source FROM task_actions
           WHERE task_id = ? ORDER BY "at" DESC LIMIT 1""",
        [task_id],
    ).fetchone()
    if row is None or row[0] != "pause":
        raise NotPausedByCycle(
            f"task {task_id!r} is not paused by the reflection cycle (see the task_actions "
            "table); nothing to resume"
        )
    previous = row[1] or "active"
    source = row[2]
    if source:
        if not Path(source).exists():
            raise ReflectionError(f"{source}: the SQLite file the task was paused in is gone")
        with sqlite3.connect(source, timeout=10) as sq:
            sq.execute(
                "UPDATE tasks SET status = ? WHERE id = ? AND status = 'paused'",
                [previous, task_id],
            )
    con.execute("UPDATE run_tasks SET status = ? WHERE task_id = ?", [previous, task_id])
    con.execute(
        "INSERT INTO task_actions VALUES (?, 'resume', 'paused', ?, NULL, ?)",
        [task_id, source, datetime.now(UTC)],
    )
    return ResumeResult(task_id, previous, source)
