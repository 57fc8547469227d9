"""Acting on findings: pause a task (our database, and with ``apply`` the SQLite source in one
transaction, with the pass's write-back: see :mod:`agent_reflection.cycle.writeback`) and undo it
(``reflect cycle resume``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from agent_reflection.cycle.writeback import (
    SCHEDULER_STORE_NAME,
    STORE_PROBE_SECONDS,
    PlatformWrite,
    RemovedJob,
    Writeback,
    begin_job_removal,
    job_ids,
    platform_connect,
    record_removed,
    restore_jobs,
    touch_paused,
    write_log,
)
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
    written: tuple[PlatformWrite, ...] = ()  # --apply: what each platform file got
    planned: Writeback | None = None  # dry run: what --apply would log

    @property
    def paused(self) -> tuple[str, ...]:
        """Tasks paused in our database by this call."""
        return tuple(t for t in self.task_ids if t not in self.failed) if self.applied else ()

    def lines(self) -> list[str]:
        if not self.applied:
            out = []
            if self.task_ids:
                names = ", ".join(self.task_ids)
                where = "".join(f" and in {s}" for s in self.sqlite_sources)
                out.append(
                    f"DRY RUN: would pause {names} in the database{where}; pass --apply to do it"
                )
            if self.planned is not None:
                out.extend(self.planned.lines_dry())
            return out
        out = [f"paused {', '.join(self.paused)} in the database"] if self.paused else []
        for source, tasks in self.source_paused:
            out.append(
                f"paused {', '.join(tasks) or 'nothing'} in {source}"
                " (undo: reflect cycle resume TASK)"
            )
        for write in self.written:
            out.extend(write.lines())
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


def platform_files(sqlite_sources: Sequence[Path]) -> tuple[str, ...]:
    """The platform SQLite files of a pass, as absolute paths, each once."""
    return tuple(dict.fromkeys(str(p.resolve()) for p in sqlite_sources))


def targets_of(
    con: duckdb.DuckDBPyConnection, task_ids: Sequence[str], sources: Sequence[str]
) -> dict[str, str | None]:
    """The platform file each task's pause goes to: the one it was loaded from when that is
    among ``sources``, else the only source given, else none (a task from a JSONL log). One
    query, and none with fewer than two sources (then the task's origin does not matter)."""
    if len(sources) < 2:
        return dict.fromkeys(task_ids, sources[0] if sources else None)
    rows = con.execute(read_sql("cycle/task_origins.sql"), {"task_ids": list(task_ids)})
    origins = dict(rows.fetchall())
    return {t: origins[t] if origins.get(t) in sources else None for t in task_ids}


def pause_tasks(
    con: duckdb.DuckDBPyConnection,
    task_ids: Sequence[str],
    *,
    apply: bool,
    sqlite_sources: Sequence[Path] = (),
    cycle_run_id: int | None = None,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT_SECONDS,
    writeback: Writeback | None = None,
) -> PauseResult:
    """Pause ``task_ids``; a dry run (``apply=False``) changes nothing and says what it would do.

    With ``apply``, the tasks of each SQLite file are paused in one SQLite transaction
    (``UPDATE tasks SET status = 'paused'`` where active) committed just before our database's;
    if the SQLite side fails (locked for ``lock_timeout`` seconds, read-only, ...) our side is
    rolled back too and those tasks are reported in ``failed``. A task goes to the SQLite file
    it was loaded from when that file is among the sources, else to the only source given.

    ``writeback`` (the pass's findings and tier 2 answer) goes into the same transaction of each
    of its files, with the removal of the paused tasks' scheduler jobs (their job store commits
    just before the file; if the file then fails to commit, the jobs are put back).
    """
    sources = platform_files(sqlite_sources)
    if not apply or (not task_ids and writeback is None):
        return PauseResult(tuple(task_ids), False, sources, planned=writeback)
    groups: dict[str | None, list[str]] = {s: [] for s in (writeback.sources if writeback else ())}
    targets = targets_of(con, task_ids, sources)
    for task_id in task_ids:
        groups.setdefault(targets[task_id], []).append(task_id)
    source_paused: list[tuple[str, tuple[str, ...]]] = []
    written: list[PlatformWrite] = []
    failed: list[str] = []
    errors: list[str] = []
    for target, tasks in groups.items():
        if target is None and not tasks:
            continue
        try:
            paused_there, write = _pause_both(
                con, tasks, target, cycle_run_id, lock_timeout, writeback
            )
        except PlatformWriteFailed as exc:
            failed.extend(tasks)
            errors.append(str(exc))
            continue
        if target is not None and tasks:
            source_paused.append((target, tuple(paused_there)))
        if write is not None:
            written.append(write)
    return PauseResult(
        tuple(task_ids),
        True,
        sources,
        tuple(source_paused),
        tuple(failed),
        "; ".join(errors),
        tuple(written),
    )


def _pause_both(
    con: duckdb.DuckDBPyConnection,
    task_ids: Sequence[str],
    source: str | None,
    cycle_run_id: int | None,
    lock_timeout: float,
    writeback: Writeback | None = None,
) -> tuple[list[str], PlatformWrite | None]:
    now = datetime.now(UTC)
    source_paused: list[str] = []
    sq: sqlite3.Connection | None = None
    js: sqlite3.Connection | None = None
    removed: tuple[RemovedJob, ...] = ()
    write: PlatformWrite | None = None
    try:
        if source is not None:
            sq = platform_connect(Path(source), "rw", lock_timeout, isolation_level=None)
            sq.execute(read_sql("runs/platform_begin_pause.sql"))
            for task_id in task_ids:
                cur = sq.execute(read_sql("runs/platform_pause_task.sql"), [task_id])
                if cur.rowcount:
                    source_paused.append(task_id)
            if writeback is not None:
                write, js, removed = _write_back(
                    con, sq, source, source_paused, writeback, cycle_run_id, lock_timeout, now
                )
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
            if js is not None:
                js.commit()
            if sq is not None:
                try:
                    sq.commit()
                except sqlite3.Error:
                    restore_jobs(removed, lock_timeout)  # the pass did not happen there
                    raise
            con.commit()
        except BaseException:
            con.rollback()
            raise
    except sqlite3.Error as exc:
        raise _platform_error(source or "", exc, lock_timeout) from exc
    finally:
        for open_con in (js, sq):
            if open_con is not None:
                if open_con.in_transaction:
                    open_con.rollback()
                open_con.close()
    return source_paused, write


def _write_back(
    con: duckdb.DuckDBPyConnection,
    sq: sqlite3.Connection,
    source: str,
    source_paused: Sequence[str],
    writeback: Writeback,
    cycle_run_id: int | None,
    lock_timeout: float,
    now: datetime,
) -> tuple[PlatformWrite, sqlite3.Connection | None, tuple[RemovedJob, ...]]:
    """Inside the open transaction on ``sq``: stamp the paused tasks, log the pass, and start
    removing the paused tasks' scheduler jobs (a transaction on the job store, left open)."""
    touch_paused(sq, source_paused)
    logged, present, analysed, note = write_log(sq, source, writeback, source_paused)
    try:
        store = writeback.store_for(source)
    except sqlite3.Error as exc:  # the job store is there but locked: not "no job store"
        named = writeback.scheduler_store or Path(source).parent / SCHEDULER_STORE_NAME
        raise _platform_error(str(named), exc, STORE_PROBE_SECONDS) from exc
    js: sqlite3.Connection | None = None
    removed: tuple[RemovedJob, ...] = ()
    if source_paused and store is None:
        no_store = (
            f"no APScheduler job store ({SCHEDULER_STORE_NAME} with an apscheduler_jobs "
            f"table) beside {source}: only tasks.status changed; a running Wintermute fires "
            "the task's job until it is removed"
        )
        note = f"{note}; {no_store}" if note else no_store
    elif source_paused and store is not None:
        try:
            js, removed = begin_job_removal(store, job_ids(sq, source_paused), lock_timeout)
        except sqlite3.Error as exc:
            raise _platform_error(str(store), exc, lock_timeout) from exc
        # Kept (committed) before the job store commits, so a crash after that commit cannot
        # lose a job: resume puts it back, and restoring a job still there changes nothing.
        record_removed(con, removed, cycle_run_id, now)
    write = PlatformWrite(
        source, logged, present, analysed, str(store) if store else None, removed, note
    )
    return write, js, removed


@dataclass(frozen=True)
class ResumeResult:
    task_id: str
    status: str
    sqlite_source: str | None
    restored_jobs: tuple[RemovedJob, ...] = ()  # scheduler jobs put back in their stores

    def line(self) -> str:
        where = f" and in {self.sqlite_source}" if self.sqlite_source else ""
        jobs = "".join(
            f"; put scheduler job {job.job_id} back in {job.scheduler_store}"
            for job in self.restored_jobs
        )
        return f"resumed {self.task_id} (status {self.status}) in the database{where}{jobs}"


def resume_task(
    con: duckdb.DuckDBPyConnection,
    task_id: str,
    *,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT_SECONDS,
) -> ResumeResult:
    """Undo the cycle's last pause of ``task_id`` here and in the SQLite file it paused, and put
    back the scheduler jobs the cycle removed for it (unless the platform re-created them)."""
    row = con.execute(read_sql("runs/last_task_action.sql"), {"task_id": task_id}).fetchone()
    if row is None or row[0] != "pause":
        raise NotPausedByCycle(
            f"task {task_id!r} is not paused by the reflection cycle (see the task_actions "
            "table); nothing to resume"
        )
    previous = row[1] or "active"
    source = row[2]
    # Jobs first: should the status change then fail, a second resume finds the pause again
    # (and a job already back is left alone).
    restored = _restore_removed_jobs(con, task_id, lock_timeout)
    if source:
        if not Path(source).exists():
            raise ReflectionError(f"{source}: the SQLite file the task was paused in is gone")
        try:
            with closing(platform_connect(Path(source), "rw", lock_timeout)) as sq, sq:
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
    for job in restored:
        con.execute(
            read_sql("cycle/mark_job_restored.sql"),
            {"task_id": task_id, "job_id": job.job_id, "restored_at": datetime.now(UTC)},
        )
    return ResumeResult(task_id, previous, source, restored)


def _restore_removed_jobs(
    con: duckdb.DuckDBPyConnection, task_id: str, lock_timeout: float
) -> tuple[RemovedJob, ...]:
    newest: dict[tuple[str, str], RemovedJob] = {}
    rows = con.execute(read_sql("cycle/removed_jobs_of_task.sql"), {"task_id": task_id})
    for job_id, store, next_run_time, job_state, _removed_at in rows.fetchall():
        job = RemovedJob(task_id, job_id, store, next_run_time, bytes(job_state))
        newest.setdefault((store, job_id), job)  # rows come newest first
    jobs = tuple(newest.values())
    try:
        restore_jobs(jobs, lock_timeout)
    except sqlite3.Error as exc:
        stores = ", ".join(sorted({j.scheduler_store for j in jobs}))
        raise _platform_error(stores, exc, lock_timeout) from exc
    return jobs
