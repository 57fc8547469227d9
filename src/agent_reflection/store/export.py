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
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import duckdb

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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def export_parquet(
    con: duckdb.DuckDBPyConnection, out_dir: str | os.PathLike[str]
) -> list[ExportedTable]:
    """Write every table of the ``main`` schema under ``out_dir``; return what was written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tables = [
        str(row[0])
        for row in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' "
            "AND database_name = current_database() AND NOT temporary ORDER BY table_name"
        ).fetchall()
    ]
    return [_export_table(con, table, out) for table in tables]


def _export_table(con: duckdb.DuckDBPyConnection, table: str, out: Path) -> ExportedTable:
    ident = '"' + table.replace('"', '""') + '"'
    count = con.execute(f"SELECT count(*) FROM {ident}").fetchone()
    rows = int(count[0]) if count else 0
    columns = {str(r[0]) for r in con.execute(f"DESCRIBE {ident}").fetchall()}
    part = PARTITION_BY.get(table)
    partitioned = part if part in columns and rows > 0 else None
    for stale in (out / table, out / f"{table}.parquet"):
        if stale.is_dir():
            shutil.rmtree(stale)
        elif stale.exists():
            stale.unlink()
    if partitioned:
        target = out / table
        options = f'FORMAT parquet, PARTITION_BY ("{partitioned}")'
    else:
        target = out / f"{table}.parquet"
        options = "FORMAT parquet"
    literal = "'" + str(target).replace("'", "''") + "'"
    con.execute(f"COPY (SELECT * FROM {ident}) TO {literal} ({options})")
    return ExportedTable(table, str(target), rows, partitioned)
