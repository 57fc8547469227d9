"""``reflect export --parquet DIR``: every table as Parquet."""

from __future__ import annotations

import json
from dataclasses import asdict

import click

from agent_reflection.cli._groups import cli, db_option


@cli.command("export")
@db_option
@click.option(
    "--parquet",
    "parquet_dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Folder to write <table>.parquet files (or Hive-partitioned <table>/ folders) into.",
)
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
def export_command(db_path: str | None, parquet_dir: str, as_json: bool) -> None:
    """Write every table of the database as Parquet (re-running replaces the earlier export).

    reflections, commits, commit_files and task_commits are Hive-partitioned by repo and tasks
    by source (DIR/commits/repo=flask/…); other tables are one file each (DIR/loads.parquet).

    \b
    Examples:
      reflect export --parquet exports/
      reflect export --db data/reflection.duckdb --parquet /mnt/lake/reflection --json
      python -c "import duckdb; duckdb.read_parquet('exports/reflections/*/*.parquet',
        hive_partitioning=True).aggregate('repo, count(*)').show()"  # pandas: .df()
    """
    from agent_reflection.store.db import connect, existing_database
    from agent_reflection.store.export import export_parquet

    with connect(existing_database(db_path)) as con:
        written = export_parquet(con, parquet_dir)
    if as_json:
        click.echo(json.dumps([asdict(w) for w in written], indent=2))
        return
    for w in written:
        how = f" (partitioned by {w.partitioned_by})" if w.partitioned_by else ""
        click.echo(f"{w.table:<16} {w.rows:>10,} rows -> {w.path}{how}")
