"""Write parsed run-log records into DuckDB: idempotent, counted, rejects kept."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from agent_reflection.load.runs.records import OutcomeRecord, Parsed, Reject, StepRecord, TaskRecord
from agent_reflection.redact import Redactor
from agent_reflection.store.db import LoadRun, compose_sql, ensure_schema, read_sql

if TYPE_CHECKING:
    import pyarrow as pa

#: Shortest task prompt an outcome's objective may be matched on (shorter ones match too much).
MIN_PROMPT_MATCH_LENGTH = 20


@cache
def _schemas() -> tuple[pa.Schema, pa.Schema]:
    """The Arrow schemas of new outcomes and new steps. pyarrow (with numpy) is imported here, on
    the first load that stores rows, not by every command that imports this package: a
    ``reflect cycle run`` without sources saved its import (0.1 to 0.2 s a process)."""
    import pyarrow as pa

    ts = pa.timestamp("us", tz="UTC")
    outcomes = pa.schema(
        [
            ("session_id", pa.string()),
            ("task_id", pa.string()),
            ("objective", pa.string()),
            ("status", pa.string()),
            ("started_at", ts),
            ("finished_at", ts),
            ("result_length", pa.int64()),
            ("cost", pa.float64()),
            ("raw", pa.string()),
        ]
    )
    steps = pa.schema(
        [
            ("step_key", pa.string()),
            ("session_id", pa.string()),
            ("seq", pa.int64()),
            ("at", ts),
            ("action", pa.string()),
            ("tool", pa.string()),
            ("input_summary", pa.string()),
            ("output_summary", pa.string()),
            ("skill", pa.string()),
        ]
    )
    return outcomes, steps


def _arrow_table(rows: list[OutcomeRecord] | list[StepRecord], schema: pa.Schema) -> pa.Table:
    """The rows as one Arrow table of ``schema`` (pyarrow is imported by :func:`_schemas`)."""
    import pyarrow as pa

    return pa.Table.from_pylist([r.__dict__ for r in rows], schema=schema)


@dataclass(frozen=True)
class NewOutcome:
    """An outcome this load added (what the watch triggers react to)."""

    session_id: str
    task_id: str | None
    status: str


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
    new = _store_outcomes(con, run, list(outcomes.values()), source_format, origin)
    _store_steps(con, run, list(steps.values()), origin)
    for statement in _statements("runs/implicit_tasks.sql"):
        params = [origin, run.load_id] if "$1" in statement else []
        con.execute(statement, params)
    con.execute(read_sql("runs/match_by_objective.sql"), [MIN_PROMPT_MATCH_LENGTH])
    if new:
        matched = dict(
            con.execute(read_sql("runs/objective_matches.sql"), {"origin": origin}).fetchall()
        )
        new = [
            NewOutcome(n.session_id, n.task_id or matched.get(n.session_id), n.status) for n in new
        ]
    return new


def _store_outcomes(
    con: duckdb.DuckDBPyConnection,
    run: LoadRun,
    rows: list[OutcomeRecord],
    source_format: str,
    origin: str,
) -> list[NewOutcome]:
    if not rows:
        return []
    table = _arrow_table(rows, _schemas()[0])
    con.register("_new_outcomes", table)
    try:
        fresh = con.execute(read_sql("runs/fresh_outcomes.sql"), {"origin": origin}).fetchall()
        con.execute(read_sql("runs/insert_outcomes.sql"), [source_format, origin, run.load_id])
    finally:
        con.unregister("_new_outcomes")
    run.loaded += len(fresh)
    run.already_present += len(rows) - len(fresh)
    return [NewOutcome(str(s), t, str(st)) for s, t, st in fresh]


def _store_steps(
    con: duckdb.DuckDBPyConnection, run: LoadRun, rows: list[StepRecord], origin: str
) -> None:
    if not rows:
        return
    table = _arrow_table(rows, _schemas()[1])
    con.register("_new_steps", table)
    try:
        before = _count_steps(con)
        con.execute(read_sql("runs/insert_steps.sql"), {"origin": origin, "load_id": run.load_id})
        added = _count_steps(con) - before
    finally:
        con.unregister("_new_steps")
    run.loaded += added
    run.already_present += len(rows) - added


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
        con.begin()
        try:
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
            con.commit()
        except BaseException:
            con.rollback()
            raise


def _count_steps(con: duckdb.DuckDBPyConnection) -> int:
    row = con.execute(read_sql("runs/count_steps.sql")).fetchone()
    return int(row[0]) if row else 0


def _statements(name: str) -> list[str]:
    """The statements of a named SQL file (split on ``;`` at line ends; no ``;`` in strings)."""
    return [s.strip() for s in read_sql(name).split(";\n") if s.strip().strip(";").strip()]
