"""An agent platform's SQLite database: ``sub_session_outcomes``, ``interaction_log``, ``tasks``.

The tables are read as the platform keeps them (read-only, stdlib ``sqlite3``); any of the three
may be missing. ``sub_session_outcomes.timestamp`` (epoch seconds) is the finish time, and
``timestamp - duration_seconds`` the start; ``task_id`` may be absent (older databases).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import timedelta
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


def open_readonly(path: Path) -> sqlite3.Connection:
    con = sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True, timeout=5)
    con.row_factory = sqlite3.Row
    return con


def parse_sqlite(path: Path) -> Iterator[Parsed]:
    """Tasks first, then outcomes, then log rows, each as a record or a :class:`Reject`.

    A damaged database (a cut or overwritten file) keeps the rows read before the damage and
    ends with one :class:`Reject`; a locked one is an error (OperationalError).
    """
    try:
        yield from _parse_sqlite(path)
    except sqlite3.OperationalError:
        raise
    except sqlite3.DatabaseError as exc:  # "malformed", "file is not a database"
        yield Reject(str(path), None,
                     f"damaged SQLite database ({exc}); every row before the damage was read. "
                     "Check the file, or recover it: sqlite3 FILE .recover")  # fmt: skip


def _parse_sqlite(path: Path) -> Iterator[Parsed]:
    con = open_readonly(path)
    try:
        present = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not present & set(TABLES):
            raise NotARunDatabase(path)
        origin = str(path.resolve())
        if "tasks" in present:
            for row in con.execute("SELECT * FROM tasks ORDER BY rowid"):
                yield _guard(path, "tasks", row, _task)
        if "sub_session_outcomes" in present:
            for row in con.execute("SELECT * FROM sub_session_outcomes ORDER BY rowid"):
                yield _guard(path, "sub_session_outcomes", row, _outcome)
        if "interaction_log" in present:
            for row in con.execute("SELECT rowid AS _rowid, * FROM interaction_log ORDER BY rowid"):
                yield _guard(path, "interaction_log", row, lambda d: _step(d, origin))
    finally:
        con.close()


def _guard(path: Path, table: str, row: sqlite3.Row, build: Any) -> Parsed:
    data = {k: row[k] for k in row.keys() if k not in _SKIP_COLUMNS}  # noqa: SIM118
    key = data.get("id", data.get("_rowid"))
    try:
        record: Parsed = build(data)
        return record
    except ValueError as exc:
        return Reject(f"{path}:{table}:id={key}", to_json(data), f"{table}.{exc}")


def _outcome(d: dict[str, Any]) -> OutcomeRecord:
    if d.get("timestamp") is None:
        raise ValueError("timestamp: missing (the outcome's finish time, epoch seconds)")
    if d.get("status") in (None, ""):
        raise ValueError("status: missing")
    finished = parse_time(d["timestamp"], "timestamp")
    duration = optional_float(d.get("duration_seconds"), "duration_seconds")
    session = d.get("session_id") or f"sqlite-outcome-{d.get('id')}"
    task_id = d.get("task_id")
    return OutcomeRecord(
        session_id=str(session),
        task_id=str(task_id) if task_id not in (None, "") else None,
        objective=d.get("objective"),
        status=normalise_status(d["status"]),
        started_at=finished - timedelta(seconds=duration) if duration is not None else None,
        finished_at=finished,
        result_length=optional_int(d.get("result_length"), "result_length"),
        cost=optional_float(d.get("cost"), "cost"),
        raw=to_json(d),
    )


def _step(d: dict[str, Any], origin: str) -> StepRecord:
    session = d.get("session")
    if session in (None, ""):
        raise ValueError("session: missing")
    text = d.get("input")
    text = text if isinstance(text, str) or text is None else str(text)
    tool = tool_of(text)
    return StepRecord(
        step_key=f"sqlite:{origin}#{d.get('id', d.get('_rowid'))}",
        session_id=str(session),
        seq=optional_int(d.get("id", d.get("_rowid")), "id"),
        at=optional_time(d.get("timestamp"), "timestamp"),
        action=str(d.get("action") or ""),
        tool=tool,
        input_summary=clip(text),
        output_summary=clip(d.get("output")),
        skill=skill_read(tool, text) if d.get("action") == "tool_call" else None,
    )


def _task(d: dict[str, Any]) -> TaskRecord:
    if d.get("id") in (None, ""):
        raise ValueError("id: missing")
    return TaskRecord(
        task_id=str(d["id"]),
        status=normalise_status(d.get("status") or "active"),
        run_count=optional_int(d.get("run_count"), "run_count"),
        ai_prompt=d.get("ai_prompt"),
        last_result_summary=d.get("last_result_summary"),
    )
