"""Telemetry rows into DuckDB: one transaction per batch, one bulk insert per table.

The batch's rows are registered as Arrow tables and the named queries of ``sql/otlp/`` insert
them by column name: the raw records, Claude Code's typed events and metric points, the session
summaries, the reflection cycle's ``run_outcomes`` / ``run_steps`` / ``run_tasks`` (each tool
result an outcome of its session; see ``sql/otlp/run_outcomes.sql``) and the in-loop
analysis's ``sessions`` / ``tool_calls`` (``sql/otlp/in_loop_*.sql``). Only records not stored
before are inserted anywhere, so writing the same batch twice changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import duckdb
import pyarrow as pa

from agent_reflection.serve.rows import TelemetryRows, merge
from agent_reflection.store.db import read_sql

#: ``loads.source`` and the ``origin`` of the derived run outcomes, steps and tasks.
SOURCE: Final = "otlp"
_TS: Final = pa.timestamp("ns", tz="UTC")
_S: Final = pa.string()
_SCHEMAS: Final[dict[str, pa.Schema]] = {
    "records": pa.schema(
        [
            ("record_key", _S),
            ("signal", _S),
            ("name", _S),
            ("session_id", _S),
            ("ts", _TS),
            ("service_name", _S),
            ("scope_name", _S),
            ("attributes", _S),
            ("resource", _S),
            ("body", _S),
            ("received_at", _TS),
        ]
    ),
    "tool_results": pa.schema(
        [
            ("record_key", _S),
            ("session_id", _S),
            ("ts", _TS),
            ("prompt_id", _S),
            ("event_sequence", pa.int64()),
            ("tool_name", _S),
            ("success", pa.bool_()),
            ("duration_ms", pa.float64()),
            ("error", _S),
            ("decision_type", _S),
            ("decision_source", _S),
            ("tool_parameters", _S),
            ("tool_result_size_bytes", pa.int64()),
        ]
    ),
    "api_requests": pa.schema(
        [
            ("record_key", _S),
            ("session_id", _S),
            ("ts", _TS),
            ("prompt_id", _S),
            ("model", _S),
            ("cost_usd", pa.float64()),
            ("duration_ms", pa.float64()),
            ("input_tokens", pa.int64()),
            ("output_tokens", pa.int64()),
            ("cache_read_tokens", pa.int64()),
            ("cache_creation_tokens", pa.int64()),
        ]
    ),
    "api_errors": pa.schema(
        [
            ("record_key", _S),
            ("session_id", _S),
            ("ts", _TS),
            ("prompt_id", _S),
            ("model", _S),
            ("error", _S),
            ("status_code", _S),
            ("duration_ms", pa.float64()),
            ("attempt", pa.int64()),
        ]
    ),
    "prompts": pa.schema(
        [
            ("record_key", _S),
            ("session_id", _S),
            ("ts", _TS),
            ("prompt_id", _S),
            ("prompt_length", pa.int64()),
            ("prompt", _S),
        ]
    ),
    "tool_decisions": pa.schema(
        [
            ("record_key", _S),
            ("session_id", _S),
            ("ts", _TS),
            ("prompt_id", _S),
            ("tool_name", _S),
            ("decision", _S),
            ("source", _S),
        ]
    ),
    "metric_points": pa.schema(
        [
            ("record_key", _S),
            ("name", _S),
            ("kind", _S),
            ("unit", _S),
            ("temporality", _S),
            ("session_id", _S),
            ("start_ts", _TS),
            ("ts", _TS),
            ("value", pa.float64()),
            ("count", pa.int64()),
            ("model", _S),
            ("type", _S),
            ("attributes", _S),
        ]
    ),
}
#: The batch's new record keys (what ``otlp/insert_records.sql`` returned).
_NEW: Final = "otlp_new"
_INSERTS: Final = (
    "otlp/insert_tool_results.sql",
    "otlp/insert_api_requests.sql",
    "otlp/insert_api_errors.sql",
    "otlp/insert_prompts.sql",
    "otlp/insert_tool_decisions.sql",
    "otlp/insert_metric_points.sql",
    "otlp/upsert_sessions.sql",
    "otlp/run_outcomes.sql",
    "otlp/run_steps.sql",
    "otlp/implicit_tasks.sql",
    "otlp/task_run_counts.sql",
    "otlp/in_loop_sessions.sql",
    "otlp/in_loop_tool_calls_clear.sql",
    "otlp/in_loop_tool_calls.sql",
)


@dataclass(frozen=True)
class Stored:
    """What one batch did: records read and newly stored (the rest were stored before)."""

    read: int
    loaded: int


def store_rows(
    con: duckdb.DuckDBPyConnection, rows: TelemetryRows, load_id: int, received: int
) -> Stored:
    """Insert the batch (inside the caller's transaction). ``received``: the records the
    exports held, duplicates included."""
    rows = merge([rows])  # each record once: one INSERT may not hold a key twice
    names = [f"otlp_batch_{name}" for name in _SCHEMAS]
    for (name, schema), view in zip(_SCHEMAS.items(), names, strict=True):
        con.register(view, pa.Table.from_pylist(list(getattr(rows, name)), schema=schema))
    try:
        new = con.execute(
            read_sql("otlp/insert_records.sql"), {"load_id": load_id}
        ).to_arrow_table()
        con.register(_NEW, new)
        for query in _INSERTS:
            sql = read_sql(query)
            con.execute(sql, {"load_id": load_id} if "$load_id" in sql else None)
    finally:
        for view in [*names, _NEW]:
            con.unregister(view)
    return Stored(read=received, loaded=new.num_rows)
