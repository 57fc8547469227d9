"""``reflect cycle watch``: follow a SQLite database, a JSONL file or the DuckDB file
``reflect serve`` fills (telemetry, ``otlp``) as it grows.

An asyncio loop sleeps on an :class:`asyncio.Event`. A light watcher task sets it when the
file (or its ``-wal``) changes size or mtime (a ``stat`` every ``change_interval`` seconds, no
reads); the loop also wakes every ``fallback_poll_seconds`` for a full rule run. On a change the
file is loaded again (idempotent: only new rows count; bad rows are rejected and reported, a
load that fails as a whole is reported and retried after ``retry_seconds``) and each new
outcome goes through the :class:`TriggerCounter`: a failure runs the rules at once on its task
and sessions, every ``batch_threshold`` completions run them on everything. A check whose pause
could not be applied (the platform file locked) runs again after ``retry_seconds``.

The DuckDB file is opened for each pass (a load and its checks) and closed after it when the
watcher is given a way to open it (``database``: a function), so other writers (``reflect
load``, ``reflect serve``'s writer) get the file between passes; a pass that cannot open it
(another writer holds it past the lock wait) is reported and retried like a failed load.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb

from agent_reflection.cycle.config import CycleConfig
from agent_reflection.cycle.engine import CycleResult, run_cycle
from agent_reflection.cycle.events import EventSink
from agent_reflection.cycle.rules import Scope
from agent_reflection.cycle.triggers import Check, TriggerCounter
from agent_reflection.errors import ReflectionError
from agent_reflection.load.runs import detect_format, load_runs
from agent_reflection.load.runs.store import NewOutcome
from agent_reflection.serve.cycle_source import is_duckdb, load_telemetry
from agent_reflection.store.db import LoadSummary


def _signature(path: Path) -> tuple[tuple[int, int], ...]:
    out = []
    for candidate in (path, Path(f"{path}-wal")):
        try:
            st = os.stat(candidate)
        except FileNotFoundError:
            out.append((-1, -1))
        else:
            out.append((st.st_size, st.st_mtime_ns))
    return tuple(out)


@dataclass
class Watcher:
    """Follows ``source`` and runs the rules on the triggers; see the module docstring."""

    #: The database: a connection the caller holds open, or a function that opens it (opened
    #: and closed for each pass).
    database: duckdb.DuckDBPyConnection | Callable[[], duckdb.DuckDBPyConnection]
    source: Path
    config: CycleConfig
    apply: bool = False
    fmt: str | None = None
    sink: EventSink | None = None
    on_result: Callable[[CycleResult], None] | None = None
    change_interval: float = 0.1
    #: Told about every load that rejected rows, and every load that failed (e.g. a lock).
    on_load: Callable[[LoadSummary | ReflectionError], None] | None = None
    #: Seconds before a failed load or a check whose pause failed (a locked file) is retried.
    retry_seconds: float = 5.0

    def __post_init__(self) -> None:
        self.counter = TriggerCounter(self.config.batch_threshold)
        self.results: list[CycleResult] = []
        self.started = asyncio.Event()
        self._retry: list[Check] = []
        self._load_failed = False

    async def run(self, stop: asyncio.Event) -> None:
        """Watch until ``stop`` is set. Returns at once when the cycle is disabled."""
        if not self.config.enabled:
            return
        fmt = self.fmt or ("otlp" if is_duckdb(self.source) else detect_format(self.source))
        # The file's signature is taken before the baseline load and ``started`` is set after
        # both: a write at any moment after ``started`` (or during the load) changes the file
        # after its signature, so the watcher sees it (a write during the load is read twice,
        # which an idempotent load makes harmless).
        signature = _signature(self.source)
        with self._connection() as con:
            if con is not None:
                self._load(con, fmt)  # the history so far is the baseline
        wake = asyncio.Event()
        watcher = asyncio.create_task(self._watch_file(wake, stop, signature))
        self.started.set()
        try:
            while not stop.is_set():
                retrying = bool(self._retry) or self._load_failed
                timed_out = False
                try:
                    await asyncio.wait_for(
                        self._first(wake, stop),
                        timeout=self.retry_seconds
                        if retrying
                        else self.config.fallback_poll_seconds,
                    )
                except TimeoutError:
                    timed_out = True
                if stop.is_set():
                    break
                wake.clear()
                with self._connection() as con:
                    if con is None:
                        continue  # reported; retried in retry_seconds
                    checks = self.counter.observe_all(self._load(con, fmt))
                    checks, self._retry = [*self._retry, *checks], []
                    if timed_out and not checks and not retrying:
                        checks = [Check("poll")]
                    for check in checks:
                        self._check(con, check, fmt)
        finally:
            watcher.cancel()

    @contextmanager
    def _connection(self) -> Iterator[duckdb.DuckDBPyConnection | None]:
        """The database for one pass: the caller's connection, or one opened now and closed
        after the pass; None (reported, retried) when it cannot be opened now."""
        if isinstance(self.database, duckdb.DuckDBPyConnection):
            yield self.database
            return
        try:
            con = self.database()
        except ReflectionError as exc:  # another writer holds the file past the lock wait
            self._load_failed = True
            if self.on_load is not None:
                self.on_load(exc)
            yield None
            return
        try:
            yield con
        finally:
            con.close()

    def _load(self, con: duckdb.DuckDBPyConnection, fmt: str) -> tuple[NewOutcome, ...]:
        """Load the source again; bad rows are rejected (and reported), and a load that fails
        as a whole (the file locked or unreadable for now) is reported and retried next time."""
        try:
            if fmt == "otlp":  # the database `reflect serve` fills
                loaded = load_telemetry(con, self.source)
            else:
                loaded = load_runs(con, self.source, fmt)
        except ReflectionError as exc:
            self._load_failed = True
            if self.on_load is not None:
                self.on_load(exc)
            return ()
        self._load_failed = False
        if loaded.summary.rejected and self.on_load is not None:
            self.on_load(loaded.summary)
        return loaded.new_outcomes

    @staticmethod
    async def _first(wake: asyncio.Event, stop: asyncio.Event) -> None:
        waits = [asyncio.create_task(wake.wait()), asyncio.create_task(stop.wait())]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in waits:
                task.cancel()

    async def _watch_file(
        self, wake: asyncio.Event, stop: asyncio.Event, last: tuple[tuple[int, int], ...]
    ) -> None:
        """Set ``wake`` whenever the file's signature differs from ``last`` (taken by the
        caller before its baseline load)."""
        while not stop.is_set():
            await asyncio.sleep(self.change_interval)
            now = _signature(self.source)
            if now != last:
                last = now
                wake.set()

    def _check(self, con: duckdb.DuckDBPyConnection, check: Check, fmt: str) -> None:
        scope = None
        if check.kind == "failure":
            scope = Scope(
                frozenset(s.task_id for s in check.sessions if s.task_id),
                frozenset(s.session_id for s in check.sessions),
            )
        result = run_cycle(
            con,
            self.config,
            trigger=check.kind,
            source=str(self.source),
            sqlite_sources=(self.source,) if fmt == "sqlite" else (),
            apply=self.apply,
            scope=scope,
            sink=self.sink,
        )
        if result.pause.failed:
            self._retry.append(check)  # the pause could not be made: again in retry_seconds
        self.results.append(result)
        if self.on_result is not None:
            self.on_result(result)
