"""reflection.v1 is declared once (reflection/fields.py): the typed model, the shipped JSON
Schema, the ``reflections`` columns and the insert are made from it, and a field added to it
reaches every one of them."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import typing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import jsonschema
import pytest

from agent_reflection.errors import InvalidSidecar
from agent_reflection.load.sidecars import rows
from agent_reflection.load.sidecars.loader import load_sidecars
from agent_reflection.reflection import checks, fields
from agent_reflection.reflection.columns import render
from agent_reflection.reflection.fields import OBJECT, RECORD, ROW_COLUMNS, Field
from agent_reflection.reflection.record import (
    Record,
    Reflection,
    SelfReport,
    json_schema,
    json_schema_text,
    model,
    validate_sidecar,
)
from agent_reflection.simulate.phase0 import sim_reflection
from agent_reflection.store import db
from agent_reflection.store.db import connect, read_sql, schema_digest
from sidecar_samples import FIRST_RELEASE_DDL, write
from sidecar_samples import sidecar as valid_record
from sim_rows import insert_reflection

SCHEMA_FILE = "src/agent_reflection/data/reflection.v1.schema.json"
GIT = {
    "branch": "main",
    "head_start": "a" * 40,
    "head_stop": "b" * 40,
    "commits": ["c" * 40, "b" * 40],
    "uncommitted": [{"path": "src/x.py", "blob": "d" * 40}, {"path": "gone.py", "blob": None}],
}


def test_the_shipped_json_schema_is_the_one_made_from_the_declaration() -> None:
    from importlib import resources

    shipped = resources.files("agent_reflection").joinpath("data/reflection.v1.schema.json")
    assert shipped.read_text("utf-8") == json_schema_text(), (
        f"{SCHEMA_FILE} is stale: rewrite it with json_schema_text() "
        "(agent_reflection.reflection.record)"
    )
    assert json.loads(shipped.read_text("utf-8")) == json_schema()


def test_every_field_says_what_it_holds() -> None:
    def walk(specs: tuple[Field, ...]) -> list[Field]:
        return [g for f in specs for g in (f, *walk(f.fields))]

    in_arrays = {
        g.path for f in walk(RECORD) if f.kind == fields.OBJECT_ARRAY for g in walk(f.fields)
    }
    for f in walk(RECORD):
        assert f.kind in fields.KINDS
        assert (f.kind in (OBJECT, fields.OBJECT_ARRAY)) == bool(f.fields), f
        unstored = f.kind in (OBJECT, *fields.UNSTORED_KINDS) or f.path in in_arrays
        assert (f.column is None) == unstored, f
        if f.column is not None:
            assert f.ddl_type, f"{f!r} has no DDL type"
        if f.kind in (fields.ENUM, fields.CONST, fields.VERSION):
            assert f.values and all(isinstance(v, str) for v in f.values), f
    assert len(set(ROW_COLUMNS)) == len(ROW_COLUMNS)
    assert [f.path for f in RECORD[7].fields] == [
        "/most_likely_wrong/surface",
        "/most_likely_wrong/description",
    ]
    with pytest.raises(ValueError, match="unknown kind 'text'"):
        Field("x", "text")


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _model_matches(cls: type, specs: tuple[Field, ...]) -> None:
    names = [f.name for f in dataclasses.fields(cls)]
    assert sorted(names) == sorted(f.name for f in specs), cls
    hints = _hints(cls)
    for f in specs:
        hint = hints[f.name]
        if f.kind == OBJECT:
            inner = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
            assert len(inner) == 1 and dataclasses.is_dataclass(inner[0]), (cls, f)
            _model_matches(inner[0], f.fields)
        elif f.kind == fields.OBJECT_ARRAY:  # tuple[Item, ...]
            item = typing.get_args(hint)[0]
            assert dataclasses.is_dataclass(item), (cls, f)
            _model_matches(item, f.fields)
        nullable = type(None) in typing.get_args(hint)
        # an absent optional field reads as None too
        assert nullable == (f.nullable or not f.required), f"{cls.__name__}.{f.name}: {nullable}"


def test_the_typed_model_has_the_declared_fields() -> None:
    _model_matches(Reflection, RECORD)
    assert [f.name for f in dataclasses.fields(SelfReport)] == list(fields.SELF_REPORT_FIELDS)


def test_the_typed_model_writes_the_declared_keys_in_declaration_order() -> None:
    assert validate_sidecar(valid_record()).to_dict() == valid_record()  # no git: none written
    record = valid_record(git=GIT)
    assert validate_sidecar(record).to_dict() == record

    def keys(obj: dict[str, Any], specs: tuple[Field, ...]) -> list[Any]:
        return [
            (f.name, keys(obj[f.name], f.fields) if f.kind == OBJECT and obj[f.name] else None)
            for f in specs
        ]

    written = validate_sidecar(record).to_dict()
    assert [(k, None) for k in written] == [(f.name, None) for f in RECORD if f.name in record]
    assert keys(written, RECORD) == keys(record, RECORD)


def _table_columns(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, bool]]:
    """(name, type, NOT NULL) of each ``reflections`` column, as DuckDB holds the table."""
    found = con.execute(
        "SELECT column_name, data_type, is_nullable = 'NO' FROM information_schema.columns "
        "WHERE table_name = 'reflections' ORDER BY ordinal_position"
    ).fetchall()
    named = {"TIMESTAMP WITH TIME ZONE": "TIMESTAMPTZ"}
    return [(name, named.get(kind, kind), not_null) for name, kind, not_null in found]


def _not_null(path: tuple[Field, ...]) -> bool:
    return all(f.required and not f.nullable for f in path)


def _leaf_paths(specs: tuple[Field, ...], parents: tuple[Field, ...] = ()) -> list[Any]:
    out: list[Any] = []
    for f in specs:
        path = (*parents, f)
        if f.kind == OBJECT:
            out.extend(_leaf_paths(f.fields, path))
        elif f.column is not None:
            out.append(path)
    return out


def test_the_reflections_table_has_a_column_per_declared_field(tmp_path: Path) -> None:
    # The DDL's columns are made from the declaration: name, type, NOT NULL when the field and
    # every object above it are required and not nullable.
    with connect(tmp_path / "t.duckdb") as con:
        columns = _table_columns(con)
    declared = [(p[-1].column, p[-1].ddl_type, _not_null(p)) for p in _leaf_paths(RECORD)]
    assert columns == [
        ("content_hash", "VARCHAR", True),
        *declared,
        ("source_file", "VARCHAR", True),
        ("raw", "JSON", True),
        ("load_id", "BIGINT", True),
    ]
    assert [f.not_null for f in fields.leaves()] == [_not_null(p) for p in _leaf_paths(RECORD)]


def test_a_database_of_the_first_release_gains_every_column_declared_since(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.duckdb"
    with duckdb.connect(str(path)) as old:
        old.execute(FIRST_RELEASE_DDL)
        first = {name for name, _, _ in _table_columns(old)}
    with connect(path) as con:  # the schema DDL runs: ALTER TABLE ... ADD COLUMN IF NOT EXISTS
        names = [name for name, _, _ in _table_columns(con)]
    assert set(names) == {"content_hash", *ROW_COLUMNS, "source_file", "raw", "load_id"}
    # Only a field that may be absent can be added to an existing table (its older rows and
    # sidecars lack it): every column the first release did not have is such a field's.
    added = [f for f in fields.leaves() if f.column not in first]
    assert {"git_branch", "git_head_start", "git_head_stop"} <= {f.column for f in added}
    assert all(f.may_be_absent for f in added)


def _insert_columns(sql: str) -> list[str]:
    head = sql[sql.index("INSERT INTO reflections (") :]
    listed = head[head.index("(") + 1 : head.index(")")]
    return [c.strip().strip('"') for c in listed.split(",")]


def test_the_insert_names_every_declared_column() -> None:
    sql = render(read_sql("sidecars/insert_reflections.sql"))
    assert _insert_columns(sql) == ["content_hash", *ROW_COLUMNS, "source_file", "raw", "load_id"]


def test_a_simulated_record_is_stored_as_the_loader_stores_its_file(tmp_path: Path) -> None:
    # The simulator makes typed records and stores them through the loader's own row and
    # insert: the row equals the one `reflect load sidecars` stores for the same record.
    when = datetime(2026, 3, 1, 12, tzinfo=UTC)
    record = sim_reflection("T-1", 0.7, when=when, files=["src/auth/jwt.ts"])
    write(tmp_path / "s" / "a.reflection.json", record.to_dict())
    query = "SELECT * EXCLUDE (load_id, source_file) FROM reflections"
    with connect(tmp_path / "sim.duckdb") as con:
        insert_reflection(con, "T-1", 0.7, when=when, files=["src/auth/jwt.ts"])
        simulated = con.execute(query).fetchall()
    with connect(tmp_path / "loaded.duckdb") as con:
        load_sidecars(con, [tmp_path / "s"], workers=1)
        loaded = con.execute(query).fetchall()
    assert simulated == loaded and len(loaded) == 1


def test_the_sidecar_insert_selects_the_batch_columns_in_order() -> None:
    sql = render(read_sql("sidecars/insert_reflections.sql"))
    select = sql[sql.index("SELECT") : sql.index("FROM sidecar_batch")]
    selected = [c.strip('"') for c in re.findall(r'\bb\.("?\w+"?)', select)]
    assert selected == list(rows.COLUMNS[:-1])  # all but ord, which orders the batch
    assert ("content_hash", *ROW_COLUMNS, "source_file", "raw", "ord") == rows.COLUMNS


@pytest.mark.parametrize("with_git", [False, True], ids=["without-git", "with-git"])
def test_a_loaded_row_lands_in_the_declared_columns(tmp_path: Any, with_git: bool) -> None:
    # The row the checks build, inserted by the real statement, reads back field by field.
    record = valid_record(git=GIT) if with_git else valid_record()
    data = rows.canonical_json(record).encode()
    row = rows.sidecar_row(data, "a.reflection.json")
    assert isinstance(row, tuple)
    con = duckdb.connect(str(tmp_path / "t.duckdb"))
    con.execute(render(read_sql("schema/10_reflections.sql")))
    import pyarrow as pa

    batch = pa.Table.from_pylist([dict(zip(rows.COLUMNS, (*row, 0), strict=True))])
    con.register("sidecar_batch", batch)
    con.execute(render(read_sql("sidecars/insert_reflections.sql")), {"load_id": 1})
    listed = ", ".join(f'"{c}"' for c in ROW_COLUMNS)
    stored = con.execute(f"SELECT {listed} FROM reflections").fetchone()
    assert stored is not None
    got = dict(zip(ROW_COLUMNS, stored, strict=True))
    for path in _leaf_paths(RECORD):
        value: Any = record
        for f in path:  # an absent optional field reads as null
            value = None if value is None else value.get(f.name)
        column = path[-1].column
        if column == "timestamp":
            assert got[column].isoformat().replace("+00:00", "Z") == value
        else:
            assert got[column] == value, column
    # The lists of the git object are read from the stored canonical JSON.
    raw = con.execute(
        "SELECT json_extract(raw, '$.git.commits'), json_extract(raw, '$.git.uncommitted') "
        "FROM reflections"
    ).fetchone()
    assert raw is not None
    if with_git:
        assert [json.loads(v) for v in raw] == [GIT["commits"], GIT["uncommitted"]]
    else:
        assert raw == (None, None)


def test_an_optional_field_may_be_absent_and_a_required_one_may_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The next fields will be optional: the checks handle that from the declaration alone.
    # Declare one (a nullable string and an optional object).
    note = Field("note", fields.STRING, required=False)
    extra = Field(
        "extra",
        OBJECT,
        required=False,
        nullable=True,
        fields=(Field("level", fields.POSITIVE_INTEGER, column="extra_level"),),
    )
    record_fields = fields.declare((*RECORD, note, extra))
    monkeypatch.setattr(checks, "RECORD", record_fields)
    monkeypatch.setattr(checks, "_RECORD_SHAPE", checks._Shape(record_fields))

    base = valid_record()
    for record, tail in [
        (base, (None, None)),
        ({**base, "note": "n"}, ("n", None)),
        ({**base, "extra": None}, (None, None)),
        ({**base, "note": "n", "extra": {"level": 2.0}}, ("n", 2)),
    ]:
        row = checks.reflection_row(record)
        assert row[-2:] == tail
        assert checks.record_problems(record) == ()
        expected = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert rows.canonical_json(record) == expected
    for bad, path in [
        ({**base, "note": None}, "/note"),
        ({**base, "extra": {}}, "/extra/level"),
        ({**base, "extra": {"level": 0}}, "/extra/level"),
    ]:
        assert [p.path for p in checks.record_problems(bad)] == [path]
        with pytest.raises(InvalidSidecar) as caught:
            checks.reflection_row(copy.deepcopy(bad))
        assert caught.value.path == path
    missing = {k: v for k, v in base.items() if k != "repo"}
    with pytest.raises(InvalidSidecar, match="a required property, missing"):
        checks.reflection_row(missing)


def test_adding_a_field_reaches_the_schema_the_model_the_checks_the_table_and_the_insert(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # docs/capture.md, "Adding a field": one Field in the declaration is all the record's
    # forms need (the hook then fills it). Declared here on a copy of the declaration.
    # (Named so that it cannot meet a real field.)
    added = Field(
        "added_in_a_test",
        fields.POSITIVE_INTEGER,
        required=False,
        description="MECHANICAL: a count the hook would fill.",
    )
    extended = fields.declare((*RECORD, added))
    sample = {**valid_record(), "added_in_a_test": 3}

    # The JSON Schema: a property, not required.
    schema = json_schema(extended)
    assert schema["properties"]["added_in_a_test"] == {
        "type": "integer",
        "minimum": 1,
        "description": "MECHANICAL: a count the hook would fill.",
    }
    assert "added_in_a_test" not in schema["required"]
    jsonschema.validate(sample, schema)
    assert not jsonschema.Draft202012Validator(schema).is_valid({**sample, "added_in_a_test": 0})

    # The typed model: an attribute, None when absent, written back in declaration order.
    @model(extended)
    class Extended(Record):
        pass

    assert [f.name for f in dataclasses.fields(Extended)][-1] == "added_in_a_test"
    assert Extended.from_checked(sample).added_in_a_test == 3
    assert Extended.from_checked(sample).to_dict() == sample
    assert Extended.from_checked(valid_record()).added_in_a_test is None
    assert "added_in_a_test" not in Extended.from_checked(valid_record()).to_dict()

    # The checks: the loader's row ends with it; a bad value is named by its path.
    shape = checks._Shape(extended)
    row: list[Any] = []
    checks._object(sample, "", shape, row)
    assert row[-1] == 3 and len(row) == len(ROW_COLUMNS) + 1
    with pytest.raises(InvalidSidecar, match="an integer ≥ 1") as caught:
        checks._object({**sample, "added_in_a_test": 0}, "", shape, [])
    assert caught.value.path == "/added_in_a_test"

    # The table: a new database has the column, an existing one gains it; the schema digest
    # changes, so connect() runs the DDL on an existing file.
    ddl = render(read_sql("schema/10_reflections.sql"), extended)
    with duckdb.connect(str(tmp_path / "existing.duckdb")) as con:
        con.execute(render(read_sql("schema/10_reflections.sql")))
        con.execute(ddl)
        assert _table_columns(con)[-1] == ("added_in_a_test", "INTEGER", False)
    with duckdb.connect(str(tmp_path / "new.duckdb")) as con:
        con.execute(ddl)
        assert ("added_in_a_test", "INTEGER", False) in _table_columns(con)

        # The insert: the loader's batch, with the new column, lands in it.
        insert = render(read_sql("sidecars/insert_reflections.sql"), extended)
        assert _insert_columns(insert)[-4:] == ["added_in_a_test", "source_file", "raw", "load_id"]
        loaded = rows.sidecar_row(rows.canonical_json(valid_record()).encode(), "a.json")
        assert isinstance(loaded, tuple)
        import pyarrow as pa

        batch = dict(zip(rows.COLUMNS, (*loaded, 0), strict=True))
        con.register("sidecar_batch", pa.Table.from_pylist([{**batch, "added_in_a_test": 3}]))
        con.execute(insert, {"load_id": 1})
        assert con.execute("SELECT added_in_a_test, task_ref FROM reflections").fetchall() == [
            (3, valid_record()["task_ref"])
        ]
    today = schema_digest()
    monkeypatch.setattr(db, "render_record_columns", lambda sql: render(sql, extended))
    assert schema_digest.__wrapped__() != today


def test_the_docs_name_every_reflections_column() -> None:
    docs = (Path(__file__).resolve().parents[1] / "docs" / "loading.md").read_text("utf-8")
    table = docs.split("| column | from |", 1)[1].split("\n\n", 1)[0]
    named = set(re.findall(r"`(\w+)`", table))
    assert set(ROW_COLUMNS) <= named, sorted(set(ROW_COLUMNS) - named)
