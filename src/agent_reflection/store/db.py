"""The DuckDB file every loader writes and every experiment reads.

Library code always opens an explicit connection (:func:`connect`), never the module-level
``duckdb.sql``. DDL lives in ``sql/schema/*.sql`` (run in name order, idempotent); each loader
records its run in ``loads`` through :func:`begin_load`, and every record it cannot load in
``rejected``, so counts reconcile: read = loaded + rejected + already present.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import socket
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

import duckdb

from agent_reflection import __version__, config
from agent_reflection.errors import ReflectionError
from agent_reflection.names import name_text, record_text
from agent_reflection.reflection.columns import render as render_record_columns

#: Environment variable: seconds to wait for another process's lock on the database file.
LOCK_TIMEOUT_ENV = "REFLECT_LOCK_TIMEOUT"
#: Long enough for a short load or a notebook run to finish, short enough that a stuck
#: process is reported while the user is still looking.
DEFAULT_LOCK_WAIT_SECONDS = 30.0
#: Characters of a rejected record's raw text that are kept.
REJECTED_RAW_LIMIT = 4096
#: The package's named queries (``sql/``), read from the installed package's folder (the package
#: is never imported from a zip archive: DuckDB's engine is a compiled module, which cannot be).
SQL_DIR = Path(__file__).resolve().parent.parent / "sql"


def resolve_db_path(path: str | os.PathLike[str] | None = None) -> Path:
    """``path``, else ``$REFLECT_DB``, else the workspace's database (its project file's
    ``db``, else ``data/reflection.duckdb`` in it): ``config.Workspace.path``."""
    if path is not None:
        return Path(path)
    return Path(config.find_workspace().path(config.DB)[0])


class MissingDatabase(ReflectionError, FileNotFoundError):
    """The database to read does not exist; the message says where it looked, and why there."""


def require_database(path: str | os.PathLike[str] | None = None, *, given_as: str = "--db") -> Path:
    """The existing database to read: ``path`` (relative to the current folder), else the
    workspace's (:func:`resolve_db_path`). A missing one is :class:`MissingDatabase` saying
    where it looked: "load data first" only when the workspace was found and simply has no
    database yet; otherwise which path was wrong and how to point at the right one."""
    if path is not None:
        db = Path(path).absolute()
        if db.is_file():
            return db
        raise MissingDatabase(
            f"{db}: no such database (given as {given_as} {os.fspath(path)}). Check the path; "
            "or leave it out to use your workspace's database (the folder holding "
            f"{config.PROJECT_FILE}, found from the current folder upward)"
        )
    workspace = config.find_workspace()
    found, source = workspace.path(config.DB)
    db = Path(found)
    if db.is_file():
        return db
    if source == f"${config.DB.env}":
        raise MissingDatabase(
            f"{db}: no such database (from ${config.DB.env}). Fix the variable, or unset it to "
            f"use the workspace's database ({workspace.describe()})"
        )
    if workspace.marker is None and workspace.source != f"${config.WORKSPACE.env}":
        raise MissingDatabase(
            f"no database at {db}: {workspace.source}. Run from inside your workspace (the "
            f"folder holding {config.PROJECT_FILE}; `reflect hook install` writes it), set "
            f"{config.WORKSPACE.env} to it, or name the database (--db, ${config.DB.env})"
        )
    raise MissingDatabase(
        f"{db}: no database yet in the {workspace.describe()}, database from {source}. Load "
        "data first: `reflect load sidecars .reflection/sidecars`, `reflect load git .`, "
        "`reflect load labels FILE`"
    )


def connect(
    path: str | os.PathLike[str] | None = None,
    *,
    read_only: bool = False,
    wait_seconds: float | None = None,
    on_wait: Callable[[str], None] | None = None,
) -> duckdb.DuckDBPyConnection:
    """Open (creating it and its folder if needed) the database and ensure the schema.

    ``":memory:"`` gives an in-memory database, handy in tests. DuckDB lets one process at a
    time open a file for writing, and while it does no other process may open it at all (not
    even read-only). When another process holds the file this waits up to ``wait_seconds``
    (default: ``$REFLECT_LOCK_TIMEOUT``, else :data:`DEFAULT_LOCK_WAIT_SECONDS`), telling
    ``on_wait`` once (default: a line on stderr) who holds it, then raises
    :class:`DatabaseLocked`.
    """
    target = ":memory:" if str(path) == ":memory:" else resolve_db_path(path)
    existed = False
    if isinstance(target, Path):
        if name_text(target) != str(target):
            raise DatabasePathNotUtf8(target)
        existed = check_database_file(target)
        if not read_only:
            target.parent.mkdir(parents=True, exist_ok=True)
            if not existed:
                existed = create_database(target)
    limit = lock_wait_seconds() if wait_seconds is None else max(0.0, wait_seconds)
    began = time.monotonic()
    pause = 0.05
    told = False
    while True:
        try:
            con = duckdb.connect(str(target), read_only=read_only)
            break
        except duckdb.IOException as exc:
            holder = lock_holder(str(exc))
            if holder is None:
                raise
            waited = time.monotonic() - began
            if waited >= limit:
                raise DatabaseLocked(str(target), holder, waited) from None
            if not told:
                (on_wait or functools.partial(print, file=sys.stderr, flush=True))(
                    f"waiting up to {limit:g} s for the database lock on {target} held by "
                    f"{holder.describe()} ..."
                )
                told = True
            time.sleep(min(pause, limit - waited))
            pause = min(pause * 2, 1.0)
    if not read_only:
        ensure_current_schema(con, new_file=not existed)
    return con


def create_database(target: Path) -> bool:
    """Create the database at ``target`` whole: written with its schema under a temporary name
    beside it, then linked into place, so no other process ever opens a file DuckDB is still
    writing (a second load started at the same moment read half a header: "not a valid DuckDB
    database file"). Whether ``target`` is a database now (False: it could not be made this
    way, e.g. a file system without hard links, or ``target`` is a symbolic link; DuckDB then
    creates it itself and says what failed). A process that loses the race to another's link
    uses the other's database."""
    if target.is_symlink():  # a dangling link: DuckDB creates the file it points to
        return False
    temporary = target.with_name(f".{target.name}.{os.getpid()}-{os.urandom(6).hex()}.new")
    try:
        con = duckdb.connect(str(temporary))
        try:
            ensure_current_schema(con, new_file=True)
        finally:
            con.close()  # checkpoints: the write-ahead log is folded into the file
        with suppress(FileExistsError):
            os.link(temporary, target)
        return True
    except (OSError, duckdb.Error):
        return target.exists()
    finally:
        for leftover in (temporary, temporary.with_name(temporary.name + ".wal")):
            with suppress(OSError):
                leftover.unlink()


def lock_wait_seconds() -> float:
    """``$REFLECT_LOCK_TIMEOUT`` seconds, else :data:`DEFAULT_LOCK_WAIT_SECONDS`."""
    raw = os.environ.get(LOCK_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_LOCK_WAIT_SECONDS
    try:
        seconds = float(raw)
    except ValueError:
        raise ReflectionError(
            f"${LOCK_TIMEOUT_ENV}={raw!r} is not a number of seconds (e.g. 30; 0 fails at once)"
        ) from None
    if not seconds >= 0:  # also refuses nan
        raise ReflectionError(f"${LOCK_TIMEOUT_ENV}={raw!r}: want seconds >= 0")
    return seconds


@dataclass(frozen=True)
class LockHolder:
    """The process DuckDB says holds a database file's lock (either part may be unknown)."""

    pid: int | None
    program: str | None

    def describe(self) -> str:
        """``pid 123 (reflect load git flask.bundle)``, or as much of it as is known."""
        if self.pid is None:
            return "another process"
        command = _command_line(self.pid) or self.program
        return f"pid {self.pid}" + (f" ({command})" if command else "")


_LOCK_MESSAGE = re.compile(r"Could not set lock on file")
_LOCK_PID = re.compile(r"Conflicting lock is held in (?P<program>.*?) \(PID (?P<pid>\d+)\)")


def lock_holder(message: str) -> LockHolder | None:
    """Who holds the lock, from DuckDB's error text; None when ``message`` is not a lock error."""
    if not _LOCK_MESSAGE.search(message):
        return None
    found = _LOCK_PID.search(message)
    if found is None:
        return LockHolder(None, None)
    return LockHolder(int(found["pid"]), found["program"])


def _command_line(pid: int) -> str | None:
    """The command a live process runs, shortened (``reflect load git ...``); None if unknown."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    words = [a.decode("utf-8", "replace") for a in argv if a]
    for i, word in enumerate(words):  # python -m agent_reflection load git ... -> reflect load git
        if word == "agent_reflection" or Path(word).name == "reflect":
            words = ["reflect", *words[i + 1 :]]
            break
    text = " ".join(" ".join(words).split())  # one line, even for `python -c "..."`
    return text if len(text) <= 80 else text[:77] + "..."


class DatabaseLocked(ReflectionError):
    """Another process holds the database file and did not let go in time."""

    def __init__(self, path: str, holder: LockHolder, waited: float) -> None:
        self.path, self.holder, self.waited = path, holder, waited
        super().__init__(
            f"{path} is locked by {holder.describe()} (waited {waited:.0f} s); DuckDB allows one "
            f"process at a time on a database file: let that one finish or stop it, or wait "
            f"longer with --wait SECONDS / ${LOCK_TIMEOUT_ENV}"
        )


#: Bytes 8 to 11 of every DuckDB database file: the magic of its main header.
DUCKDB_MAGIC = b"DUCK"
_MAGIC_AT = 8


class DatabasePathNotUtf8(ReflectionError):
    """DuckDB opens files by UTF-8 names: a database path with other bytes cannot be opened."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            f"{name_text(path)}: DuckDB opens files by UTF-8 names, and this path holds bytes "
            "that are not UTF-8 (shown as U+FFFD): choose a --db path (or $REFLECT_DB) in a "
            "folder named in UTF-8"
        )


class NotADatabase(ReflectionError):
    """The database path names an existing file that is not a DuckDB database.

    DuckDB 1.5 opens an existing ``.jsonl``, ``.csv``, ``.parquet`` (also ``.gz``) file as a
    temporary in-memory database holding a view of it: a load into it would report its counts
    and keep nothing. Other files make it fail with a traceback-worthy ``IOException``.
    """

    def __init__(self, path: Path, kind: str) -> None:
        self.path, self.kind = path, kind
        fix = (
            "Remove it to create a database there, or pass --db another file"
            if kind == "an empty file"
            else "Pass --db (or $REFLECT_DB) a DuckDB database file"
        )
        super().__init__(
            f"{path} is {kind}, not a DuckDB database: nothing was read from it or written to "
            f"it. {fix}, e.g. --db data/reflection.duckdb (a path that does not exist yet is "
            "created)"
        )


def check_database_file(path: Path) -> bool:
    """Whether ``path`` is an existing DuckDB database. Raise :class:`NotADatabase` when it is
    an existing file without DuckDB's magic (``DUCK`` at byte 8): DuckDB would read it as data
    in memory, or fail on it. False for a path that does not exist yet (DuckDB creates the
    database there)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(_SNIFF_BYTES)
    except OSError:  # no such file (created on connect), a folder, no permission: DuckDB says
        return False
    if head[_MAGIC_AT : _MAGIC_AT + len(DUCKDB_MAGIC)] != DUCKDB_MAGIC:
        raise NotADatabase(path, describe_file(head, path.name))
    return True


#: Bytes read to tell what a file that is not a database is.
_SNIFF_BYTES = 4096


def describe_file(head: bytes, name: str) -> str:
    """What a file whose first bytes are ``head`` looks like (``"a JSONL file"``), for
    :class:`NotADatabase`."""
    if not head:
        return "an empty file"
    for magic, kind in (
        (b"\x1f\x8b", "a gzip-compressed file"),
        (b"SQLite format 3\x00", "a SQLite database"),
        (b"PAR1", "a Parquet file"),
        (b"PK\x03\x04", "a zip archive"),
    ):
        if head.startswith(magic):
            return kind
    if b"\x00" in head:
        return "a binary file"
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")
    first_line = text.split(b"\n", 1)[0]
    if text.startswith(b"{"):
        jsonl = b"\n{" in text or name.endswith((".jsonl", ".ndjson", ".jsonl.gz"))
        return "a JSONL file" if jsonl else "a JSON file"
    if text.startswith(b"["):
        return "a JSON file"
    if text.startswith(b"<"):
        return "an XML or HTML file"
    if any(sep in first_line for sep in (b",", b";", b"\t")):
        return "a CSV file"
    return "a text file"


def schema_files() -> list[tuple[str, str]]:
    """(name, SQL text) of every DDL file, in the order they run; the ``reflections`` columns
    made from the reflection.v1 declaration (:func:`agent_reflection.reflection.columns.render`)."""
    files = sorted((f.name, f) for f in (SQL_DIR / "schema").iterdir() if f.name.endswith(".sql"))
    return [(name, render_record_columns(f.read_text("utf-8"))) for name, f in files]


def ensure_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Create every table that does not exist yet. Safe to call again.

    The files run as one ``execute`` (each named in a comment before its statements): 6 ms
    less than one call per file on a new file, out of about 30."""
    con.execute("".join(f"-- sql/schema/{name}\n{sql}\n;\n" for name, sql in schema_files()))
    with pandas_deferred():  # DuckDB's parameter binding would import pandas (0.3 s)
        con.execute(
            read_sql("core/record_schema_version.sql"),
            {
                "digest": schema_digest(),
                "fingerprint": _schema_fingerprint(con),
                "applied_at": _now(),
            },
        )


def ensure_current_schema(con: duckdb.DuckDBPyConnection, *, new_file: bool = False) -> bool:
    """:func:`ensure_schema` unless it already ran with today's DDL files and nothing has
    changed the columns since (``schema_version``); whether it ran. An existing database
    (``new_file`` False) also gets the data a newer schema derives from rows it already holds
    (:data:`DATA_UPGRADES`); a file DuckDB just created has none to derive from."""
    if schema_is_current(con):
        return False
    with transaction(con):  # one commit to the write-ahead log, not one per statement
        ensure_schema(con)
        if not new_file:
            for name in DATA_UPGRADES:
                con.execute(read_sql(name))
    return True


def columns_json(rows: Sequence[tuple[Any, ...]], names: Sequence[str]) -> str:
    """``{"name": [value, ...], ...}``: ``rows`` (tuples in ``names``' order) as one JSON
    document of column lists, for a named query to read with ``from_json`` and ``unnest``
    (sql/git/insert_commits.sql). One bound value per batch, where binding Python lists costs
    a conversion per value, and no pyarrow, whose import (with the ``pyarrow.dataset`` DuckDB
    loads to scan it) costs a small load more than its rows."""
    columns = zip(*rows, strict=True) if rows else (() for _ in names)
    return json.dumps(dict(zip(names, columns, strict=True)), ensure_ascii=False)


@contextmanager
def registered(con: duckdb.DuckDBPyConnection, **tables: Any) -> Iterator[None]:
    """Each of ``tables`` (Arrow tables) registered on ``con`` under its name for the block,
    where the named queries read it as a view; unregistered after it."""
    for name, table in tables.items():
        con.register(name, table)
    try:
        yield
    finally:
        for name in tables:
            con.unregister(name)


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """BEGIN; COMMIT when the block ends, ROLLBACK (and re-raise) when it raises."""
    con.begin()
    try:
        yield
    except BaseException:
        con.rollback()
        raise
    con.commit()


#: Statements that fill a table a newer schema added from rows an existing database holds
#: (idempotent; each says what it fills).
DATA_UPGRADES = ("core/upgrade_overlapping_origins.sql",)


def schema_is_current(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``schema_version`` holds the digest of today's DDL files and the columns and
    sequences it recorded are still those of the database."""
    try:
        row = con.execute(read_sql("core/schema_version.sql")).fetchone()
    except duckdb.CatalogException:  # a new file, or one older than schema_version
        return False
    return row is not None and row == (schema_digest(), _schema_fingerprint(con))


@functools.cache
def schema_digest() -> str:
    """sha256 over the names and text of the DDL files (:func:`schema_files`)."""
    digest = hashlib.sha256()
    for name, sql in schema_files():
        digest.update(f"{name}\0{sql}\0".encode())
    return digest.hexdigest()


def _schema_fingerprint(con: duckdb.DuckDBPyConnection) -> int:
    row = con.execute(read_sql("core/schema_fingerprint.sql")).fetchone()
    return int(row[0]) if row else 0


@functools.cache
def read_sql(name: str) -> str:
    """A named query from ``sql/`` (e.g. ``read_sql("git/insert_commits.sql")``).

    Read once per process: a cycle or a load runs the same statements thousands of times.
    """
    return (SQL_DIR / name).read_text("utf-8")


#: An identifier placeholder in a named query: ``{{table}}``. Values are never composed into SQL
#: (they are bound parameters); only identifiers that cannot be bound (a table name) are.
_IDENTIFIER_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


def quote_identifier(name: str) -> str:
    """``name`` as a double-quoted SQL identifier (embedded quotes doubled)."""
    return '"' + name.replace('"', '""') + '"'


def compose_sql(name: str, **identifiers: str) -> str:
    """The named query with each ``{{placeholder}}`` replaced by a quoted identifier.

    For the few statements whose table or column name varies (a table from a fixed allow-list,
    every table of the database): each name is quoted with :func:`quote_identifier`. Every
    placeholder of the file must be given, and every name given must be a placeholder there.
    """
    text = read_sql(name)
    wanted = set(_IDENTIFIER_PLACEHOLDER.findall(text))
    if wanted != set(identifiers):
        raise ValueError(
            f"sql/{name}: placeholders {sorted(wanted)} but identifiers {sorted(identifiers)} given"
        )
    return _IDENTIFIER_PLACEHOLDER.sub(lambda m: quote_identifier(identifiers[m[1]]), text)


@dataclass(frozen=True)
class LoadSummary:
    """What one load did. ``read == loaded + rejected + already_present`` always holds."""

    load_id: int
    source: str
    origin: str
    read: int
    loaded: int
    rejected: int
    already_present: int
    status: str = "ok"
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def error(self) -> str | None:
        """Why the load failed though it ran to its end (``detail.error``): a file it could
        not read to its end, or an input of which every record was rejected. None when ok."""
        error = self.detail.get("error")
        return str(error) if error else None

    @property
    def reconciles(self) -> bool:
        return self.read == self.loaded + self.rejected + self.already_present

    def line(self) -> str:
        """The one-line summary the CLI prints after every load."""
        return (
            f"{self.source} load {self.load_id} from {self.origin}: read {self.read:,} = "
            f"loaded {self.loaded:,} + rejected {self.rejected:,} + "
            f"already present {self.already_present:,}"
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class TextRedactor(Protocol):
    """What a load redacts rejected raw text with (:class:`agent_reflection.redact.Redactor`)."""

    def text(self, text: str) -> str: ...


class LoadRun:
    """Counters and the reject sink of one load in progress (see :func:`begin_load`)."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        load_id: int,
        source: str,
        origin: str,
        fail_if_all_rejected: bool = False,
    ):
        self.con = con
        self.load_id = load_id
        self.source = source
        self.origin = origin
        self.read = 0
        self.loaded = 0
        self.already_present = 0
        self.rejected = 0
        self.detail: dict[str, Any] = {}
        #: ``location: reason`` of each place a file could not be read on from (see reject).
        self.file_errors: list[str] = []
        #: ``location: reason`` of the first record rejected, quoted when every one was.
        self.first_reject: str | None = None
        #: Set by a loader that can tell why every record was rejected (a wrong --format).
        self.hint: str | None = None
        #: Whether a load that rejected every record fails (see :func:`begin_load`).
        self.fail_if_all_rejected = fail_if_all_rejected
        self._pending: list[tuple[Any, ...]] = []
        #: Set by loaders of agents' free text: rejected raw text is redacted with it too.
        self.redactor: TextRedactor | None = None
        #: (database file, load id) while the load is open in this process (:data:`_OPEN_LOADS`).
        self.open_key: tuple[str, int] | None = None

    def reject(
        self, location: str, raw: str | bytes | None, reason: str, *, file_error: bool = False
    ) -> None:
        """Keep a record that could not be loaded, with where it was and why.

        ``file_error``: the file could not be read on from ``location`` (a truncated or
        corrupt ``.gz``, a cut JSON document, binary data): what was read before it stays, but
        the load fails (:meth:`problem`), so the user hears it at once, not from ``rejected``.
        """
        location, reason = name_text(location), record_text(reason)  # a name in them too
        if self.first_reject is None:
            self.first_reject = f"{location}: {reason}"
        if file_error:
            self.file_errors.append(f"{location}: {reason}")
        if isinstance(raw, bytes):
            raw = raw[: REJECTED_RAW_LIMIT * 4].decode("utf-8", errors="replace")
        if raw is not None and self.redactor is not None:
            raw = self.redactor.text(raw)
        if raw is not None and len(raw) > REJECTED_RAW_LIMIT:
            raw = raw[:REJECTED_RAW_LIMIT] + f"… [{len(raw) - REJECTED_RAW_LIMIT} chars cut]"
        self.rejected += 1
        self._pending.append((self.load_id, self.source, location, raw, reason, _now()))
        if len(self._pending) >= 1000:
            self.flush_rejects()

    def flush_rejects(self) -> None:
        """Write the pending rejects in one bulk insert (executemany costs ~1 ms a row).

        A record an earlier load already rejected at the same location for the same reason
        replaces that row (``sql/core/replace_rejects.sql``): re-loading the same inputs does
        not multiply ``rejected``.
        """
        if not self._pending:
            return
        import pyarrow as pa

        columns = list(zip(*self._pending, strict=True))
        batch = pa.table(
            {
                "load_id": pa.array(columns[0], pa.int64()),
                "source": pa.array(columns[1], pa.string()),
                "location": pa.array(columns[2], pa.string()),
                "raw": pa.array(columns[3], pa.string()),
                "reason": pa.array(columns[4], pa.string()),
                "rejected_at": pa.array(columns[5], pa.timestamp("us", tz="UTC")),
            }
        )
        with registered(self.con, reject_batch=batch):
            self.con.execute(read_sql("core/replace_rejects.sql"))
            self.con.execute(read_sql("core/insert_rejects.sql"))
        self._pending.clear()

    def discard_rejects(self) -> None:
        """Forget the rejects not written yet: the transaction that was to hold them failed."""
        self._pending.clear()

    def checkpoint(self) -> None:
        """Flush the rejects and write the counts so far into ``loads``.

        A loader that commits in batches calls this just before each COMMIT, so the batch, its
        rejects and the counts that describe them become durable together: if the process dies
        later, the ``loads`` row (marked ``interrupted`` by the next load) says what got in.
        """
        self.flush_rejects()
        self.con.execute(read_sql("core/progress_load.sql"), self.counts())

    def counts(self) -> dict[str, Any]:
        """The counters as bound parameters of ``sql/core/progress_load.sql``."""
        return {
            "load_id": self.load_id,
            "read": self.read,
            "loaded": self.loaded,
            "rejected": self.rejected,
            "already_present": self.already_present,
        }

    def warn(self, text: str) -> None:
        """A warning about the input as a whole (``detail.warnings``; the CLI prints it)."""
        self.detail.setdefault("warnings", []).append(text)

    def warn_if_empty(self, path: str | os.PathLike[str]) -> None:
        """Warn that ``path`` held nothing to read, when this load read nothing."""
        if self.read == 0:
            self.warn(nothing_to_read(path))

    def problem(self) -> str | None:
        """Why this load fails though it ran to its end, in one sentence with the fix; None
        if ok.

        A load fails when a file could not be read to its end (:attr:`file_errors`: what was
        read before the damage stays loaded) or, with :attr:`fail_if_all_rejected`, when every
        record of a non-empty input was rejected (:attr:`hint`: the loader's guess why, e.g. a
        wrong ``--format``). An empty input is no failure (the loader warns about it), nor is
        a load that rejected some records only.
        """
        see = f"see every reject with: reflect rejected --load {self.load_id}"
        if self.file_errors:
            more = f" (and {len(self.file_errors) - 1} more)" if len(self.file_errors) > 1 else ""
            what = (
                f"The load kept what was read before it (loaded {self.loaded:,}, already "
                f"present {self.already_present:,}) and is marked failed"
                if self.loaded + self.already_present
                else "Nothing was loaded"
            )
            return f"{self.file_errors[0]}{more}. {what}; {see}"
        if self.fail_if_all_rejected and self.read and self.rejected == self.read:
            first = f"; the first: {self.first_reject}" if self.first_reject else ""
            advice = f" {self.hint}" if self.hint else ""
            return (
                f"every record of {self.origin} was rejected ({self.rejected:,}), nothing was "
                f"loaded{first}.{advice} {see[0].upper()}{see[1:]}"
            )
        return None

    def final_detail(self) -> dict[str, Any]:
        """``detail`` with, when the load failed, ``error`` and ``file_errors``."""
        detail = dict(self.detail)
        error = self.problem()
        if error is not None:
            detail["error"] = error
        if self.file_errors:
            detail["file_errors"] = list(self.file_errors)
        return detail

    def finish(self, status: str) -> None:
        """Close the ``loads`` row: the final counts, ``status`` and :meth:`final_detail`
        (pending rejects are flushed first)."""
        _OPEN_LOADS.discard(self.open_key)
        self.flush_rejects()
        self.con.execute(
            read_sql("core/finish_load.sql"),
            {
                **self.counts(),
                "finished_at": _now(),
                "status": status,
                # a warning, hint or error may quote a name that is not UTF-8: its text
                "detail": record_text(
                    json.dumps(self.final_detail(), default=str, ensure_ascii=False)
                ),
            },
        )

    def summary(self, status: str | None = None) -> LoadSummary:
        """The counts and ``status``: by default ``failed`` when :meth:`problem` says so,
        else ``ok``."""
        detail = self.final_detail()
        return LoadSummary(
            self.load_id,
            self.source,
            self.origin,
            self.read,
            self.loaded,
            self.rejected,
            self.already_present,
            status or ("failed" if "error" in detail else "ok"),
            detail,
        )


def nothing_to_read(path: str | os.PathLike[str]) -> str:
    """The warning for an input that held no record at all."""
    return f"nothing to read in {path}: it holds no record (an empty file?); is it the right one?"


#: (database file, load_id) of the loads open in this process: their ``loads`` row is
#: legitimately ``running``.
_OPEN_LOADS: set[tuple[str, int]] = set()


@contextmanager
def begin_load(
    con: duckdb.DuckDBPyConnection,
    source: str,
    origin: str,
    *,
    fail_if_all_rejected: bool = False,
) -> Iterator[LoadRun]:
    """Record a load in ``loads``; yields a :class:`LoadRun` whose counters the loader fills.

    On a clean exit the row gets the counts and status ``ok``, or ``failed`` when the load
    ran to its end but a file could not be read to its end (a reject with ``file_error``) or,
    with ``fail_if_all_rejected`` (the loaders of files the user names: labels, boards, CI,
    run logs, transcripts, sidecars), every record was rejected (:meth:`LoadRun.problem`,
    saved as ``detail.error``); on an exception, status ``failed``
    (``interrupted`` for Ctrl-C or ``SystemExit``) and the exception is re-raised. Rejects
    are flushed either way. First, every ``running`` load left by a process that died
    (killed, crashed, power cut) is marked ``interrupted``: this connection writes, so
    DuckDB's file lock guarantees no other process is loading into this file.
    """
    with pandas_deferred():
        run = start_load(con, source, origin, fail_if_all_rejected=fail_if_all_rejected)
        status = "failed"
        try:
            yield run
            status = "failed" if run.problem() else "ok"
        except (KeyboardInterrupt, SystemExit):
            status = "interrupted"
            raise
        finally:
            run.finish(status)


def start_load(
    con: duckdb.DuckDBPyConnection,
    source: str,
    origin: str,
    *,
    fail_if_all_rejected: bool = False,
) -> LoadRun:
    """The ``loads`` row of a new load (status ``running``) as a :class:`LoadRun`, once the
    loads of processes that died are marked ``interrupted``; :meth:`LoadRun.finish` closes
    it. :func:`begin_load` does both around a block; ``reflect serve`` keeps one open."""
    mark_interrupted(con)
    origin = name_text(origin)  # a path, whatever its bytes
    row = con.execute(
        read_sql("core/begin_load.sql"),
        {
            "source": source,
            "origin": origin,
            "started_at": _now(),
            "tool_version": __version__,
            "pid": os.getpid(),
            "host": socket.gethostname(),
        },
    ).fetchone()
    run = LoadRun(con, int(row[0]), source, origin, fail_if_all_rejected)  # type: ignore[index]
    run.open_key = (_database_file(con), run.load_id)
    _OPEN_LOADS.add(run.open_key)
    return run


class _PandasDeferred:
    """Refuses ``import pandas`` (see :func:`pandas_deferred`): a ``sys.meta_path`` finder."""

    def find_spec(self, fullname: str, path: Any = None, target: ModuleType | None = None) -> None:
        if fullname == "pandas" or fullname.startswith("pandas."):
            raise ModuleNotFoundError(
                f"import {fullname} refused inside agent_reflection.store.db.pandas_deferred "
                "(loads and `reflect serve` run without its 0.3 s import); import pandas before "
                "the block if this code needs it",
                name=fullname,
            )
        return None


@contextmanager
def pandas_deferred() -> Iterator[None]:
    """Keep pandas from being imported inside the block, unless it is imported already.

    DuckDB's Python client imports pandas on the first ``execute`` with bound parameters and on
    the first ``register`` (to check whether a value is a pandas object), and pyarrow does on the
    first ``pa.array``: 0.3 s of a 0.5 s one-commit load. Both treat a failed import as "pandas
    not installed" for that check. Afterwards DuckDB imports it normally, and so do pyarrow's
    pandas conversions (``to_pandas``, ``from_pandas``); only pyarrow's "is this a pandas
    object?" check in ``pa.array`` keeps answering no in this process (a Series still converts,
    through the array protocol). Loaders do not use pandas; the finder is process-wide, so
    another thread importing pandas for the first time during a load gets the error.
    """
    if "pandas" in sys.modules:
        yield
        return
    finder = _PandasDeferred()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        with suppress(ValueError):
            sys.meta_path.remove(finder)


class DatabaseNotFound(ReflectionError, FileNotFoundError):
    """A command that only reads the database was pointed at a file that does not exist."""


def existing_database(path: str | os.PathLike[str] | None = None) -> Path:
    """The database file (:func:`resolve_db_path`), or :class:`DatabaseNotFound` when it is
    not there: a command that only reads must not leave an empty database behind."""
    target = resolve_db_path(path)
    if not target.is_file():
        raise DatabaseNotFound(
            f"no database at {target}: nothing was loaded there; load something first "
            "(`reflect load ...` creates it), or pass --db FILE / set REFLECT_DB"
        )
    return target


#: ``loads.source`` of a load of simulated data: reports made from the database say SIMULATED.
SIMULATED_SOURCE = "simulated"


def record_simulated(con: duckdb.DuckDBPyConnection, origin: str) -> int:
    """Record in ``loads`` that this database holds simulated data (``origin``: what made it,
    e.g. ``reflect demo (seed 7)``); returns the load's id, for rows stored without a loader."""
    with begin_load(con, SIMULATED_SOURCE, origin) as run:
        return run.load_id


def simulated_origin(con: duckdb.DuckDBPyConnection) -> str | None:
    """What simulated the data in this database (the origins of its ``simulated`` loads), or
    None for a database of real data only."""
    origins = dict.fromkeys(
        str(origin) for _, origin in con.execute(read_sql("core/simulated_loads.sql")).fetchall()
    )
    return "; ".join(origins) or None


def mark_interrupted(con: duckdb.DuckDBPyConnection) -> list[int]:
    """Mark ``interrupted`` the ``running`` loads no open load of this process owns; their ids.

    Call only on a connection that can write: then no other process can be loading into the
    file (DuckDB's lock), so a ``running`` row not open here belongs to a process that is gone.
    """
    database = _database_file(con)
    stale = [
        int(load_id)
        for load_id, _pid, _host in con.execute(read_sql("core/running_loads.sql")).fetchall()
        if (database, int(load_id)) not in _OPEN_LOADS
    ]
    for load_id in stale:
        con.execute(read_sql("core/mark_interrupted.sql"), {"load_id": load_id, "now": _now()})
    return stale


def _database_file(con: duckdb.DuckDBPyConnection) -> str:
    """The file behind ``con`` (its DuckDB name for an in-memory database)."""
    row = con.execute(read_sql("core/database_file.sql")).fetchone()
    return str(row[0]) if row else ""


def _now() -> datetime:
    return datetime.now(UTC)
