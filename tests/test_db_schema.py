"""``connect`` runs the schema DDL only when the files changed or the database's tables did."""

from __future__ import annotations

from pathlib import Path

from agent_reflection.store.db import connect, schema_digest, schema_files, schema_is_current


def _recorded(path: Path) -> tuple[str, object]:
    with connect(path) as con:
        row = con.execute("SELECT digest, applied_at FROM schema_version").fetchall()
    assert len(row) == 1
    return row[0]


def test_a_current_schema_is_not_applied_again(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    first = _recorded(db)
    assert first[0] == schema_digest()
    assert _recorded(db) == first  # same row: the DDL did not run on the second open
    assert any(name == "99_schema_version.sql" for name, _ in schema_files())


def test_a_dropped_table_or_column_is_made_again(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    with connect(db) as con:
        con.execute("DROP TABLE labels")
        con.execute("ALTER TABLE loads DROP COLUMN host")
        assert not schema_is_current(con)
    with connect(db) as con:
        assert schema_is_current(con)
        assert con.execute("SELECT count(*) FROM labels").fetchone() == (0,)
        columns = {r[0] for r in con.execute("DESCRIBE loads").fetchall()}
        assert "host" in columns


def test_changed_ddl_files_run_again(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    with connect(db) as con:
        con.execute("UPDATE schema_version SET digest = 'older files'")
        assert not schema_is_current(con)
    assert _recorded(db)[0] == schema_digest()
    with connect(db) as con:
        con.execute("DROP TABLE schema_version")  # a file made before the stamp existed
        assert not schema_is_current(con)
    assert _recorded(db)[0] == schema_digest()


def test_memory_databases_get_the_schema(tmp_path: Path) -> None:
    with connect(":memory:") as con:
        assert schema_is_current(con)
        assert con.execute("SELECT count(*) FROM commits").fetchone() == (0,)
