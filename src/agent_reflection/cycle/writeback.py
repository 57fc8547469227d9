"""Writing a pass back to the platform it watches, as the platform's own reflection loop would.

On a Wintermute-shaped SQLite file (``data/conversation.db``) a pass with ``--apply``:

* logs every finding in ``interaction_log``: ``action = 'reflection_rule'``,
  ``session = 'system:reflection'``, ``llm = 'rule_engine'``, ``input`` = the rule, ``output`` =
  the finding as JSON (Wintermute's keys plus ``finding_id``, ``rule`` and ``count``);
* logs tier 2's answer: ``action = 'reflection_analysis'``, ``llm`` = the model, ``input`` =
  ``"N finding(s): <ids>"``, ``output`` = the prose cut at 2,000 characters as Wintermute cuts
  it (the whole answer in ``raw_output`` when it was cut);
* pauses tasks (``tasks.status = 'paused'`` and ``updated``, as Wintermute's ``pause_task``) and
  removes each paused task's job from the APScheduler job store (``data/scheduler.db``, table
  ``apscheduler_jobs``), as Wintermute's own pause does: its scheduler never checks a task's
  status, it fires whatever job rows are in that table, so a paused task whose job stayed would
  go on running.

Idempotence: a finding's id hashes its rule, subject and evidence (never the clock), and a row
is inserted only when no row with that id is there, so a pass repeated over the same data adds
nothing. All writes of a pass to one platform file are one SQLite transaction (see
:func:`agent_reflection.cycle.actions.pause_tasks`).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

import duckdb

from agent_reflection.cycle.analysis import Analysis
from agent_reflection.cycle.findings import ReflectionFinding
from agent_reflection.store.db import read_sql

#: The platform's session of the reflection loop (the actions are in sql/cycle/platform_log_*.sql).
SESSION = "system:reflection"
#: Wintermute logs at most this many characters of tier 2's answer in ``output``.
ANALYSIS_OUTPUT_LIMIT = 2000
#: Wintermute's APScheduler job store: ``data/scheduler.db`` beside ``data/conversation.db``.
SCHEDULER_STORE_NAME = "scheduler.db"
SCHEDULER_TABLE = "apscheduler_jobs"


def finding_id(finding: ReflectionFinding) -> str:
    """The finding's identity across passes: its rule, subject and evidence, not the clock."""
    basis = [
        finding.rule,
        finding.subject_type,
        finding.subject_id,
        finding.evidence or finding.detail,
    ]
    digest = hashlib.sha256(json.dumps(basis).encode("utf-8")).hexdigest()
    return f"rf-{digest[:16]}"


def finding_output(finding: ReflectionFinding, action_taken: str) -> str:
    """``interaction_log.output`` of a finding: Wintermute's five keys, then ours."""
    return json.dumps(
        {
            "severity": finding.severity,
            "subject_type": finding.subject_type,
            "subject_id": finding.subject_id,
            "detail": finding.detail,
            "action_taken": action_taken,
            "finding_id": finding_id(finding),
            "rule": finding.rule,
            "count": finding.count,
        }
    )


@dataclass(frozen=True)
class RemovedJob:
    """A scheduler job row as it was before the cycle removed it."""

    task_id: str
    job_id: str
    scheduler_store: str
    next_run_time: float | None
    job_state: bytes


@dataclass(frozen=True)
class PlatformWrite:
    """What one pass wrote to one platform file (all of it in one transaction)."""

    source: str
    findings_logged: int  # new interaction_log rows
    findings_present: int  # logged by an earlier pass: not written again
    analysis_logged: bool
    scheduler_store: str | None
    removed_jobs: tuple[RemovedJob, ...] = ()
    note: str = ""  # why part of the write-back could not happen

    def lines(self) -> list[str]:
        analysis = " and tier 2's analysis" if self.analysis_logged else ""
        out = [
            f"logged {self.findings_logged} finding(s){analysis} in {self.source} "
            f"(interaction_log, session {SESSION}; {self.findings_present} already there)"
        ]
        if self.removed_jobs:
            jobs = ", ".join(j.job_id for j in self.removed_jobs)
            out.append(f"removed scheduler job(s) {jobs} from {self.scheduler_store}")
        if self.note:
            out.append(f"note: {self.note}")
        return out


@dataclass(frozen=True)
class Writeback:
    """What a pass writes back: its findings (each routed to its platform files) and tier 2."""

    findings: Sequence[ReflectionFinding]
    routes: tuple[tuple[str, tuple[int, ...]], ...]  # (file, indices into findings)
    analysis: Analysis
    scheduler_store: Path | None = None  # given explicitly; else scheduler.db beside each file

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(source for source, _ in self.routes)

    def findings_for(self, source: str) -> tuple[ReflectionFinding, ...]:
        for routed, indices in self.routes:
            if routed == source:
                return tuple(self.findings[i] for i in indices)
        return ()

    def store_for(self, source: str) -> Path | None:
        """The APScheduler job store of a platform file, if it has one."""
        if self.scheduler_store is not None:
            return self.scheduler_store
        sibling = Path(source).parent / SCHEDULER_STORE_NAME
        # strict: a store that exists but cannot be read now (locked by the running platform)
        # fails the pass, so the pause is not stored as applied while its job keeps firing
        if sibling.is_file() and SCHEDULER_TABLE in _tables(sibling, strict=True):
            return sibling.resolve()
        return None

    def lines_dry(self) -> list[str]:
        counts = [(s, len(self.findings_for(s))) for s in self.sources]
        return [
            f"DRY RUN: would log {n} finding(s) in {s} (interaction_log)" for s, n in counts if n
        ]


def route(
    findings: Sequence[ReflectionFinding], task_files: dict[str, str | None], sources: Sequence[str]
) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Each finding to the platform files whose debug view should show it: a task's finding to
    the file the task was paused in (``task_files``), any other (a skill) to every file."""
    if not sources:
        return ()  # nothing to route to: no finding need be read
    routes: dict[str, list[int]] = {s: [] for s in sources}
    for i, finding in enumerate(findings):
        if finding.subject_type == "task":
            target = task_files.get(finding.subject_id)
            if target in routes:
                routes[target].append(i)
        else:
            for indices in routes.values():
                indices.append(i)
    return tuple((s, tuple(indices)) for s, indices in routes.items())


def analysed_finding_ids(source: str, lock_timeout: float) -> set[str]:
    """The ids of the findings a logged analysis in a platform file covers (read-only)."""
    path = Path(source)
    if not path.is_file() or "interaction_log" not in _tables(path):
        return set()
    with closing(platform_connect(path, "ro", lock_timeout)) as sq:
        rows = sq.execute(read_sql("cycle/platform_analysed_findings.sql")).fetchall()
    return {token for (text,) in rows for token in str(text).split() if token.startswith("rf-")}


def write_log(
    sq: sqlite3.Connection,
    source: str,
    plan: Writeback,
    paused_here: Sequence[str],
) -> tuple[int, int, bool, str]:
    """Inside the pass's open transaction on ``sq``: log the findings routed to ``source`` and
    tier 2's answer. Returns (new rows, rows already there, analysis logged, note)."""
    tables = {r[0] for r in sq.execute(read_sql("runs/platform_tables.sql"))}
    findings = plan.findings_for(source)
    if "interaction_log" not in tables:
        return 0, 0, False, f"{source} has no interaction_log table: findings not logged there"
    now = time.time()
    logged = 0
    for finding in findings:
        action = finding.action_taken
        if action == "paused_task" and finding.subject_id not in paused_here:
            action = "already_paused"  # as Wintermute says when its pause changed nothing
        cur = sq.execute(
            read_sql("cycle/platform_log_finding.sql"),
            {
                "timestamp": now,
                "rule": finding.rule,
                "output": finding_output(finding, action),
                "finding_id": finding_id(finding),
            },
        )
        logged += cur.rowcount
    analysed = False
    answer = plan.analysis.answer
    if plan.analysis.status == "ok" and findings:
        cut = answer[:ANALYSIS_OUTPUT_LIMIT]
        ids = " ".join(finding_id(f) for f in plan.findings)
        cur = sq.execute(
            read_sql("cycle/platform_log_analysis.sql"),
            {
                "timestamp": now,
                "llm": plan.analysis.model or "unknown",
                "input": f"{len(plan.findings)} finding(s): {ids}",  # as Wintermute's
                "output": cut,
                "raw_output": answer if cut != answer else None,
            },
        )
        analysed = cur.rowcount == 1
    return logged, len(findings) - logged, analysed, ""


def touch_paused(sq: sqlite3.Connection, task_ids: Sequence[str]) -> None:
    """Stamp ``tasks.updated`` of paused tasks, when the platform keeps that column."""
    if not task_ids or "updated" not in _columns(sq, "tasks"):
        return
    now = time.time()
    for task_id in task_ids:
        sq.execute(read_sql("cycle/platform_touch_task.sql"), [now, task_id])


def job_ids(sq: sqlite3.Connection, task_ids: Sequence[str]) -> list[tuple[str, str]]:
    """(task id, scheduler job id) of each task: ``apscheduler_job_id``, else the task id."""
    if "apscheduler_job_id" not in _columns(sq, "tasks"):
        return [(t, t) for t in task_ids]
    out = []
    for task_id in task_ids:
        row = sq.execute(read_sql("cycle/platform_task_job.sql"), [task_id]).fetchone()
        out.append((task_id, str(row[0]) if row else task_id))
    return out


def begin_job_removal(
    store: Path, jobs: Sequence[tuple[str, str]], lock_timeout: float
) -> tuple[sqlite3.Connection, tuple[RemovedJob, ...]]:
    """Open a transaction on the job store and delete the jobs' rows in it (not committed:
    the caller commits it just before the platform file's transaction)."""
    js = platform_connect(store, "rw", lock_timeout, isolation_level=None)
    try:
        js.execute(read_sql("runs/platform_begin_pause.sql"))
        removed = []
        for task_id, job_id in jobs:
            row = js.execute(read_sql("cycle/scheduler_job.sql"), [job_id]).fetchone()
            if row is None:
                continue
            js.execute(read_sql("cycle/scheduler_remove_job.sql"), [job_id])
            removed.append(RemovedJob(task_id, job_id, str(store.resolve()), row[1], bytes(row[2])))
    except BaseException:
        if js.in_transaction:
            js.rollback()
        js.close()
        raise
    return js, tuple(removed)


def restore_jobs(jobs: Sequence[RemovedJob], lock_timeout: float) -> None:
    """Put removed job rows back in their stores (unless the platform re-created them)."""
    for job in jobs:
        store = Path(job.scheduler_store)
        with closing(platform_connect(store, "rw", lock_timeout)) as js, js:
            js.execute(
                read_sql("cycle/scheduler_restore_job.sql"),
                [job.job_id, job.next_run_time, job.job_state, job.job_id],
            )


def record_removed(
    con: duckdb.DuckDBPyConnection,
    jobs: Sequence[RemovedJob],
    cycle_run_id: int | None,
    at: datetime,
) -> None:
    """Keep each removed job whole in our database, for ``reflect cycle resume``."""
    for job in jobs:
        con.execute(
            read_sql("cycle/insert_removed_job.sql"),
            {
                "task_id": job.task_id,
                "job_id": job.job_id,
                "scheduler_store": job.scheduler_store,
                "next_run_time": job.next_run_time,
                "job_state": job.job_state,
                "cycle_run_id": cycle_run_id,
                "removed_at": at,
            },
        )


def platform_connect(
    path: Path,
    mode: str,
    lock_timeout: float,
    isolation_level: Literal["DEFERRED"] | None = "DEFERRED",
) -> sqlite3.Connection:
    """A platform SQLite file (or its job store) opened ``ro`` or ``rw``; never created (a
    vanished file is an error)."""
    uri = f"{path.resolve().as_uri()}?mode={mode}"
    return sqlite3.connect(uri, uri=True, timeout=lock_timeout, isolation_level=isolation_level)


#: Seconds a look at a platform file's tables waits for its lock.
STORE_PROBE_SECONDS = 1.0


def _tables(path: Path, *, strict: bool = False) -> set[str]:
    """The tables of the SQLite file ``path``; none when it cannot be read (``strict``: the
    error is raised, for a file whose absence would be misread)."""
    try:
        with closing(platform_connect(path, "ro", STORE_PROBE_SECONDS)) as sq:
            return {str(r[0]) for r in sq.execute(read_sql("runs/platform_tables.sql"))}
    except sqlite3.Error:
        if strict:
            raise
        return set()


def _columns(sq: sqlite3.Connection, table: str) -> set[str]:
    return {str(r[0]) for r in sq.execute(read_sql("cycle/platform_columns.sql"), [table])}
