"""The receiver's writer: the rows of the next batch are made while the last one is stored,
statements with nothing to read are not run, and DuckDB running out of memory keeps a batch
spooled. A real spool and a real DuckDB file; the exports are Claude Code events made with the
OTLP protobufs."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest

pytest.importorskip("opentelemetry.proto", reason="reflect serve needs the 'serve' extra")

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from agent_reflection.redact import Redactor
from agent_reflection.serve import writer as writer_module
from agent_reflection.serve.rows import TelemetryRows, merge, rows_from_logs
from agent_reflection.serve.spool import Frame, Spool
from agent_reflection.serve.store import (
    _INSERTS,
    _reads_only,
    arrow_tables,
    batch_schemas,
    store_rows,
)
from agent_reflection.serve.writer import Writer
from agent_reflection.store.db import connect, read_sql, registered, start_load

#: Seconds apart of two tool results (each export is one session's few events).
STEP = 10


def export(session: str, first: int, count: int, event: str = "tool_result") -> bytes:
    """``count`` Claude Code events of ``session``, one every :data:`STEP` seconds from
    ``first``, as the exporter's protobuf body."""
    request = ExportLogsServiceRequest()
    scope = request.resource_logs.add().scope_logs.add()
    for i in range(first, first + count):
        record = scope.log_records.add()
        record.time_unix_nano = (1_760_000_000 + i * STEP) * 10**9
        record.body.string_value = f"claude_code.{event}"
        for key, value in (
            ("session.id", session),
            ("tool_name", f"T{i}"),
            ("success", "false" if i % 3 == 0 else "true"),
            ("event.sequence", str(i)),
        ):
            attribute = record.attributes.add()
            attribute.key, attribute.value.string_value = key, value
    return request.SerializeToString()


def spooled(tmp_path: Path, exports: int, per_export: int) -> Spool:
    """A spool holding ``exports`` exports of session s-1, each in a segment of its own."""
    spool = Spool(tmp_path / "spool", segment_bytes=1)
    for n in range(exports):
        spool.append("logs", n, export("s-1", n * per_export, per_export))
    return spool


def table_rows(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of the database, sorted."""
    names = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
    return {name: con.execute(f'SELECT * FROM "{name}" ORDER BY ALL').fetchall() for name in names}


def test_batches_made_ahead_are_stored_in_order_exactly_once(tmp_path: Path) -> None:
    """Eight exports of five tool results, two exports a batch: four batches, each one's rows
    made while the one before is stored. Every record once, the spool empty, the counts
    reconcile, and the records went in in the order they were spooled."""
    writer = Writer(tmp_path / "db.duckdb", spooled(tmp_path, 8, 5), "test", batch_records=10)
    assert writer.drain()
    assert (writer.read, writer.loaded, writer.rejected, writer.batches) == (40, 40, 0, 4)
    assert writer.spool.pending_bytes == 0 and not writer.spool.segments()
    con = writer._connection()
    assert stored_in_order(con, 10) == in_batches(40, 10)
    calls = con.execute("SELECT name, seq FROM tool_calls ORDER BY seq").fetchall()
    assert calls == [(f"T{i}", i + 1) for i in range(40)]
    writer.stop()


def stored_in_order(con: duckdb.DuckDBPyConnection, batch: int) -> list[set[str]]:
    """The tool names of the stored records in the order they were inserted (DuckDB keeps an
    append-only table's rows in insertion order: ``rowid``), ``batch`` at a time (the order
    within one INSERT is its own). The exports were spooled in time order, so this is
    ``T0``, ``T1``, ... only if the batches were stored in spool order (the in-loop numbering
    would not tell: a late batch is numbered again)."""
    rows = con.execute(
        "SELECT json_extract_string(attributes, '$.tool_name') FROM otel_records ORDER BY rowid"
    ).fetchall()
    return [{r[0] for r in rows[i : i + batch]} for i in range(0, len(rows), batch)]


def in_batches(records: int, batch: int) -> list[set[str]]:
    return [{f"T{i}" for i in range(j, min(j + batch, records))} for j in range(0, records, batch)]


class FailingOnce(Writer):
    """A writer whose database goes away once, while its ``fail_at``-th batch is stored (the
    disk, a lock): what the real failure does to the batch, with the next one made ahead."""

    def __init__(self, *args: Any, fail_at: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fail_at, self.calls = fail_at, 0

    def store_batch(self, *args: Any, **kwargs: Any) -> None:
        self.calls += 1
        if self.calls == self.fail_at:
            raise duckdb.IOException("IO Error: the disk went away")
        super().store_batch(*args, **kwargs)


def test_a_batch_that_cannot_be_stored_stays_spooled_with_the_one_made_ahead(
    tmp_path: Path,
) -> None:
    """The second of three batches fails: the first is stored and its segments gone; the
    second's and the third's (made while the second was being stored) stay spooled, and the
    next drain stores them, each record once."""
    spool = spooled(tmp_path, 6, 4)
    writer = FailingOnce(tmp_path / "db.duckdb", spool, "test", batch_records=8, fail_at=2)
    assert not writer.drain()
    assert writer.last_error is not None and "the disk went away" in writer.last_error
    assert (writer.read, writer.loaded, writer.batches) == (8, 8, 1)
    assert len(spool.segments()) == 4  # two batches of two exports each
    assert writer.drain()
    assert (writer.read, writer.loaded, writer.rejected, writer.batches) == (24, 24, 0, 3)
    assert not spool.segments()
    con = writer._connection()
    assert stored_in_order(con, 8) == in_batches(24, 8)
    writer.stop()
    con = duckdb.connect(str(tmp_path / "db.duckdb"))
    assert con.execute("SELECT rows_read, rows_loaded, rows_rejected FROM loads").fetchall() == [
        (24, 24, 0)
    ]


def test_a_row_arrow_refuses_in_a_batch_made_ahead_costs_that_record_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record whose text Arrow cannot encode (as a bug upstream could make) in a batch made
    ahead: the batch is stored record by record when its turn comes, that record rejected with
    the reason and the rest stored; the spool never wedges on it."""
    real = writer_module._frame_rows

    def with_a_broken_record(frame: Frame, redactor: Redactor) -> TelemetryRows:
        rows = real(frame, redactor)
        if frame.received_ns != 2:
            return rows
        broken = dict(rows.records[0], body='"\ud800 not encodable"')
        return dataclasses.replace(rows, records=(broken, *rows.records[1:]))

    monkeypatch.setattr(writer_module, "_frame_rows", with_a_broken_record)
    writer = Writer(tmp_path / "db.duckdb", spooled(tmp_path, 4, 3), "test", batch_records=6)
    assert writer.drain()
    assert (writer.read, writer.loaded, writer.rejected) == (12, 11, 1)
    assert not writer.spool.segments()
    con = writer._connection()
    (reason,) = con.execute("SELECT reason FROM rejected").fetchone() or ("",)
    assert reason.startswith("the database refused the record: ") and "surrogates" in reason
    writer.stop()


@pytest.mark.parametrize(
    ("history", "batch", "skipped"),
    [
        # api requests and errors, prompts, decisions, metric points
        ("user_prompt", "tool_result", 5),
        # and the five read from tool results: typed rows, run outcomes and steps, tasks, counts
        ("tool_result", "user_prompt", 9),
    ],
)
def test_statements_not_run_for_an_empty_batch_table_would_change_nothing(
    history: str, batch: str, skipped: int
) -> None:
    """After a batch of one kind of event, each statement skipped for it (its one batch table
    empty), run anyway, leaves every table as it was."""
    con = connect(":memory:")
    load_id = start_load(con, "otlp", "test").load_id
    earlier = ExportLogsServiceRequest.FromString(export("s-1", 0, 3, history))
    store_rows(con, rows_from_logs(earlier, 0), load_id)
    rows = merge(
        [rows_from_logs(ExportLogsServiceRequest.FromString(export("s-1", 3, 5, batch)), 0)]
    )
    tables = arrow_tables(rows, batch_schemas(con))
    store_rows(con, rows, load_id)
    before = table_rows(con)
    assert before["otel_tool_results"] and before["otel_prompts"] and before["run_outcomes"]
    queries = [q for q in _INSERTS if (t := _reads_only(q)) and tables[t].num_rows == 0]
    assert len(queries) == skipped
    # the batch's records as new, as they were when it was stored
    keys = pa.table({"record_key": [r["record_key"] for r in rows.records]})
    with registered(con, **tables), registered(con, otlp_new=keys):
        for query in queries:
            sql = read_sql(query)
            con.execute(sql, {"load_id": load_id} if "$load_id" in sql else None)
    assert table_rows(con) == before


class Starved(Writer):
    """A writer whose DuckDB may use ``memory_limit`` (a machine short of memory; None: its
    default again)."""

    def __init__(self, *args: Any, memory_limit: str | None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.memory_limit = memory_limit

    def _connection(self) -> duckdb.DuckDBPyConnection:
        con = super()._connection()
        if self.memory_limit is None:
            con.execute("RESET memory_limit")
        else:
            con.execute(f"SET memory_limit = '{self.memory_limit}'")
        return con


def test_a_database_out_of_memory_keeps_the_batch_spooled_and_rejects_nothing(
    tmp_path: Path,
) -> None:
    """DuckDB's own out-of-memory error while a batch is stored is no record's fault: nothing
    goes to ``rejected``, the segments stay spooled and the server says why; with memory again
    the next drain stores every record once."""
    spool = spooled(tmp_path, 4, 500)
    messages: list[str] = []
    writer = Starved(
        tmp_path / "db.duckdb", spool, "test", on_message=messages.append, memory_limit="8MB"
    )
    assert not writer.drain()
    assert writer.last_error is not None and writer.last_error.startswith("Out of Memory Error")
    assert (writer.read, writer.loaded, writer.rejected) == (0, 0, 0)
    assert len(spool.segments()) == 4
    assert any("stay spooled" in m and "Out of Memory" in m for m in messages)
    assert not any("refused a batch" in m for m in messages)  # never taken for bad records
    writer.memory_limit = None
    assert writer.drain()
    assert (writer.read, writer.loaded, writer.rejected) == (2000, 2000, 0)
    assert not spool.segments()
    con = writer._connection()
    assert con.execute("SELECT count(*) FROM otel_records").fetchone() == (2000,)
    assert con.execute("SELECT count(*) FROM rejected").fetchone() == (0,)
    writer.stop()
