"""Telemetry rows into DuckDB: one transaction per batch, one bulk insert per table.

The batch's rows are registered as Arrow tables and the named queries of ``sql/otlp/`` insert
them by column name: the raw records, Claude Code's typed events and metric points, the session
summaries, the reflection cycle's ``run_outcomes`` / ``run_steps`` / ``run_tasks`` (each tool
result an outcome of its session; see ``sql/otlp/run_outcomes.sql``) and the in-loop
analysis's ``sessions`` / ``tool_calls`` (``sql/otlp/in_loop_*.sql``). Only records not stored
before are inserted anywhere, so writing the same batch twice changes nothing.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Final

import duckdb
import pyarrow as pa

from agent_reflection.serve.rows import TABLES, TelemetryRows
from agent_reflection.store.db import read_sql, registered

#: ``loads.source`` and the ``origin`` of the derived run outcomes, steps and tasks.
SOURCE: Final = "otlp"
#: The Arrow type of each column type of the ``otel_*`` tables (``sql/schema/70_otlp.sql``):
#: times arrive as nanoseconds since the epoch, JSON as text.
_ARROW_TYPES: Final = {
    "VARCHAR": pa.string(),
    "JSON": pa.string(),
    "TIMESTAMP WITH TIME ZONE": pa.timestamp("ns", tz="UTC"),
    "BIGINT": pa.int64(),
    "DOUBLE": pa.float64(),
    "BOOLEAN": pa.bool_(),
}
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


def store_rows(con: duckdb.DuckDBPyConnection, rows: TelemetryRows, load_id: int) -> int:
    """Insert the batch (inside the caller's transaction); the records newly stored (the rest
    were stored before). ``rows``: each record once (as :func:`merge` gives them: one INSERT
    may not hold a key twice)."""
    return store_tables(con, arrow_tables(rows, batch_schemas(con)), load_id)


def arrow_tables(rows: TelemetryRows, schemas: Mapping[str, pa.Schema]) -> dict[str, pa.Table]:
    """``rows`` as the Arrow tables the named queries read (``otlp_batch_<table>``), in the
    ``schemas`` of :func:`batch_schemas`."""
    return {
        f"otlp_batch_{name}": pa.Table.from_pylist(list(getattr(rows, name)), schema=schema)
        for name, schema in schemas.items()
    }


def store_tables(
    con: duckdb.DuckDBPyConnection, tables: Mapping[str, pa.Table], load_id: int
) -> int:
    """:func:`store_rows` of rows already made into :func:`arrow_tables`."""
    with registered(con, **tables):
        new = con.execute(
            read_sql("otlp/insert_records.sql"), {"load_id": load_id}
        ).to_arrow_table()
        with registered(con, otlp_new=new):  # the batch's new record keys
            for query in _INSERTS:
                only = _reads_only(query)
                if only and tables[only].num_rows == 0:
                    continue  # planning alone took 3-4 ms a statement
                sql = read_sql(query)
                con.execute(sql, {"load_id": load_id} if "$load_id" in sql else None)
    return int(new.num_rows)


@functools.cache
def _reads_only(query: str) -> str | None:
    """The batch table a named query reads, when it reads only one: every row such a query
    writes (or changes) comes from that table, so it is skipped when the table is empty
    (tests/test_serve_writer.py runs the skipped ones and sees nothing change). None when it
    reads several: ``in_loop_tool_calls_clear.sql`` also clears sessions a transcript was
    loaded for since, whatever the batch holds."""
    named = set(re.findall(r"\botlp_batch_\w+", read_sql(query)))
    return named.pop() if len(named) == 1 else None


def batch_schemas(con: duckdb.DuckDBPyConnection) -> dict[str, pa.Schema]:
    """The Arrow shape of each :class:`TelemetryRows` batch: the columns of its ``otel_*``
    table, as the DDL declares them."""
    columns: dict[str, list[tuple[str, pa.DataType]]] = {}
    for table, column, kind in con.execute(read_sql("otlp/batch_columns.sql")).fetchall():
        columns.setdefault(table.removeprefix("otel_"), []).append((column, _ARROW_TYPES[kind]))
    return {name: pa.schema(columns[name]) for name in TABLES}
