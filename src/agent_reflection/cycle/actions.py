"""Acting on findings: pause a task (our database, and with ``apply`` the SQLite source in one
transaction) and undo it (``reflect cycle resume``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import duckdb

from agent_reflection.errors import ReflectionError
from agent_reflection.store.db import read_sql


class NotPausedByCycle(ReflectionError, LookupError):
    """``resume`` was asked for a task the reflection cycle did not pause."""


class PlatformWriteFailed(ReflectionError, RuntimeError):
    """The platform's SQLite file could not be changed (locked past the timeout, read-only...)."""


#: Seconds a pause or resume waits for a lock on the platform's SQLite file by default.
DEFAULT_LOCK_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True)
class PauseResult:
    """What a pause did: tasks paused in our database and in the platform's SQLite files.

    Each task is paused in the SQLite file it was loaded from (or the only one given). Tasks
    whose file could not be written (locked past the timeout, read-only, ...) are in ``failed``,
    with ``error`` saying why: for them neither database changed and nothing is recorded as
    applied; the next pass tries again.
    """

    task_ids: tuple[str, ...]
    applied: bool  # --apply: the pauses were really made (for every task not in ``failed``)
    sqlite_sources: tuple[str, ...]
    source_paused: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (file, tasks paused there)
    failed: tuple[str, ...] = ()
    error: str = ""

    @property
    def paused(self) -> tuple[str, ...]:
        """Tasks paused in our database by this call."""
        return tuple(t for t in self.task_ids if t not in self.failed) if self.applied else ()

    def lines(self) -> list[str]:
        if not self.task_ids:
            return []
        if not self.applied:
            names = ", ".join(self.task_ids)
            where = "".join(f" and in {s}" for s in self.sqlite_sources)
            return [f"DRY RUN: would pause {names} in the database{where}; pass --apply to do it"]
        out = [f"paused {', '.join(self.paused)} in the database"] if self.paused else []
        for source, tasks in self.source_paused:
            out.append(
                f"paused {', '.join(tasks) or 'nothing'} in {source}"
                " (undo: reflect cycle resume TASK)"
            )
        if self.failed:
            out.append(
                f"NOT APPLIED: {', '.join(self.failed)} not paused anywhere; "
                "nothing recorded as applied"
            )
        return out


def _platform_error(source: str, exc: sqlite3.Error, timeout: float) -> PlatformWriteFailed:
    if "locked" in str(exc) or "busy" in str(exc):
        why = (
            f"it is locked by another process (waited {timeout:g} s); nothing was changed, "
            "run again when the lock is released"
        )
    else:
        why = f"{exc}; nothing was changed"
    return PlatformWriteFailed(f"{source}: cannot write the platform database: {why}")


def _connect_rw(
    source: str, lock_timeout: float, isolation_level: Literal["DEFERRED"] | None = "DEFERRED"
) -> sqlite3.Connection:
    """The platform file for writing; never creates it (a vanished file is an error)."""
    uri = f"{Path(source).as_uri()}?mode=rw"
    return sqlite3.connect(uri, uri=True, timeout=lock_timeout, isolation_level=isolation_level)


def pause_tasks(
    con: duckdb.DuckDBPyConnection,
    task_ids: Sequence[str],
    *,
    apply: bool,
    sqlite_source: Path | None = None,
    sqlite_sources: Sequence[Path] = (),
    cycle_run_id: int | None = None,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT_SECONDS,
) -> PauseResult:
    """Pause ``task_ids``; a dry run (``apply=False``) changes nothing and says what it would do.

    With ``apply``, the tasks of each SQLite file are paused in one SQLite transaction
    (``UPDATE tasks SET status = 'paused'`` where active) committed just before our database's;
    if the SQLite side fails (locked for ``lock_timeout`` seconds, read-only, ...) our side is
    rolled back too and those tasks are reported in ``failed``. A task goes to the SQLite file
    it was loaded from when that file is among the sources, else to the only source given.
    """
    given = [*([sqlite_source] if sqlite_source else []), *sqlite_sources]
    sources = tuple(dict.fromkeys(str(p.resolve()) for p in given))
    if not apply or not task_ids:
        return PauseResult(tuple(task_ids), False, sources)
    groups: dict[str | None, list[str]] = {}
    for task_id in task_ids:
        row = con.execute(read_sql("runs/task_origin.sql"), {"task_id": task_id}).fetchone()
        origin = row[0] if row else None
        target = origin if origin in sources else (sources[0] if len(sources) == 1 else None)
        groups.setdefault(target, []).append(task_id)
    source_paused: list[tuple[str, tuple[str, ...]]] = []
    failed: list[str] = []
    errors: list[str] = []
    for target, tasks in groups.items():
        try:
            paused_there = _pause_both(con, tasks, target, cycle_run_id, lock_timeout)
        except PlatformWriteFailed as exc:
            failed.extend(tasks)
            errors.append(str(exc))
            continue
        if target is not None:
            source_paused.append((target, tuple(paused_there)))
    return PauseResult(
        tuple(task_ids), True, sources, tuple(source_paused), tuple(failed), "; ".join(errors)
    )


def _pause_both(
    con: duckdb.DuckDBPyConnection,
    task_ids: Sequence[str],
    source: str | None,
    cycle_run_id: int | None,
    lock_timeout: float,
) -> list[str]:
    now = datetime.now(UTC)
    source_paused: list[str] = []
    sq: sqlite3.Connection | None = None
    try:
        if source is not None:
            sq = _connect_rw(source, lock_timeout, isolation_level=None)
            sq.execute(read_sql("runs/platform_begin_pause.sql"))
            for task_id in task_ids:
                cur = sq.execute(read_sql("runs/platform_pause_task.sql"), [task_id])
                if cur.rowcount:
                    source_paused.append(task_id)
        con.begin()
        try:
            for task_id in task_ids:
                row = con.execute(read_sql("runs/task_status.sql"), {"task_id": task_id}).fetchone()
                con.execute(
                    read_sql("runs/set_task_status.sql"), {"status": "paused", "task_id": task_id}
                )
                con.execute(
                    read_sql("runs/insert_task_action.sql"),
                    {
                        "task_id": task_id,
                        "action": "pause",
                        "previous_status": row[0] if row else None,
                        "sqlite_source": source if task_id in source_paused else None,
                        "cycle_run_id": cycle_run_id,
                        "at": now,
                    },
                )
            if sq is not None:
                sq.commit()
            con.commit()
        except BaseException:
            con.rollback()
            raise
    except sqlite3.Error as exc:
        raise _platform_error(source or "", exc, lock_timeout) from exc
    finally:
        if sq is not None:
            if sq.in_transaction:
                sq.rollback()
            sq.close()
    return source_paused


@dataclass(frozen=True)
class ResumeResult:
    task_id: str
    status: str
    sqlite_source: str | None

    def line(self) -> str:
        where = f" and in {self.sqlite_source}" if self.sqlite_source else ""
        return f"resumed {self.task_id} (status {self.status}) in the database{where}"


def resume_task(
    con: duckdb.DuckDBPyConnection,
    task_id: str,
    *,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT_SECONDS,
) -> ResumeResult:
    """Undo the cycle's last pause of ``task_id`` here and in the SQLite file it paused."""
    row = con.execute(read_sql("runs/last_task_action.sql"), {"task_id": task_id}).fetchone()
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
        try:
            with closing(_connect_rw(source, lock_timeout)) as sq, sq:
                sq.execute(read_sql("runs/platform_resume_task.sql"), [previous, task_id])
        except sqlite3.Error as exc:
            raise _platform_error(source, exc, lock_timeout) from exc
    con.execute(read_sql("runs/set_task_status.sql"), {"status": previous, "task_id": task_id})
    con.execute(
        read_sql("runs/insert_task_action.sql"),
        {
            "task_id": task_id,
            "action": "resume",
            "previous_status": "paused",
            "sqlite_source": source,
            "cycle_run_id": None,
            "at": datetime.now(UTC),
        },
    )
    return ResumeResult(task_id, previous, source)
