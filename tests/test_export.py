"""``reflect export --parquet``: every table round-trips through Parquet unchanged."""

from __future__ import annotations

from pathlib import Path

import duckdb
from click.testing import CliRunner

import agent_reflection.cli.export  # noqa: F401  (registers the command)
from agent_reflection.cli._groups import cli
from agent_reflection.load.sidecars.loader import load_sidecars
from agent_reflection.store.db import connect
from agent_reflection.store.export import export_parquet
from sidecar_samples import sidecar, write


def loaded_db(tmp_path: Path) -> Path:
    db = tmp_path / "r.duckdb"
    for i in range(6):
        write(
            tmp_path / "s" / f"{i}.reflection.json",
            sidecar(i, repo=["flask", "org/web app"][i % 2]),
        )
    write(tmp_path / "s" / "bad.reflection.json", "{")
    con = connect(db)
    load_sidecars(con, [tmp_path / "s"], workers=1)
    con.close()
    return db


def read_back(path: str, partitioned: bool) -> duckdb.DuckDBPyRelation:
    con = duckdb.connect()
    if partitioned:
        return con.sql(
            f"SELECT * FROM read_parquet('{path}/*/*.parquet', hive_partitioning = true)"
        )
    return con.sql(f"SELECT * FROM read_parquet('{path}')")


def test_every_table_round_trips_through_parquet(tmp_path):
    con = connect(loaded_db(tmp_path))
    written = {w.table: w for w in export_parquet(con, tmp_path / "out")}
    query = "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'"
    tables = [r[0] for r in con.execute(query).fetchall()]
    assert "redaction_key" in tables  # made by the sidecar load; it never leaves the database
    assert sorted(written) == sorted(set(tables) - {"redaction_key"})
    for name, w in written.items():
        columns = [r[0] for r in con.execute(f'DESCRIBE "{name}"').fetchall()]
        select = ", ".join(f'CAST("{c}" AS VARCHAR)' for c in columns)
        original = con.execute(f'SELECT {select} FROM "{name}" ORDER BY ALL').fetchall()
        back = read_back(w.path, w.partitioned_by is not None)
        copy = back.query("t", f"SELECT {select} FROM t ORDER BY ALL").fetchall()
        assert copy == original, name
        assert w.rows == len(original)
    assert written["reflections"].partitioned_by == "repo"
    assert written["reflections"].rows == 6
    assert written["rejected"].rows == 1
    assert written["commits"].partitioned_by is None  # empty: one file keeps the schema


def test_re_export_overwrites_and_drops_stale_partitions(tmp_path):
    con = connect(loaded_db(tmp_path))
    out = tmp_path / "out"
    export_parquet(con, out)
    con.execute("DELETE FROM reflections WHERE repo = 'flask'")
    (out / "unrelated.txt").write_text("kept")
    export_parquet(con, out)
    parts = sorted(p.name for p in (out / "reflections").iterdir())
    assert len(parts) == 1 and parts[0].startswith("repo=")
    assert (out / "unrelated.txt").read_text() == "kept"
    back = read_back(str(out / "reflections"), True)
    assert back.query("t", "SELECT DISTINCT repo FROM t").fetchall() == [("org/web app",)]


def test_cli_export_prints_what_it_wrote(tmp_path):
    db = loaded_db(tmp_path)
    result = CliRunner().invoke(cli, ["export", "--db", str(db), "--parquet", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    assert "reflections" in result.stdout and "(partitioned by repo)" in result.stdout
    assert (tmp_path / "o" / "loads.parquet").is_file()


def test_cli_export_without_a_database_says_load_first(tmp_path):
    result = CliRunner().invoke(
        cli, ["export", "--db", str(tmp_path / "none.duckdb"), "--parquet", str(tmp_path / "o")]
    )
    assert result.exit_code != 0
    assert "load something first" in str(result.exception)
