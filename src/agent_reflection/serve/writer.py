"""The thread that moves acknowledged exports from the spool into DuckDB.

It wakes when a request was spooled (and every ``tick`` seconds), closes the segment being
written and stores the closed segments, up to ``batch_records`` records per transaction (the
rows of the next batch made by a second thread while one is stored); a segment is deleted only
after the transaction holding its rows committed. The database is opened without waiting for
its lock: when another process holds it (or it fails in any other way) the segments stay on
disk and the next attempt, ``retry_seconds`` later, tries again; the connection is closed
whenever the spool is empty, so other ``reflect`` commands (a notebook, ``cycle watch``) get
the file between bursts of telemetry.

A record the database cannot take never stops the writer: records with times or counts out of
range are set aside while the rows are made (:mod:`agent_reflection.serve.rows`); when the
database still refuses a batch for anything but being unavailable (its lock, the disk, its
memory), the batch is stored record by record and each record it refuses on its own goes to
``rejected`` with the reason, as does an export that no longer decodes. So a spool written
before these rules (one bad record at its head) drains on the next start.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, Final

import duckdb
import pyarrow as pa

from agent_reflection.errors import ReflectionError
from agent_reflection.redact import Redactor, database_redactor
from agent_reflection.serve.decode import SIGNALS
from agent_reflection.serve.rows import (
    TABLES,
    Rejected,
    TelemetryRows,
    merge,
    per_record,
    record_location,
    rows_redacted_in_one_pass,
)
from agent_reflection.serve.spool import Frame, Spool, read_segment
from agent_reflection.serve.store import (
    SOURCE,
    arrow_tables,
    batch_schemas,
    store_rows,
    store_tables,
)
from agent_reflection.store import db

#: One batch to store: the spool segments it was read from, their rows (and as Arrow tables),
#: the records read.
_Batch = tuple[list[Path], TelemetryRows, dict[str, pa.Table] | None, int]
#: Write-ahead log gathered before DuckDB checkpoints (its default is 16 MB).
CHECKPOINT_BYTES: Final = 128 * 2**20
#: Failures that mean the database cannot be written now (its lock, the disk, memory): the batch
#: stays spooled and is retried. Any other failure of a batch is a record the database refuses.
#: DuckDB's out-of-memory error is not the records' fault: taken for a refusal, every record of
#: the batch was tried alone and rejected (2,000 in about two minutes; bench/README.md).
_UNAVAILABLE: Final = (
    duckdb.IOException,
    duckdb.ConnectionException,
    duckdb.OutOfMemoryException,
    OSError,
    MemoryError,
)


class Writer:
    """Drains ``spool`` into the database at ``db_path``; see the module docstring."""

    def __init__(
        self,
        db_path: Path,
        spool: Spool,
        origin: str,
        *,
        batch_records: int = 10_000,
        tick: float = 0.2,
        retry_seconds: float = 1.0,
        on_message: Callable[[str], None] | None = None,
    ) -> None:
        self.db_path = db_path
        self.spool = spool
        self.origin = origin
        self.batch_records = batch_records
        self.tick = tick
        self.retry_seconds = retry_seconds
        self.on_message = on_message or (lambda message: None)
        #: The server run's ``loads`` row, begun with the first batch.
        self.run: db.LoadRun | None = None
        self.read = 0
        self.loaded = 0
        self.rejected = 0
        self.batches = 0
        self.last_error: str | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._con: duckdb.DuckDBPyConnection | None = None
        self._redactor: Redactor | None = None
        self._thread = threading.Thread(target=self._run, name="otlp-writer", daemon=True)
        #: Makes the rows of the next batch while the writer stores the last (:meth:`drain`).
        self._rows_maker = ThreadPoolExecutor(1, thread_name_prefix="otlp-rows")

    def start(self) -> None:
        """Create the database and its tables if it is free, then drain in the background."""
        try:
            self._connection()
        except (ReflectionError, duckdb.Error) as exc:
            self._failed(exc)
        self._close()
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self, timeout: float = 30.0) -> None:
        """Store what is spooled (if the database lets us), close the run's ``loads`` row."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        if self.drain() and self.run is not None:
            try:
                run = self._counted(self._connection(), self.read, self.loaded, self.rejected)
                run.detail["batches"] = self.batches
                run.finish("ok")
            except (ReflectionError, duckdb.Error) as exc:
                self._failed(exc)
        self._close()
        self.spool.close()
        self._rows_maker.shutdown()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.tick)
            self._wake.clear()
            if self._stop.is_set():
                break
            if not self.drain():
                self._stop.wait(self.retry_seconds)

    def drain(self) -> bool:
        """Store every closed segment; False when the database refused (they stay spooled)."""
        segments = self.spool.rotate()
        if not segments:
            self._close()
            return True
        next_batch: Future[_Batch] | None = None
        try:
            con = self._connection()
            make = functools.partial(
                self._next_batch, segments, self._redactor_of(con), batch_schemas(con)
            )
            next_batch = self._rows_maker.submit(make)
            while next_batch is not None:
                taken, rows, tables, records = next_batch.result()
                # the next batch's rows are made while this one is stored: DuckDB lets go of
                # the GIL while it runs, so the two share the cores (``segments`` is the maker's
                # alone until its result is taken)
                next_batch = self._rows_maker.submit(make) if segments else None
                self.store_batch(con, rows, records, tables)
                for segment in taken:
                    self.spool.done(segment)
        except Exception as exc:  # any failure (lock, disk, a bug): keep the segments, retry
            if next_batch is not None:
                wait([next_batch])  # its segments stay spooled; its rows are made again
            self._failed(exc)
            self._close()
            return False
        if self.last_error is not None:
            self.on_message(f"database writable again: {self.spool.pending_bytes:,} bytes queued")
            self.last_error = None
        if self.spool.pending_bytes == 0:
            self._close()
        return True

    def _next_batch(
        self, segments: list[Path], redactor: Redactor, schemas: Mapping[str, pa.Schema]
    ) -> _Batch:
        """The rows of the oldest of ``segments`` (taken from the list) up to
        ``batch_records`` records: (the segments taken, their rows, the rows as Arrow tables in
        ``schemas`` or None when Arrow refuses one, the records read)."""
        taken: list[Path] = []
        parts: list[TelemetryRows] = []
        records = 0
        while segments and (not taken or records < self.batch_records):
            segment = segments.pop(0)
            for frame in read_segment(segment):
                part = _frame_rows(frame, redactor)
                parts.append(part)
                records += len(part.records) + len(part.rejected)
            taken.append(segment)
        rows = merge(parts)
        try:
            tables: dict[str, pa.Table] | None = arrow_tables(rows, schemas)
        except Exception:  # a row Arrow refuses (a bug upstream): store_batch finds which
            tables = None
        return taken, rows, tables, records

    def store_batch(
        self,
        con: duckdb.DuckDBPyConnection,
        batch: TelemetryRows,
        received: int,
        tables: Mapping[str, pa.Table] | None = None,
    ) -> None:
        """Store ``batch`` (``received`` records read; ``tables``: its rows as
        :func:`~agent_reflection.serve.store.arrow_tables`, when made already) and its rejects;
        a record the database refuses goes to ``rejected`` with the reason and the rest is
        stored. Raises only when the database is unavailable (:data:`_UNAVAILABLE`): the caller
        keeps the batch."""
        try:
            self._commit(con, batch, received, tables)
        except _UNAVAILABLE:
            raise
        except Exception as exc:  # a record the database refuses: find it, store the rest
            self._commit_each(con, batch, received, exc)

    def _commit(
        self,
        con: duckdb.DuckDBPyConnection,
        rows: TelemetryRows,
        received: int,
        tables: Mapping[str, pa.Table] | None = None,
    ) -> None:
        """Store ``rows`` (``received`` records read; ``tables`` as in :meth:`store_batch`)
        and their rejects in one transaction."""
        if self.run is None:
            self.run = db.start_load(con, SOURCE, self.origin)
            self.run.redactor = self._redactor  # rejected raw text is redacted too
        rejected = len(rows.rejected)
        try:
            with db.transaction(con):
                loaded = 0
                if rows.records:
                    loaded = (
                        store_rows(con, rows, self.run.load_id)
                        if tables is None
                        else store_tables(con, tables, self.run.load_id)
                    )
                for reject in rows.rejected:
                    self.run.reject(reject.location, reject.raw, reject.reason)
                run = self._counted(
                    con, self.read + received, self.loaded + loaded, self.rejected + rejected
                )
                run.checkpoint()
        except BaseException:
            self.run.discard_rejects()  # rolled back with the transaction
            raise
        self.read += received
        self.loaded += loaded
        self.rejected += rejected
        self.batches += 1

    def _commit_each(
        self,
        con: duckdb.DuckDBPyConnection,
        batch: TelemetryRows,
        received: int,
        refused: Exception,
    ) -> None:
        """Store ``batch``, which the database refused as a whole (``refused``), one record per
        transaction; a record refused on its own goes to ``rejected`` with the reason."""
        self.on_message(
            f"the database refused a batch ({_first_line(refused)}); storing it record by record"
        )
        singles = per_record(batch)
        self._commit(con, TelemetryRows(rejected=batch.rejected), received - len(singles))
        for single in singles:
            try:
                self._commit(con, single, 1)
            except _UNAVAILABLE:
                raise
            except Exception as exc:
                row = single.records[0]
                reason = f"the database refused the record: {_first_line(exc)}"
                raw = json.dumps({name: getattr(single, name) for name in TABLES}, default=str)
                reject = Rejected(record_location(row["signal"], row["record_key"]), raw, reason)
                self._commit(con, TelemetryRows(rejected=(reject,)), 1)

    def _redactor_of(self, con: duckdb.DuckDBPyConnection) -> Redactor:
        """This database's keyed redaction (its key is made on first use): a secret sent as
        telemetry gets the placeholder every other loader of the database gives it."""
        if self._redactor is None:
            self._redactor = database_redactor(con)
        return self._redactor

    def _connection(self) -> duckdb.DuckDBPyConnection:
        if self._con is None:
            self._con = db.connect(self.db_path, wait_seconds=0)
            # one DuckDB thread: the event loop taking exports (and, on a laptop, the agent
            # sending them) need the other cores; on a busy 2-core machine a 20,000-record
            # batch was stored 3x faster so than with DuckDB's default of one per core
            self._con.execute(db.read_sql("core/set_threads.sql"), {"threads": 1})
            # a checkpoint rewrites the primary-key indexes, so at DuckDB's 16 MB of log storing
            # slows as the database grows: 50,000 records into one holding 100,000 took 6.4-6.9 s
            # against 4.5-4.6 s at this threshold (whose peaks were 20-66 MiB higher); 100,000
            # into a new one 18.3 s against 14.9 s (bench/README.md)
            self._con.execute(
                db.read_sql("sidecars/set_checkpoint_threshold.sql"),
                {"value": f"{CHECKPOINT_BYTES // 2**20:d}MB"},
            )
        return self._con

    def _counted(
        self, con: duckdb.DuckDBPyConnection, read: int, loaded: int, rejected: int
    ) -> db.LoadRun:
        """The server run with these counts (every record read is new, rejected or already
        present), on ``con`` (the connection is closed between bursts)."""
        assert self.run is not None
        self.run.con = con
        self.run.read, self.run.loaded, self.run.rejected = read, loaded, rejected
        self.run.already_present = read - loaded - rejected
        return self.run

    def _close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None

    def _failed(self, exc: BaseException) -> None:
        message = _first_line(exc)
        if message != self.last_error:
            self.on_message(
                f"cannot write to {self.db_path} now ({message}); "
                f"{self.spool.pending_bytes:,} bytes stay spooled in {self.spool.directory} "
                f"and are retried every {self.retry_seconds:g} s"
            )
        self.last_error = message

    def status(self) -> dict[str, Any]:
        return {
            "records_read": self.read,
            "records_stored": self.loaded,
            "records_rejected": self.rejected,
            "batches": self.batches,
            "spooled_bytes": self.spool.pending_bytes,
            "database_error": self.last_error,
        }


def _frame_rows(frame: Frame, redactor: Redactor) -> TelemetryRows:
    """The rows of one spooled export, its strings redacted in one pass; an export that no
    longer decodes is one rejected record (it decoded when it was acknowledged: the spool file
    was changed, or a bug)."""
    try:
        request = SIGNALS[frame.signal][0].FromString(frame.payload)
        return rows_redacted_in_one_pass(frame.signal, request, frame.received_ns, redactor)
    except Exception as exc:
        digest = hashlib.sha256(frame.payload).hexdigest()[:32]
        reason = f"the spooled {frame.signal} export cannot be read: {_first_line(exc)}"
        location = f"otlp {frame.signal} export {digest}"
        raw = frame.payload.decode("utf-8", errors="replace")
        return TelemetryRows(rejected=(Rejected(location, raw, reason),))


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0]
