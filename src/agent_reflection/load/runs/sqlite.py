"""An agent platform's SQLite database: ``sub_session_outcomes``, ``interaction_log``, ``tasks``.

The tables are read as the platform keeps them (read-only, stdlib ``sqlite3``); any of the three
may be missing. ``sub_session_outcomes.timestamp`` (epoch seconds) is the finish time, and
``timestamp - duration_seconds`` the start; ``task_id`` may be absent (older databases).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from agent_reflection.errors import ReflectionError
from agent_reflection.load.runs.records import (
    OutcomeRecord,
    Parsed,
    Reject,
    StepRecord,
    TaskRecord,
    clip,
    normalise_status,
    optional_float,
    optional_int,
    optional_time,
    parse_time,
    skill_read,
    to_json,
    tool_of,
)
from agent_reflection.names import name_text
from agent_reflection.store.db import compose_sql, read_sql

TABLES = ("sub_session_outcomes", "interaction_log", "tasks")
_SKIP_COLUMNS = {"objective_embedding"}


class NotARunDatabase(ReflectionError, ValueError):
    """A SQLite file has none of the tables a run log needs."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            f"{path}: no sub_session_outcomes, interaction_log or tasks table; "
            "pass an agent platform's database, or use --format jsonl|swe-agent"
        )


def is_sqlite(path: Path) -> bool:
    """True when ``path`` starts with the SQLite header."""
    try:
        with path.open("rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


class PlatformDatabaseUnreadable(ReflectionError, RuntimeError):
    """The platform's SQLite file could not be read (locked, corrupt, not a database)."""


def open_readonly(path: Path) -> sqlite3.Connection:
    # as_uri() percent-encodes the path: a '?' or '#' in a file name stays part of the name
    con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
    con.row_factory = sqlite3.Row
    # Text that is not UTF-8 would stop the whole read; keep the row, mark the bad bytes.
    con.text_factory = lambda raw: raw.decode("utf-8", errors="replace")
    return con


def parse_sqlite(path: Path) -> Iterator[Parsed]:
    """Tasks first, then outcomes, then log rows, each as a record or a :class:`Reject`.

    A row that cannot be read as a record (a missing field, a wrong type, a time outside
    years 1-9999, an integer beyond 64 bits) is a :class:`Reject` naming the file, table,
    rowid and field; it never stops the read. A damaged database (a cut or overwritten file)
    keeps the rows read before the damage and ends with one :class:`Reject`; a locked or
    unopenable one is one :class:`PlatformDatabaseUnreadable` naming the file.
    """
    try:
        yield from _parse_sqlite(path)
    except sqlite3.OperationalError as exc:  # locked, cannot open
        hint = (
            "another process holds a lock on it; try again when it is released"
            if "locked" in str(exc)
            else "is it an agent platform's SQLite database?"
        )
        raise PlatformDatabaseUnreadable(f"{path}: cannot read it ({exc}); {hint}") from exc
    except sqlite3.DatabaseError as exc:  # "malformed", "file is not a database"
        yield Reject(
            str(path),
            None,
            f"damaged SQLite database ({exc}); every row before the damage was read. "
            "Check the file, or recover it: sqlite3 FILE .recover",
            file_error=True,
        )


def _parse_sqlite(path: Path) -> Iterator[Parsed]:
    con = open_readonly(path)
    try:
        present = {r[0] for r in con.execute(read_sql("runs/platform_tables.sql"))}
        if not present & set(TABLES):
            raise NotARunDatabase(path)
        origin = name_text(path.resolve())
        builders: dict[str, Callable[[dict[str, Any], int], Parsed]] = {
            "tasks": _task,
            "sub_session_outcomes": _outcome,
            "interaction_log": lambda d, rowid: _step(d, rowid, origin),
        }
        for table, build in builders.items():
            if table in present:
                for row in con.execute(compose_sql("runs/platform_rows.sql", table=table)):
                    yield _guard(path, table, row, build)
    finally:
        con.close()


def _guard(
    path: Path, table: str, row: sqlite3.Row, build: Callable[[dict[str, Any], int], Parsed]
) -> Parsed:
    data = {k: row[k] for k in row.keys() if k not in _SKIP_COLUMNS}  # noqa: SIM118
    rowid = data.pop("_rowid")
    key = data.get("id")
    where = f"{path}:{table}:rowid={rowid}" + (f":id={key}" if key is not None else "")
    try:
        return build(data, rowid)
    except (ValueError, ArithmeticError, TypeError) as exc:
        return Reject(where, to_json(data), f"{table}.{exc}")


def _outcome(d: dict[str, Any], rowid: int) -> OutcomeRecord:
    if d.get("timestamp") is None:
        raise ValueError("timestamp: missing (the outcome's finish time, epoch seconds)")
    if d.get("status") in (None, ""):
        raise ValueError("status: missing")
    finished = parse_time(d["timestamp"], "timestamp")
    duration = optional_float(d.get("duration_seconds"), "duration_seconds")
    session = d.get("session_id") or f"sqlite-outcome-{d.get('id', rowid)}"
    task_id = d.get("task_id")
    return OutcomeRecord(
        session_id=str(session),
        task_id=str(task_id) if task_id not in (None, "") else None,
        objective=d.get("objective"),
        status=normalise_status(d["status"]),
        started_at=_start(finished, duration),
        finished_at=finished,
        result_length=optional_int(d.get("result_length"), "result_length"),
        cost=optional_float(d.get("cost"), "cost"),
        raw=to_json(d),
    )


def _start(finished: datetime, duration: float | None) -> datetime | None:
    if duration is None:
        return None
    try:
        return finished - timedelta(seconds=duration)
    except (OverflowError, ValueError):
        raise ValueError(
            f"duration_seconds: {duration!r} puts the start outside years 1-9999"
        ) from None


def _step(d: dict[str, Any], rowid: int, origin: str) -> StepRecord:
    session = d.get("session")
    if session in (None, ""):
        raise ValueError("session: missing")
    text = d.get("input")
    text = text if isinstance(text, str) or text is None else str(text)
    tool = tool_of(text)
    return StepRecord(
        step_key=f"sqlite:{origin}#{d.get('id', rowid)}",
        session_id=str(session),
        seq=optional_int(d.get("id", rowid), "id"),
        at=optional_time(d.get("timestamp"), "timestamp"),
        action=str(d.get("action") or ""),
        tool=tool,
        input_summary=clip(text),
        output_summary=clip(d.get("output")),
        skill=skill_read(tool, text) if d.get("action") == "tool_call" else None,
    )


def _task(d: dict[str, Any], rowid: int) -> TaskRecord:
    if d.get("id") in (None, ""):
        raise ValueError("id: missing")
    return TaskRecord(
        task_id=str(d["id"]),
        status=normalise_status(d.get("status") or "active"),
        run_count=optional_int(d.get("run_count"), "run_count"),
        ai_prompt=d.get("ai_prompt"),
        last_result_summary=d.get("last_result_summary"),
    )
