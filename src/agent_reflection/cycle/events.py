"""Events the cycle emits: rows of the ``events`` table, optionally echoed as JSON lines."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from json.encoder import encode_basestring_ascii
from typing import Any

import duckdb

from agent_reflection.store.db import read_sql

FINDING = "reflection.finding"
ANALYSIS_COMPLETED = "reflection.analysis_completed"
SKILL_FLAGGED = "reflection.skill_flagged"
MUTATION_REQUESTED = "reflection.mutation_requested"

#: Receives every event as a dict (``type``, ``at``, ``cycle_run_id``, ``data``).
EventSink = Callable[[dict[str, Any]], None]


def payload_text(data: dict[str, Any]) -> str:
    """The stored text of an event's data (``data`` of the ``events`` table)."""
    return json.dumps(data, default=str, sort_keys=True)


def finding_payload_text(
    rule: str,
    severity: str,
    subject_type: str,
    subject_id: str,
    action_taken: str,
    detail: str,
    dry_run: bool,
) -> str:
    """:func:`payload_text` of a finding event's data, character for character, without a
    dict and an encoder per event (a pass may store tens of thousands): the keys in sorted
    order, each string escaped by the function ``json.dumps`` itself uses."""
    return (
        f'{{"action_taken": {encode_basestring_ascii(action_taken)}, '
        f'"detail": {encode_basestring_ascii(detail)}, '
        f'"dry_run": {"true" if dry_run else "false"}, '
        f'"rule": {encode_basestring_ascii(rule)}, '
        f'"severity": {encode_basestring_ascii(severity)}, '
        f'"subject_id": {encode_basestring_ascii(subject_id)}, '
        f'"subject_type": {encode_basestring_ascii(subject_type)}}}'
    )


def skill_flagged_payload_text(skill_name: str, failure_count: int) -> str:
    """:func:`payload_text` of a skill-flagged event's data (see :func:`finding_payload_text`)."""
    return (
        f'{{"failure_count": {int(failure_count)}, '
        f'"skill_name": {encode_basestring_ascii(skill_name)}}}'
    )


def store_encoded(
    con: duckdb.DuckDBPyConnection,
    types: Sequence[str],
    texts: Sequence[str],
    *,
    cycle_run_id: int | None,
    sink: EventSink | None = None,
    data: Sequence[dict[str, Any]] = (),
) -> None:
    """Store events whose data is already text (:func:`payload_text`), in order, in one
    statement; they share one ``at``. A ``sink`` then gets each event as a dict, in that order,
    with ``data`` (the events' data as dicts, only read when there is a sink)."""
    if not types:
        return
    at = datetime.now(UTC)
    row = con.execute(read_sql("cycle/next_event_ids.sql"), {"n": len(types)}).fetchone()
    event_ids: list[int] = list(row[0]) if row else []
    lists = {
        "event_ids": _SEPARATOR.join(map(str, event_ids)),
        "types": _SEPARATOR.join(types),
        "data": _SEPARATOR.join(texts),
    }
    for name, text in lists.items():
        if text.count(_SEPARATOR) != len(event_ids) - 1:
            raise ValueError(f"an event's {name} holds U+001E, the separator of its list")
    params: dict[str, object] = {**lists, "cycle_run_id": cycle_run_id, "at": at}
    con.execute(read_sql("cycle/insert_events.sql"), params)
    if sink is not None:
        at_text = at.isoformat()
        for event_id, event_type, payload in zip(event_ids, types, data, strict=True):
            sink(
                {
                    "event_id": event_id,
                    "type": event_type,
                    "at": at_text,
                    "cycle_run_id": cycle_run_id,
                    "data": payload,
                }
            )


#: Joins the items of each list bound to sql/cycle/insert_events.sql.
_SEPARATOR = "\x1e"
