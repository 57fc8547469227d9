"""Export every table of the database as Parquet, for engines bigger than one machine.

``DIR/<table>.parquet`` for most tables; tables that hold several repositories or sources are
Hive-partitioned (``DIR/<table>/repo=flask/data_0.parquet``), so Spark, Trino or BigQuery read
one repository without scanning the others. Re-exporting replaces what an earlier export wrote
for each table (and nothing else in DIR). An empty table is written as one (empty) file so its
schema still travels.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import duckdb

from agent_reflection.store.db import compose_sql, read_sql

#: Table -> the column it is Hive-partitioned by (when the table has that column).
PARTITION_BY: dict[str, str] = {
    "reflections": "repo",
    "commits": "repo",
    "commit_files": "repo",
    "task_commits": "repo",
    "tasks": "source",
}


@dataclass(frozen=True)
class ExportedTable:
    table: str
    path: str
    rows: int
    partitioned_by: str | None


def export_parquet(
    con: duckdb.DuckDBPyConnection, out_dir: str | os.PathLike[str]
) -> list[ExportedTable]:
    """Write every table of the ``main`` schema under ``out_dir``; return what was written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tables = [str(row[0]) for row in con.execute(read_sql("core/export_tables.sql")).fetchall()]
    return [_export_table(con, table, out) for table in tables]


def _export_table(con: duckdb.DuckDBPyConnection, table: str, out: Path) -> ExportedTable:
    count = con.execute(compose_sql("core/count_rows.sql", table=table)).fetchone()
    rows = int(count[0]) if count else 0
    columns = {
        str(r[0])
        for r in con.execute(read_sql("core/table_columns.sql"), {"table": table}).fetchall()
    }
    part = PARTITION_BY.get(table)
    partitioned = part if part in columns and rows > 0 else None
    for stale in (out / table, out / f"{table}.parquet"):
        if stale.is_dir():
            shutil.rmtree(stale)
        elif stale.exists():
            stale.unlink()
    if partitioned:
        target = out / table
        copy = compose_sql(
            "core/export_parquet_partitioned.sql", table=table, partition_column=partitioned
        )
    else:
        target = out / f"{table}.parquet"
        copy = compose_sql("core/export_parquet.sql", table=table)
    con.execute(copy, {"path": str(target)})
    return ExportedTable(table, str(target), rows, partitioned)
