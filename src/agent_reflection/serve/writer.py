"""The thread that moves acknowledged exports from the spool into DuckDB.

It wakes when a request was spooled (and every ``tick`` seconds), closes the segment being
written and stores the closed segments, up to ``batch_records`` records per transaction; a
segment is deleted only after the transaction holding its rows committed. The database is
opened without waiting for its lock: when another process holds it (or it fails in any other
way) the segments stay on disk and the next attempt, ``retry_seconds`` later, tries again; the
connection is closed whenever the spool is empty, so other ``reflect`` commands (a notebook,
``cycle watch``) get the file between bursts of telemetry.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

from agent_reflection.errors import ReflectionError
from agent_reflection.redact import Redactor, database_redactor
from agent_reflection.serve.decode import SIGNALS
from agent_reflection.serve.rows import Scrub, TelemetryRows, merge, rows_from_request
from agent_reflection.serve.spool import Spool, read_segment
from agent_reflection.serve.store import SOURCE, store_rows
from agent_reflection.store import db


class Writer:
    """Drains ``spool`` into the database at ``db_path``; see the module docstring."""

    def __init__(
        self,
        db_path: Path,
        spool: Spool,
        origin: str,
        *,
        batch_records: int = 50_000,
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
        self.batches = 0
        self.last_error: str | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._con: duckdb.DuckDBPyConnection | None = None
        self._redactor: Redactor | None = None
        self._thread = threading.Thread(target=self._run, name="otlp-writer", daemon=True)

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
                run = self._counted(self._connection(), self.read, self.loaded)
                run.detail["batches"] = self.batches
                run.finish("ok")
            except (ReflectionError, duckdb.Error) as exc:
                self._failed(exc)
        self._close()
        self.spool.close()

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
        try:
            con = self._connection()
            while segments:
                taken: list[Path] = []
                parts: list[TelemetryRows] = []
                records = 0
                while segments and (not taken or records < self.batch_records):
                    segment = segments.pop(0)
                    for frame in read_segment(segment):
                        request = SIGNALS[frame.signal][0].FromString(frame.payload)
                        part = rows_from_request(
                            frame.signal, request, frame.received_ns, self._scrub(con)
                        )
                        parts.append(part)
                        records += len(part.records)
                    taken.append(segment)
                self._commit(con, merge(parts), records)
                for segment in taken:
                    self.spool.done(segment)
        except Exception as exc:  # any failure (lock, disk, a bug): keep the segments, retry
            self._failed(exc)
            self._close()
            return False
        if self.last_error is not None:
            self.on_message(f"database writable again: {self.spool.pending_bytes:,} bytes queued")
            self.last_error = None
        if self.spool.pending_bytes == 0:
            self._close()
        return True

    def _commit(self, con: duckdb.DuckDBPyConnection, rows: TelemetryRows, received: int) -> None:
        if self.run is None:
            self.run = db.start_load(con, SOURCE, self.origin)
        with db.transaction(con):
            loaded = store_rows(con, rows, self.run.load_id)
            self._counted(con, self.read + received, self.loaded + loaded).checkpoint()
        self.read += received
        self.loaded += loaded
        self.batches += 1

    def _scrub(self, con: duckdb.DuckDBPyConnection) -> Scrub:
        """This database's keyed redaction (its key is made on first use): a secret sent as
        telemetry gets the placeholder every other loader of the database gives it."""
        if self._redactor is None:
            self._redactor = database_redactor(con)
        return self._redactor.text

    def _connection(self) -> duckdb.DuckDBPyConnection:
        if self._con is None:
            self._con = db.connect(self.db_path, wait_seconds=0)
        return self._con

    def _counted(self, con: duckdb.DuckDBPyConnection, read: int, loaded: int) -> db.LoadRun:
        """The server run with these counts (every record read is new or already present),
        on ``con`` (the connection is closed between bursts)."""
        assert self.run is not None
        self.run.con = con
        self.run.read, self.run.loaded, self.run.already_present = read, loaded, read - loaded
        return self.run

    def _close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None

    def _failed(self, exc: BaseException) -> None:
        message = str(exc).splitlines()[0]
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
            "batches": self.batches,
            "spooled_bytes": self.spool.pending_bytes,
            "database_error": self.last_error,
        }
