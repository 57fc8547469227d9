"""Load the SubagentStop hook's log of reflection replies into DuckDB (``reflection_replies``).

The hook (``hooks/subagent_stop.py``) appends one JSON object per reply to
``<state dir>/reflection-agent.jsonl``; :func:`parse_reply` turns one line into a row (pure),
:func:`load_reflection_replies` writes the rows with the usual load bookkeeping: a bad line is
rejected with its file, line and field, and ``read = loaded + rejected + already present``.
DDL: ``sql/schema/55_reflection_replies.sql``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from agent_reflection.errors import ReflectionError, json_error_text
from agent_reflection.names import name_text
from agent_reflection.store.db import LoadSummary, begin_load, read_sql

SOURCE = "reflection_replies"
DECISIONS = ("block", "pass", "surface")


class BadReplyLine(ReflectionError, ValueError):
    """A log line that is not a reply record; the message names the field."""


def _optional_str(record: dict[str, Any], name: str) -> str | None:
    value = record.get(name)
    if value is not None and not isinstance(value, str):
        raise BadReplyLine(f"field {name!r} must be a string or null, got {value!r}")
    return value


def _strings(record: dict[str, Any], name: str) -> list[str]:
    value = record.get(name, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadReplyLine(f"field {name!r} must be a list of strings, got {value!r}")
    return value


def parse_reply(line: str) -> dict[str, Any]:
    """One log line as a row (the columns of ``reflection_replies`` it fills, by name);
    :class:`BadReplyLine` names the field that is wrong."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise BadReplyLine(f"not JSON ({json_error_text(exc)})") from None
    if not isinstance(record, dict):
        raise BadReplyLine("must be a JSON object")
    valid = record.get("valid")
    if not isinstance(valid, bool):
        raise BadReplyLine(f"field 'valid' must be true or false, got {valid!r}")
    source = record.get("source")
    if not isinstance(source, str) or not source:
        raise BadReplyLine(f"field 'source' must be a non-empty string, got {source!r}")
    attempt = record.get("attempt")
    if attempt is not None and (isinstance(attempt, bool) or not isinstance(attempt, int)):
        raise BadReplyLine(f"field 'attempt' must be a whole number or null, got {attempt!r}")
    decision = _optional_str(record, "decision")
    if decision is not None and decision not in DECISIONS:
        raise BadReplyLine(f"field 'decision' must be one of {', '.join(DECISIONS)}")
    stamp = _optional_str(record, "recorded_at")
    try:
        recorded_at = datetime.fromisoformat(stamp) if stamp else None
    except ValueError:
        raise BadReplyLine(f"field 'recorded_at' is not an ISO-8601 time: {stamp!r}") from None
    return {
        "reply_key": "sha256:" + hashlib.sha256(line.strip().encode("utf-8")).hexdigest(),
        "recorded_at": recorded_at,
        "session_id": _optional_str(record, "session_id"),
        "agent_id": _optional_str(record, "agent_id"),
        "agent_type": _optional_str(record, "agent_type"),
        "source": source,
        "kind": _optional_str(record, "kind"),
        "valid": valid,
        "problems": _strings(record, "problems"),
        "need_context": _optional_str(record, "need_context"),
        "attempt": attempt,
        "failure_layers": _strings(record, "failure_layers"),
        "decision": decision,
        "text": _optional_str(record, "text") or "",
    }


def load_reflection_replies(
    con: duckdb.DuckDBPyConnection, paths: Sequence[str | Path]
) -> LoadSummary:
    """Load reply logs (``reflection-agent.jsonl`` files); returns the reconciled summary."""
    origin = ", ".join(str(p) for p in paths)
    insert = read_sql("in_loop/insert_reflection_reply.sql")
    with begin_load(con, SOURCE, origin) as run:
        for path in paths:
            source_file = name_text(Path(path).resolve())
            with Path(path).open(encoding="utf-8", errors="replace") as handle:
                for line_no, line in enumerate(handle, 1):
                    if not line.strip():
                        continue
                    run.read += 1
                    try:
                        row = parse_reply(line)
                    except BadReplyLine as exc:
                        run.reject(f"{source_file}:{line_no}", line, str(exc))
                        continue
                    row.update(source_file=source_file, line_no=line_no, load_id=run.load_id)
                    if con.execute(insert, row).fetchall():
                        run.loaded += 1
                    else:
                        run.already_present += 1
    return run.summary()
