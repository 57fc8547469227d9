"""Write parsed run-log records into DuckDB: idempotent, counted, rejects kept."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from agent_reflection.load.runs.records import OutcomeRecord, Parsed, Reject, StepRecord, TaskRecord
from agent_reflection.redact import Redactor
from agent_reflection.store.db import (
    LoadRun,
    compose_sql,
    ensure_schema,
    read_sql,
    registered,
    transaction,
)

if TYPE_CHECKING:
    import pyarrow as pa

#: Shortest task prompt an outcome's objective may be matched on (shorter ones match too much).
MIN_PROMPT_MATCH_LENGTH = 20


def _arrow_table(rows: list[OutcomeRecord] | list[StepRecord]) -> pa.Table:
    """The rows as one Arrow table, each column typed as its record field is declared (times
    in microseconds, UTC). pyarrow (with numpy) is imported here, on the first load that stores
    rows, not by every command that imports this package: a ``reflect cycle run`` without
    sources saved its import (0.1 to 0.2 s a process)."""
    import pyarrow as pa

    arrow = {
        "str": pa.string(),
        "int": pa.int64(),
        "float": pa.float64(),
        "datetime": pa.timestamp("us", tz="UTC"),
    }
    schema = pa.schema(
        [(f.name, arrow[str(f.type).split(" | ")[0]]) for f in fields(type(rows[0]))]
    )
    return pa.Table.from_pylist([r.__dict__ for r in rows], schema=schema)


@dataclass(frozen=True)
class NewOutcome:
    """An outcome this load added (what the watch triggers react to)."""

    session_id: str
    task_id: str | None
    status: str


@dataclass(frozen=True)
class EarlierCopy:
    """Records of this load that an earlier load of another file already holds, same content."""

    load_id: int
    origin: str
    records: int


@dataclass(frozen=True)
class SessionOverlap:
    """Sessions this load added that other files report too, with other content."""

    sessions: int  # distinct sessions of this file that another file reports
    same_task: int  # of those, the ones another file reports for the same task
    files: tuple[tuple[str, int], ...]  # (other file, its sessions in common), by file


def merge_copies(rows: Iterable[tuple[int, str, int]]) -> tuple[EarlierCopy, ...]:
    """(load_id, origin, records) rows of outcomes and steps as one copy per earlier load."""
    merged: dict[tuple[int, str], int] = {}
    for load_id, origin, records in rows:
        merged[(load_id, origin)] = merged.get((load_id, origin), 0) + records
    return tuple(EarlierCopy(lid, origin, n) for (lid, origin), n in sorted(merged.items()))


def copies_note(origin: str, copies: tuple[EarlierCopy, ...]) -> str:
    """The warning for records other files already hold (``copies`` not empty)."""
    earlier = ", ".join(f"{c.records:,} in load {c.load_id} ({c.origin})" for c in copies)
    total = sum(c.records for c in copies)
    return (
        f"{origin}: {total:,} record(s) already loaded from another file with the same content: "
        f"{earlier}; counted as already present, not loaded again"
    )


def session_overlap(rows: Iterable[tuple[str, str, bool]]) -> SessionOverlap | None:
    """(other origin, session_id, same_task) rows of ``runs/overlapping_sessions.sql``."""
    per_file: dict[str, set[str]] = {}
    same_task: set[str] = set()
    for other, session_id, same in rows:
        per_file.setdefault(other, set()).add(session_id)
        if same:
            same_task.add(session_id)
    if not per_file:
        return None
    sessions = set().union(*per_file.values())
    files = tuple((other, len(ids)) for other, ids in sorted(per_file.items()))
    return SessionOverlap(len(sessions), len(same_task), files)


def overlap_note(origin: str, overlap: SessionOverlap) -> str:
    """The warning for sessions that other files report too."""
    files = ", ".join(f"{other} ({n:,})" for other, n in overlap.files)
    return (
        f"{origin}: {overlap.sessions:,} session(s) are also reported by other files: {files}. "
        f"{overlap.same_task:,} of them name the same task there: the cycle counts such a "
        "session once, as failed only if every file says failed or timeout (docs/cycle.md)"
    )


def store_records(
    con: duckdb.DuckDBPyConnection,
    run: LoadRun,
    records: Iterable[Parsed],
    *,
    source_format: str,
    origin: str,
    redactor: Redactor | None = None,
) -> list[NewOutcome]:
    """Count, reject or write every record; returns the outcomes that were new.

    ``origin`` (the source file's absolute path) is part of every outcome's and step's key, so
    two files that reuse session ids are both kept. Every text field of every record is
    redacted by ``redactor`` (default: redaction with the public key).
    """
    redactor = redactor or Redactor()
    upgrade_source_keys(con)
    outcomes: dict[str, OutcomeRecord] = {}
    steps: dict[str, StepRecord] = {}
    tasks: list[TaskRecord] = []
    for parsed in records:
        record = redactor.fields(parsed)
        if isinstance(record, Reject):
            run.read += 1
            run.reject(record.location, record.raw, record.reason, file_error=record.file_error)
        elif isinstance(record, TaskRecord):
            if not record.derived:
                run.read += 1
            tasks.append(record)
        elif isinstance(record, OutcomeRecord):
            run.read += 1
            if record.session_id in outcomes:
                run.already_present += 1
            else:
                outcomes[record.session_id] = record
        else:
            run.read += 1
            if record.step_key in steps:
                run.already_present += 1
            else:
                steps[record.step_key] = record
    _store_tasks(con, run, tasks, origin)
    new, copied = _store_outcomes(con, run, list(outcomes.values()), source_format, origin)
    own = [sid for sid in outcomes if sid not in copied]
    step_copies = _store_steps(con, run, list(steps.values()), origin, own)
    outcome_copies = [(load_id, other, 1) for load_id, other in copied.values()]
    for statement in _statements("runs/implicit_tasks.sql"):
        params = [origin, run.load_id] if "$1" in statement else []
        con.execute(statement, params)
    con.execute(read_sql("runs/match_by_objective.sql"), [MIN_PROMPT_MATCH_LENGTH])
    _copies_and_overlaps(con, run, origin, [*outcome_copies, *step_copies], bool(new))
    if new:
        matched = dict(
            con.execute(read_sql("runs/objective_matches.sql"), {"origin": origin}).fetchall()
        )
        new = [
            NewOutcome(n.session_id, n.task_id or matched.get(n.session_id), n.status) for n in new
        ]
    return new


def _copies_and_overlaps(
    con: duckdb.DuckDBPyConnection,
    run: LoadRun,
    origin: str,
    copies: list[tuple[int, str, int]],
    added_outcomes: bool,
) -> None:
    """Warn (``run.detail``) about records other files already hold and about sessions that
    other files report too; record the files of the latter in ``run_overlapping_origins``."""
    warnings: list[str] = []
    merged = merge_copies(copies)
    if merged:
        run.detail["copies_of"] = [c.__dict__ for c in merged]
        warnings.append(copies_note(origin, merged))
    if added_outcomes:
        rows = con.execute(
            read_sql("runs/overlapping_sessions.sql"), {"origin": origin, "load_id": run.load_id}
        ).fetchall()
        overlap = session_overlap(rows)
        if overlap is not None:
            mark_overlapping_origins(con, origin, run.load_id)
            run.detail["overlaps"] = {
                "sessions": overlap.sessions,
                "same_task": overlap.same_task,
                "files": dict(overlap.files),
            }
            warnings.append(overlap_note(origin, overlap))
    if warnings:
        run.detail["warnings"] = [*run.detail.get("warnings", ()), *warnings]


def mark_overlapping_origins(con: duckdb.DuckDBPyConnection, origin: str, load_id: int) -> None:
    """Record ``origin`` and the files that share a session with the outcomes load ``load_id``
    added for it in ``run_overlapping_origins`` (the rules group those files' sessions)."""
    con.execute(
        read_sql("runs/mark_overlapping_origins.sql"), {"origin": origin, "load_id": load_id}
    )


def _store_outcomes(
    con: duckdb.DuckDBPyConnection,
    run: LoadRun,
    rows: list[OutcomeRecord],
    source_format: str,
    origin: str,
) -> tuple[list[NewOutcome], dict[str, tuple[int, str]]]:
    """Insert the outcomes not present yet; returns the new ones and the outcomes another file
    already holds with the same content (session_id → the earliest such load and its file)."""
    if not rows:
        return [], {}
    with registered(con, _new_outcomes=_arrow_table(rows)):
        copies = {
            str(sid): (int(load_id), str(other))
            for sid, load_id, other in con.execute(
                read_sql("runs/outcome_copies.sql"), {"origin": origin}
            ).fetchall()
        }
        fresh = con.execute(read_sql("runs/fresh_outcomes.sql"), {"origin": origin}).fetchall()
        con.execute(read_sql("runs/insert_outcomes.sql"), [source_format, origin, run.load_id])
    run.loaded += len(fresh)
    run.already_present += len(rows) - len(fresh)
    return [NewOutcome(str(s), t, str(st)) for s, t, st in fresh], copies


def _store_steps(
    con: duckdb.DuckDBPyConnection,
    run: LoadRun,
    rows: list[StepRecord],
    origin: str,
    own_sessions: list[str],
) -> list[tuple[int, str, int]]:
    """Insert the steps not present yet; returns, per earlier load, the steps another file
    already holds with the same content. Steps of ``own_sessions`` (whose outcome in this file is
    not a copy) are this file's even when another file has a step with the same content."""
    if not rows:
        return []
    import pyarrow as pa

    with registered(
        con,
        _new_steps=_arrow_table(rows),
        _own_sessions=pa.table({"session_id": pa.array(own_sessions, pa.string())}),
    ):
        copies = con.execute(read_sql("runs/step_copies.sql"), {"origin": origin}).fetchall()
        before = _count_steps(con)
        con.execute(read_sql("runs/insert_steps.sql"), {"origin": origin, "load_id": run.load_id})
        added = _count_steps(con) - before
    run.loaded += added
    run.already_present += len(rows) - added
    return copies


def _store_tasks(
    con: duckdb.DuckDBPyConnection, run: LoadRun, rows: list[TaskRecord], origin: str
) -> None:
    for task in rows:
        current = con.execute(
            read_sql("runs/task_values.sql"), {"task_id": task.task_id}
        ).fetchone()
        values = (task.status, task.run_count, task.ai_prompt, task.last_result_summary)
        paused_by_us = con.execute(read_sql("runs/paused_by_us.sql"), [task.task_id]).fetchone()
        # We paused it in this very file and the file says active again: someone re-enabled it
        # on the platform. Follow the platform (the task is guarded again from this pass on).
        reenabled = (
            paused_by_us is not None and paused_by_us[0] == origin and task.status == "active"
        )
        if current is not None and not reenabled and (tuple(current[:4]) == values or task.derived):
            if not task.derived:
                run.already_present += 1
            continue
        effective = "paused" if paused_by_us and task.status == "active" else task.status
        if reenabled:
            effective = task.status
            con.execute(
                read_sql("runs/insert_task_action.sql"),
                {
                    "task_id": task.task_id,
                    "action": "reenabled",
                    "previous_status": "paused",
                    "sqlite_source": origin,
                    "cycle_run_id": None,
                    "at": datetime.now(UTC),
                },
            )
        con.execute(read_sql("runs/delete_task.sql"), {"task_id": task.task_id})
        con.execute(
            read_sql("runs/insert_task.sql"),
            {
                "task_id": task.task_id,
                "status": effective,
                "source_status": task.status,
                "run_count": task.run_count,
                "ai_prompt": task.ai_prompt,
                "last_result_summary": task.last_result_summary,
                "implicit": task.derived,
                "origin": origin,
                "load_id": run.load_id,
            },
        )
        if not task.derived:
            run.loaded += 1


def upgrade_source_keys(con: duckdb.DuckDBPyConnection) -> None:
    """Re-key a database made before outcomes and steps were keyed by origin (once).

    Origins were then stored as given; relative ones are made absolute against the working
    directory (where ``reflect`` is normally run from), as new loads store them, so that reloading
    a file finds its rows already present.
    """
    for table, old_key in (("run_outcomes", ["session_id"]), ("run_steps", ["step_key"])):
        row = con.execute(read_sql("runs/primary_key.sql"), {"table": table}).fetchone()
        if row is None or list(row[0]) != old_key:
            continue
        old_table = f"{table}_before_origin_key"
        with transaction(con):
            con.execute(compose_sql("runs/rename_old_keyed.sql", table=table, old_table=old_table))
            ensure_schema(con)
            for (given,) in con.execute(
                compose_sql("runs/old_keyed_origins.sql", old_table=old_table)
            ).fetchall():
                if not Path(given).is_absolute():
                    for name in (old_table, "run_tasks"):
                        con.execute(
                            compose_sql("runs/absolute_origin.sql", table=name),
                            {"absolute": str(Path(given).resolve()), "given": given},
                        )
            con.execute(compose_sql("runs/copy_old_keyed.sql", table=table, old_table=old_table))


def _count_steps(con: duckdb.DuckDBPyConnection) -> int:
    row = con.execute(read_sql("runs/count_steps.sql")).fetchone()
    return int(row[0]) if row else 0


def _statements(name: str) -> list[str]:
    """The statements of a named SQL file (split on ``;`` at line ends; no ``;`` in strings)."""
    return [s.strip() for s in read_sql(name).split(";\n") if s.strip().strip(";").strip()]
