"""Load reflection.v1 sidecars into the ``reflections`` table: fast, idempotent, nothing lost.

:func:`load_sidecars` reads files, folders and globs (see
:mod:`agent_reflection.load.sidecars.files`), validates every file against reflection.v1
(:mod:`agent_reflection.load.sidecars.rows`), inserts valid records in batches through an Arrow
table registered on the connection (an anti-join skips records already stored: the primary key
is the SHA-256 of the canonical JSON), and keeps each invalid file in ``rejected`` with its
JSON path and reason. Counts reconcile: files read = loaded + rejected + already present.

Files are parsed by a pool of worker processes (one per core, at most :data:`MAX_WORKERS`)
when there is more than one chunk of them; the main process only inserts. Work is streamed
with a bounded number of chunks in flight, so memory stays flat for a million files.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import time
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

import duckdb

from agent_reflection.errors import ReflectionError
from agent_reflection.load.parent_watch import die_with_parent
from agent_reflection.load.sidecars.files import (
    DEFAULT_PATTERN,
    SidecarFiles,
    describe,
    missing_paths,
)
from agent_reflection.load.sidecars.rows import (
    COLUMNS,
    MAX_SIDECAR_BYTES,
    ChunkResult,
    Reject,
    process_files,
    sidecar_row,
)
from agent_reflection.redact import database_redactor
from agent_reflection.reflection.columns import render
from agent_reflection.reflection.fields import leaves
from agent_reflection.store.db import (
    LoadRun,
    LoadSummary,
    begin_load,
    read_sql,
    registered,
    transaction,
)

if TYPE_CHECKING:
    from agent_reflection.reflection.record import Reflection

SOURCE = "sidecars"
#: Files handed to a worker at a time.
CHUNK_FILES = 1000
#: Valid records inserted per statement.
BATCH_ROWS = 16_000
#: Rows per transaction. Larger transactions (a whole 122,880-row group) save ~30% of the
#: insert's CPU but DuckDB then holds every Arrow batch until commit: one batch per
#: transaction keeps a million-file load well under 1 GiB.
COMMIT_ROWS = BATCH_ROWS
#: DuckDB's memory limit during a load, plus INDEX_BYTES_PER_ROW per row already stored.
LOAD_MEMORY_BASE = 256 * 2**20
INDEX_BYTES_PER_ROW = 256
#: Write-ahead log size that triggers a checkpoint during a load (DuckDB's default: 16 MB).
LOAD_CHECKPOINT_BYTES = 128 * 2**20
#: Worker processes at most (the loader is CPU-bound on parsing; more cores help little
#: beyond the insert's own pace).
MAX_WORKERS = 4
#: Chunks parsed ahead while the main process inserts a batch (bounds memory: ~1.5 MB each).
_WINDOW = BATCH_ROWS // CHUNK_FILES


class NoPathsGiven(ReflectionError, ValueError):
    """``load_sidecars`` was called without any path."""

    def __init__(self) -> None:
        super().__init__("no path given: name sidecar files, folders or globs to load")


class SidecarPathNotFound(ReflectionError, FileNotFoundError):
    """A path given to ``load_sidecars`` (not a glob) does not exist; nothing was loaded."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths = tuple(paths)
        super().__init__(
            f"{', '.join(self.paths)}: no such file or folder. Pass sidecar files, folders "
            "of them (the Stop hook writes .reflection/sidecars/) or a quoted glob; nothing "
            "was loaded"
        )


class ProgressSink(Protocol):
    """What :func:`load_sidecars` reports progress to (a tqdm bar fits)."""

    total: float | None

    def update(self, n: float = 1) -> object: ...


def load_sidecars(
    con: duckdb.DuckDBPyConnection,
    paths: Iterable[str | os.PathLike[str]],
    *,
    pattern: str = DEFAULT_PATTERN,
    progress: ProgressSink | None = None,
    workers: int | None = None,
    max_bytes: int = MAX_SIDECAR_BYTES,
    redact: bool = True,
) -> LoadSummary:
    """Load the sidecars under ``paths`` into ``reflections``; return what happened.

    ``paths``: files (read whatever their name), folders (recursive, files matching
    ``pattern``), globs. A path that does not exist (and is not a glob) raises
    :class:`SidecarPathNotFound` before anything is loaded, as ``load_git`` does; folders
    that hold nothing and globs that match nothing are listed in
    ``summary.detail["problems"]`` and the rest still loads. ``progress`` gets its ``total``
    set to the number of files, then ``update(n)`` per chunk of files. ``workers``: parser
    processes (default: one per available core, at most 4; 1 parses in this process).
    Files over ``max_bytes`` are rejected unread. Secrets in the records' text are redacted
    (:mod:`agent_reflection.redact`) unless ``redact`` is False.
    """
    paths = list(paths)
    if not paths:
        raise NoPathsGiven()
    missing = missing_paths(paths)
    if missing:
        raise SidecarPathNotFound(missing)
    files = SidecarFiles(paths, pattern)
    if progress is not None:
        progress.total = files.count()
    with (
        begin_load(con, SOURCE, describe(paths), fail_if_all_rejected=True) as run,
        _bulk_session(con),
    ):
        inserter = _Inserter(con, run)
        run.redactor = database_redactor(con, enabled=redact)
        key = run.redactor.key if redact else None
        nbytes, waited, started = 0, 0.0, time.perf_counter()
        for result in _parse(files, _worker_count(workers), max_bytes, key):
            waited += time.perf_counter() - started
            run.read += result.files
            nbytes += result.bytes
            for location, raw, reason in result.rejects:
                run.reject(location, raw, reason)
            inserter.add(result)
            if progress is not None:
                progress.update(result.files)
            started = time.perf_counter()
        for location, reason in files.refused:  # known once the walk is done
            run.read += 1
            run.reject(location, None, reason)
        inserter.flush()
        run.flush_rejects()
        run.detail.update(
            pattern=pattern,
            bytes_read=nbytes,
            problems=files.problems,
            folders_skipped=files.folders_skipped,
            seconds_waiting_for_parsers=round(waited, 3),
            seconds_inserting=round(inserter.seconds, 3),
        )
        _count_self_reports(con, run)
        run.checkpoint()  # counts commit with the last batch: a kill after it loses nothing
    return run.summary()


def _count_self_reports(con: duckdb.DuckDBPyConnection, run: LoadRun) -> None:
    """``detail.self_reports`` of the records this load stored (used / unusable / none), and a
    warning when a self-report could not be used or none was there at all: P1 counts only
    sidecars that carry one, and the hook's stderr line is seen by nobody."""
    row = con.execute(read_sql("sidecars/self_report_counts.sql"), {"load_id": run.load_id})
    used, unusable, stored = row.fetchone() or (0, 0, 0)
    run.detail["self_reports"] = {
        "used": used,
        "unusable": unusable,
        "none": stored - used - unusable,
    }
    if unusable:
        run.warn(
            f"{unusable:,} of {stored:,} sidecar(s) loaded hold a self-report the Stop hook could "
            "not use (not JSON, or the wrong shape): their confidence is null, so P1 leaves them "
            "out. The reason and the agent's text are in reflections.self_report_problem and "
            'self_report_text; the shape is in docs/capture.md, "The self-report file"'
        )
    if stored and not used and not unusable:
        run.warn(
            f"none of the {stored:,} sidecar(s) loaded holds a self-report, so P1 has nothing "
            "from them: `reflect hook install` adds the CLAUDE.md block that asks the agent to "
            "write one (or --self-report ask: the Stop hook asks once)"
        )


@contextmanager
def _bulk_session(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Settings for a bulk load, restored afterwards; the caller commits every COMMIT_ROWS.

    Inserts are committed every COMMIT_ROWS rows. One DuckDB thread: the insert is cheap next
    to parsing, and the parser processes need the cores.
    Checkpoints every ~128 MB of write-ahead log instead of DuckDB's 16 MB default: each
    checkpoint rewrites the primary-key index, so frequent ones made the load quadratic.
    A memory limit of 256 MB plus room for the primary-key index of the rows already stored
    keeps DuckDB from caching the whole load (1M files load in under 1 GiB). On failure the
    open transaction (the current batch) is rolled back; what earlier batches committed stays,
    and loading again completes it (those records count as already present).
    """
    before = con.execute(read_sql("sidecars/settings_now.sql")).fetchone()
    stored = con.execute(read_sql("sidecars/stored_count.sql")).fetchone()
    limit = LOAD_MEMORY_BASE + (int(stored[0]) if stored else 0) * INDEX_BYTES_PER_ROW
    con.execute(read_sql("core/set_threads.sql"), {"threads": 1})
    con.execute(read_sql("sidecars/set_memory_limit.sql"), {"value": f"{limit // 2**20:d}MB"})
    threshold = f"{LOAD_CHECKPOINT_BYTES // 2**20:d}MB"
    con.execute(read_sql("sidecars/set_checkpoint_threshold.sql"), {"value": threshold})
    try:
        with transaction(con):
            yield
    finally:
        if before is not None:
            threads, memory_limit, checkpoint_threshold = before
            con.execute(read_sql("core/set_threads.sql"), {"threads": int(threads)})
            con.execute(read_sql("sidecars/set_memory_limit.sql"), {"value": memory_limit})
            con.execute(
                read_sql("sidecars/set_checkpoint_threshold.sql"), {"value": checkpoint_threshold}
            )


def insert_records(
    con: duckdb.DuckDBPyConnection,
    records: Iterable[Reflection],
    *,
    source_file: str,
    load_id: int,
) -> int:
    """Store typed records as ``reflect load sidecars`` stores files holding them: the same
    checks, row, content hash and insert (a record already stored is skipped). Returns how
    many were new. For records made in the program (the simulator); files go through
    :func:`load_sidecars`."""
    rows: list[tuple[Any, ...]] = []
    for i, record in enumerate(records):
        row = sidecar_row(record.to_json().encode("utf-8"), source_file)
        if isinstance(row, Reject):
            raise ValueError(f"{row.location}: {row.reason}")
        rows.append((*row, i))
    if not rows:
        return 0
    table, _ = _arrow_table([tuple(zip(*rows, strict=True))])
    return _insert_table(con, table, render(read_sql("sidecars/insert_reflections.sql")), load_id)


class _Inserter:
    """Accumulates parsed chunks and inserts them ``BATCH_ROWS`` at a time."""

    def __init__(self, con: duckdb.DuckDBPyConnection, run: LoadRun) -> None:
        self.con = con
        self.run = run
        self.pending: list[tuple[tuple[Any, ...], ...]] = []
        self.rows = 0
        self.seconds = 0.0
        self.uncommitted = 0
        self.sql = render(read_sql("sidecars/insert_reflections.sql"))

    def add(self, result: ChunkResult) -> None:
        if result.columns is not None:
            self.pending.append(result.columns)
            self.rows += len(result.columns[0])
        if self.rows >= BATCH_ROWS:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        began = time.perf_counter()
        table, copies = _arrow_table(self.pending)
        self.pending, self.rows = [], 0
        inserted = _insert_table(self.con, table, self.sql, self.run.load_id)
        self.run.loaded += inserted
        self.run.already_present += table.num_rows - inserted + copies
        self.uncommitted += table.num_rows
        if self.uncommitted >= COMMIT_ROWS:
            self.run.checkpoint()  # the batch, its rejects and the counts commit together
            self.con.commit()
            self.con.begin()
            self.uncommitted = 0
        self.seconds += time.perf_counter() - began


def _insert_table(con: duckdb.DuckDBPyConnection, table: Any, sql: str, load_id: int) -> int:
    """Insert the batch ``table`` (registered for the statement); the rows inserted."""
    with registered(con, sidecar_batch=table):
        row = con.execute(sql, {"load_id": load_id}).fetchone()
    return int(row[0]) if row else 0


def _arrow_table(chunks: Sequence[tuple[tuple[Any, ...], ...]]) -> tuple[Any, int]:
    """The batch as an Arrow table, keeping only the first copy of each record; and how many
    later copies were dropped (they count as already present)."""
    import pyarrow as pa

    columns = [
        list(itertools.chain.from_iterable(c[i] for c in chunks)) for i in range(len(COLUMNS))
    ]
    hashes = columns[0]
    copies = len(hashes) - len(set(hashes))
    if copies:
        first: dict[str, int] = {}
        for i, h in enumerate(hashes):
            first.setdefault(h, i)
        keep = sorted(first.values())
        columns = [[column[i] for i in keep] for column in columns]
    types = _arrow_types()
    arrays = [
        pa.array(column, type=types[name]) for column, name in zip(columns, COLUMNS, strict=True)
    ]
    return pa.Table.from_arrays(arrays, names=list(COLUMNS)), copies


def _arrow_types() -> dict[str, Any]:
    import pyarrow as pa

    # A batch column's Arrow type follows the declared DDL type of its field (TIMESTAMPTZ
    # travels as text: the insert casts it); reflection_attempt is int64 so that a value over
    # INT32 reaches the loader's own range check rather than overflowing here.
    by_ddl = {
        "DOUBLE": pa.float64(),
        "BOOLEAN": pa.bool_(),
        "INTEGER": pa.int64(),
        "VARCHAR[]": pa.list_(pa.string()),
    }
    types = dict.fromkeys(COLUMNS, pa.string())
    types.update({f.column: by_ddl[f.ddl_type] for f in leaves() if f.ddl_type in by_ddl})
    types["ord"] = pa.int64()
    return types


def _worker_count(workers: int | None) -> int:
    if workers is not None:
        return max(1, workers)
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_WORKERS))


def _chunks(files: Iterable[str]) -> Iterator[tuple[int, list[str]]]:
    it = iter(files)
    start = 0
    while chunk := list(itertools.islice(it, CHUNK_FILES)):
        yield start, chunk
        start += len(chunk)


def _parse(
    files: Iterable[str], workers: int, max_bytes: int, key: bytes | None
) -> Iterator[ChunkResult]:
    """Parsed chunks, in file order; in worker processes when there is more than one chunk."""
    chunks = _chunks(files)
    first = next(chunks, None)
    if first is None:
        return
    second = next(chunks, None)
    if second is None or workers <= 1:
        for start, chunk in itertools.chain([first], [second] if second else [], chunks):
            yield process_files(chunk, start, max_bytes, key)
        return
    yield from _parse_in_pool(itertools.chain([first, second], chunks), workers, max_bytes, key)


def _parse_in_pool(
    chunks: Iterator[tuple[int, list[str]]], workers: int, max_bytes: int, key: bytes | None
) -> Iterator[ChunkResult]:
    context = multiprocessing.get_context(_start_method())
    in_flight: deque[Future[ChunkResult]] = deque()
    with ProcessPoolExecutor(
        max_workers=workers,
        mp_context=context,
        initializer=die_with_parent,
        initargs=(os.getpid(),),
    ) as pool:
        for start, chunk in chunks:
            in_flight.append(pool.submit(process_files, chunk, start, max_bytes, key))
            if len(in_flight) >= _WINDOW + 2 * workers:
                yield in_flight.popleft().result()
        while in_flight:
            yield in_flight.popleft().result()


def _start_method() -> str:
    # forkserver: workers fork from a clean single-threaded server, never from this process
    # (which runs DuckDB's threads); spawn where forkserver does not exist.
    methods = multiprocessing.get_all_start_methods()
    return "forkserver" if "forkserver" in methods else "spawn"
