"""What data an experiment saw: the ``data`` block of results.json.

For each table an experiment reads (:func:`tables_read`): its row count, an order-independent
content hash, the loads that wrote its rows (``loads``: id, source, origin, when) and the time
range of its time columns; and ``simulated``, what simulated the data when the database holds
a simulated world (``reflect demo``), which makes every report of it say SIMULATED. A table
the database lacks is left out (e.g. ``fix_inducing`` before anything fills it).

Content hash: ``sum(hash(row)) mod 2^64`` over the rows without their ``load_id``, as 16 hex
digits. It is cheap in DuckDB and independent of row order and load ids, but DuckDB's ``hash``
is only stable within a DuckDB version: compare hashes made by the same version (recorded).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

import duckdb

from agent_reflection.experiments.registration import Preregistration, utc_stamp
from agent_reflection.store.db import read_sql, simulated_origin

#: The tables each experiment's SQL reads (sql/experiments/p*.sql).
P2_TABLES = ("commits", "commit_files", "fix_inducing")
P3_TABLES = ("tasks", "task_events", "task_links", "task_commits", "commits")
#: P1's loop labels join sidecars to their tasks and to P3's outcome signals.
P1_LOOP_TABLES = ("reflections", "session_outcomes", "session_commits", "commits", "commit_files")
#: Instants that bound a table's data (the range reported).
TIME_COLUMNS: dict[str, tuple[str, ...]] = {
    "reflections": ("timestamp",),
    "commits": ("author_time", "committer_time"),
    "tasks": ("created_at", "completed_at", "updated_on"),
    "task_events": ("at",),
}


@dataclass(frozen=True)
class LoadRef:
    load_id: int
    source: str | None
    origin: str | None
    started_at: str | None
    finished_at: str | None
    status: str | None


@dataclass(frozen=True)
class TableProvenance:
    table: str
    rows: int
    content_hash: str
    time_min: str | None
    time_max: str | None
    loads: tuple[LoadRef, ...]


@dataclass(frozen=True)
class DataProvenance:
    database: str
    tables: tuple[TableProvenance, ...]
    duckdb_version: str
    #: what simulated the database's data (its ``simulated`` loads), None for real data
    simulated: str | None = None

    @property
    def loaded_at(self) -> str | None:
        """When the newest load behind these tables finished (the data's "loaded" date)."""
        stamps = [ld.finished_at for t in self.tables for ld in t.loads if ld.finished_at]
        return max(stamps) if stamps else None

    @property
    def time_range(self) -> tuple[str | None, str | None]:
        lows = [t.time_min for t in self.tables if t.time_min]
        highs = [t.time_max for t in self.tables if t.time_max]
        return (min(lows) if lows else None, max(highs) if highs else None)

    def fingerprint(self) -> tuple[tuple[str, int, str], ...]:
        """What must not change while a run reads the database."""
        return tuple((t.table, t.rows, t.content_hash) for t in self.tables)

    def to_dict(self) -> dict[str, Any]:
        low, high = self.time_range
        return {
            "database": self.database,
            "loaded_at": self.loaded_at,
            "time_min": low,
            "time_max": high,
            "hash_method": f"sum(hash(row without load_id)) mod 2^64, DuckDB {self.duckdb_version}",
            "simulated": self.simulated,
            "tables": [{**asdict(t), "loads": [asdict(ld) for ld in t.loads]} for t in self.tables],
        }


def tables_read(experiment: str, prereg: Preregistration) -> tuple[str, ...]:
    """The tables ``experiment`` reads under these parameters."""
    if experiment == "p1":
        return ("labels",) if prereg.p1.label_source == "corpus" else P1_LOOP_TABLES
    if experiment == "p2":
        return P2_TABLES
    if experiment == "p3":
        return P3_TABLES
    raise ValueError(f"unknown experiment {experiment!r}")


def data_provenance(
    con: duckdb.DuckDBPyConnection, tables: Sequence[str], *, database: str
) -> DataProvenance:
    """Rows, content hash, loads and time range of each of ``tables`` present in ``con``."""
    present = {
        name: tuple(columns)
        for name, columns in con.execute(read_sql("experiments/provenance_columns.sql")).fetchall()
    }
    out = []
    for table in dict.fromkeys(tables):  # each once, in the order given
        if table not in present:
            continue
        columns = present[table]
        row = con.execute(read_sql("experiments/provenance_table.sql"), {"table": table}).fetchone()
        assert row is not None  # an aggregate always returns a row
        loads: tuple[LoadRef, ...] = ()
        if "load_id" in columns and "loads" in present:
            loads = tuple(
                LoadRef(int(r[0]), r[1], r[2], _instant(r[3]), _instant(r[4]), r[5])
                for r in con.execute(
                    read_sql("experiments/provenance_loads.sql"), {"table": table}
                ).fetchall()
            )
        time_columns = [c for c in TIME_COLUMNS.get(table, ()) if c in columns]
        low = high = None
        if time_columns:
            bounds = con.execute(
                read_sql("experiments/provenance_time_range.sql"),
                {"table": table, "columns": time_columns},
            ).fetchone()
            if bounds is not None:
                low, high = _instant(bounds[0]), _instant(bounds[1])
        out.append(TableProvenance(table, int(row[0]), f"{int(row[1]):016x}", low, high, loads))
    return DataProvenance(database, tuple(out), duckdb.__version__, simulated_origin(con))


def _instant(value: Any) -> str | None:
    """An ISO-8601 UTC instant (…Z) from a TIMESTAMPTZ value, or None."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return utc_stamp(value if value.tzinfo else value.replace(tzinfo=UTC))
    return str(value)
