"""Events the cycle emits: rows of the ``events`` table, optionally echoed as JSON lines."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import duckdb

from agent_reflection.store.db import read_sql

FINDING = "reflection.finding"
ANALYSIS_COMPLETED = "reflection.analysis_completed"
SKILL_FLAGGED = "reflection.skill_flagged"
MUTATION_REQUESTED = "reflection.mutation_requested"

#: Receives every event as a dict (``type``, ``at``, ``cycle_run_id``, ``data``).
EventSink = Callable[[dict[str, Any]], None]


def emit(
    con: duckdb.DuckDBPyConnection,
    event_type: str,
    data: dict[str, Any],
    *,
    cycle_run_id: int | None,
    sink: EventSink | None = None,
) -> dict[str, Any]:
    """Store one event (and hand it to ``sink``); returns it."""
    at = datetime.now(UTC)
    row = con.execute(read_sql("cycle/next_event_id.sql")).fetchone()
    event_id = int(row[0]) if row else 0
    payload = json.dumps(data, default=str, sort_keys=True)
    con.execute(
        read_sql("cycle/insert_event.sql"),
        {
            "event_id": event_id,
            "cycle_run_id": cycle_run_id,
            "type": event_type,
            "at": at,
            "data": payload,
        },
    )
    event = {
        "event_id": event_id,
        "type": event_type,
        "at": at.isoformat(),
        "cycle_run_id": cycle_run_id,
        "data": data,
    }
    if sink is not None:
        sink(event)
    return event


def emit_all(
    con: duckdb.DuckDBPyConnection,
    typed: list[tuple[str, dict[str, Any]]],
    *,
    cycle_run_id: int | None,
    sink: EventSink | None = None,
) -> list[dict[str, Any]]:
    """Store several events, (type, data) in order, in one statement (and hand each to
    ``sink`` in that order); they share one ``at``. Returns them."""
    if not typed:
        return []
    at = datetime.now(UTC)
    row = con.execute(read_sql("cycle/next_event_ids.sql"), {"n": len(typed)}).fetchone()
    event_ids: list[int] = list(row[0]) if row else []
    con.execute(
        read_sql("cycle/insert_events.sql"),
        {
            # one JSON text per list (see sql/cycle/insert_events.sql)
            "event_ids": json.dumps(event_ids),
            "cycle_run_id": cycle_run_id,
            "types": json.dumps([event_type for event_type, _ in typed]),
            "at": at,
            "data": json.dumps(
                [json.dumps(data, default=str, sort_keys=True) for _, data in typed]
            ),
        },
    )
    at_text = at.isoformat()
    out = [
        {
            "event_id": event_id,
            "type": event_type,
            "at": at_text,
            "cycle_run_id": cycle_run_id,
            "data": data,
        }
        for event_id, (event_type, data) in zip(event_ids, typed, strict=True)
    ]
    if sink is not None:
        for event in out:
            sink(event)
    return out
