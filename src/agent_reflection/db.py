"""The DuckDB file every loader writes and every experiment reads.

Library code always opens an explicit connection (:func:`connect`), never the module-level
``duckdb.sql``. DDL lives in ``sql/schema/*.sql`` (run in name order, idempotent); each loader
records its run in ``loads`` through :func:`begin_load`, and every record it cannot load in
``rejected``, so counts reconcile: read = loaded + rejected + already present.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb

from agent_reflection import __version__

DEFAULT_DB_PATH = Path("data/reflection.duckdb")
#: Environment variable that overrides the default database file (``--db`` overrides both).
DB_ENV = "REFLECT_DB"
#: Characters of a rejected record's raw text that are kept.
REJECTED_RAW_LIMIT = 4096


def resolve_db_path(path: str | os.PathLike[str] | None = None) -> Path:
    """``path``, else ``$REFLECT_DB``, else ``data/reflection.duckdb``."""
    if path is not None:
        return Path(path)
    env = os.environ.get(DB_ENV)
    return Path(env) if env else DEFAULT_DB_PATH


def connect(
    path: str | os.PathLike[str] | None = None, *, read_only: bool = False
) -> duckdb.DuckDBPyConnection:
    """Open (creating it and its folder if needed) the database and ensure the schema.

    ``":memory:"`` gives an in-memory database, handy in tests.
    """
    target = ":memory:" if str(path) == ":memory:" else resolve_db_path(path)
    if isinstance(target, Path) and not read_only:
        target.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(target), read_only=read_only)
    if not read_only:
        ensure_schema(con)
    return con


def schema_files() -> list[tuple[str, str]]:
    """(name, SQL text) of every DDL file, in the order they run."""
    folder = resources.files("agent_reflection").joinpath("sql/schema")
    files = sorted((f.name, f) for f in folder.iterdir() if f.name.endswith(".sql"))
    return [(name, f.read_text("utf-8")) for name, f in files]


def ensure_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Create every table that does not exist yet. Safe to call again."""
    for _name, sql in schema_files():
        con.execute(sql)


def read_sql(name: str) -> str:
    """A named query from ``sql/`` (e.g. ``read_sql("git/insert_commits.sql")``)."""
    return resources.files("agent_reflection").joinpath(f"sql/{name}").read_text("utf-8")


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


class LoadRun:
    """Counters and the reject sink of one load in progress (see :func:`begin_load`)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, load_id: int, source: str, origin: str):
        self.con = con
        self.load_id = load_id
        self.source = source
        self.origin = origin
        self.read = 0
        self.loaded = 0
        self.already_present = 0
        self.rejected = 0
        self.detail: dict[str, Any] = {}
        self._pending: list[tuple[Any, ...]] = []

    def reject(self, location: str, raw: str | bytes | None, reason: str) -> None:
        """Keep a record that could not be loaded, with where it was and why."""
        if isinstance(raw, bytes):
            raw = raw[: REJECTED_RAW_LIMIT * 4].decode("utf-8", errors="replace")
        if raw is not None and len(raw) > REJECTED_RAW_LIMIT:
            raw = raw[:REJECTED_RAW_LIMIT] + f"… [{len(raw) - REJECTED_RAW_LIMIT} chars cut]"
        self.rejected += 1
        self._pending.append((self.load_id, self.source, location, raw, reason, _now()))
        if len(self._pending) >= 1000:
            self.flush_rejects()

    def flush_rejects(self) -> None:
        """Write the pending rejects in one bulk insert (executemany costs ~1 ms a row)."""
        if not self._pending:
            return
        import pyarrow as pa

        columns = list(zip(*self._pending, strict=True))
        batch = pa.table(  # noqa: F841 (read by the SQL below)
            {
                "load_id": pa.array(columns[0], pa.int64()),
                "source": pa.array(columns[1], pa.string()),
                "location": pa.array(columns[2], pa.string()),
                "raw": pa.array(columns[3], pa.string()),
                "reason": pa.array(columns[4], pa.string()),
                "rejected_at": pa.array(columns[5], pa.timestamp("us", tz="UTC")),
            }
        )
        self.con.execute("INSERT INTO rejected SELECT * FROM batch")
        self._pending.clear()

    def summary(self, status: str = "ok") -> LoadSummary:
        return LoadSummary(
            self.load_id, self.source, self.origin, self.read, self.loaded, self.rejected,
            self.already_present, status, dict(self.detail),
        )  # fmt: skip


@contextmanager
def begin_load(con: duckdb.DuckDBPyConnection, source: str, origin: str) -> Iterator[LoadRun]:
    """Record a load in ``loads``; yields a :class:`LoadRun` whose counters the loader fills.

    On a clean exit the row gets the counts and status ``ok``; on an exception, status
    ``failed`` and the exception is re-raised. Rejects are flushed either way.
    """
    load_id = int(con.execute("SELECT nextval('load_id_seq')").fetchone()[0])  # type: ignore[index]
    con.execute(
        "INSERT INTO loads (load_id, source, origin, started_at, tool_version) VALUES (?,?,?,?,?)",
        [load_id, source, origin, _now(), __version__],
    )
    run = LoadRun(con, load_id, source, origin)
    status = "failed"
    try:
        yield run
        status = "ok"
    finally:
        run.flush_rejects()
        con.execute(
            """UPDATE loads SET finished_at = ?, rows_read = ?, rows_loaded = ?,
               rows_rejected = ?, rows_already_present = ?, status = ?, detail = ?
               WHERE load_id = ?""",
            [_now(), run.read, run.loaded, run.rejected, run.already_present, status,
             json.dumps(run.detail, default=str), load_id],
        )  # fmt: skip


def _now() -> datetime:
    return datetime.now(UTC)
