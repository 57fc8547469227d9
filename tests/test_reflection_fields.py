"""reflection.v1 is declared once (reflection/fields.py): what is written by hand elsewhere (the
typed model, the shipped JSON Schema file, the ``reflections`` DDL and inserts) must match it."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import typing
from typing import Any

import duckdb
import pytest

from agent_reflection.errors import InvalidSidecar
from agent_reflection.load.sidecars import rows
from agent_reflection.reflection import checks, fields
from agent_reflection.reflection.fields import OBJECT, RECORD, ROW_COLUMNS, Field
from agent_reflection.reflection.record import (
    Reflection,
    SelfReport,
    json_schema,
    json_schema_text,
    schema_document,
    validate_sidecar,
)
from agent_reflection.store.db import read_sql
from sidecar_samples import sidecar as valid_record

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
    assert schema_document() == json_schema()


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
    assert [(k, None) for k in written] == [(f.name, None) for f in RECORD]
    assert keys(written, RECORD) == keys(record, RECORD)


def _ddl_columns() -> list[tuple[str, str, bool]]:
    """The CREATE TABLE's columns, then those added by ALTER TABLE (in file order)."""
    ddl = "\n".join(
        line.split("--")[0] for line in read_sql("schema/10_reflections.sql").splitlines()
    )
    create, _, alters = ddl.partition(";")
    body = create[create.index("(") + 1 : create.rindex(")")]
    out = []
    for line in body.splitlines():
        line = line.strip().rstrip(",")
        if not line:
            continue
        name, rest = line.split(None, 1)
        out.append((name.strip('"'), rest.replace("NOT NULL", "").strip(), "NOT NULL" in rest))
    added = re.findall(r"ALTER TABLE reflections ADD COLUMN IF NOT EXISTS (\w+) ([^;]+);", alters)
    assert len(added) == alters.count("ALTER TABLE"), "an ALTER TABLE the test cannot read"
    return out + [(name, ddl_type.strip(), False) for name, ddl_type in added]


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


def test_the_reflections_ddl_has_a_column_per_declared_field() -> None:
    # Fields added after the first release come last, as ALTER TABLE ... ADD COLUMN (a database
    # made by an older version gains them); they are optional, so their columns are nullable.
    columns = _ddl_columns()
    assert columns[0] == ("content_hash", "VARCHAR PRIMARY KEY", False)
    declared = [(p[-1].column, p[-1].ddl_type, _not_null(p)) for p in _leaf_paths(RECORD)]
    n_created = [c[0] for c in columns].index("load_id") + 1
    assert [c[0] for c in columns[n_created - 3 : n_created]] == ["source_file", "raw", "load_id"]
    assert columns[1 : n_created - 3] + columns[n_created:] == declared
    assert all(not p[0].required for p in _leaf_paths(RECORD)[n_created - 4 :])


def _insert_columns(sql: str) -> list[str]:
    head = sql[sql.index("INSERT INTO reflections (") :]
    listed = head[head.index("(") + 1 : head.index(")")]
    return [c.strip().strip('"') for c in listed.split(",")]


@pytest.mark.parametrize(
    "name", ["sidecars/insert_reflections.sql", "simulate/insert_reflection.sql"]
)
def test_the_inserts_name_every_declared_column(name: str) -> None:
    sql = read_sql(name)
    assert _insert_columns(sql) == ["content_hash", *ROW_COLUMNS, "source_file", "raw", "load_id"]


def test_the_sidecar_insert_selects_the_batch_columns_in_order() -> None:
    sql = read_sql("sidecars/insert_reflections.sql")
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
    con.execute(read_sql("schema/10_reflections.sql"))
    import pyarrow as pa

    batch = pa.Table.from_pylist([dict(zip(rows.COLUMNS, (*row, 0), strict=True))])
    con.register("sidecar_batch", batch)
    con.execute(read_sql("sidecars/insert_reflections.sql"), {"load_id": 1})
    listed = ", ".join(f'"{c}"' for c in ROW_COLUMNS)
    stored = con.execute(f"SELECT {listed} FROM reflections").fetchone()
    assert stored is not None
    got = dict(zip(ROW_COLUMNS, stored, strict=True))
    for path in _leaf_paths(RECORD):
        value: Any = record
        if "git" not in record and path[0].name == "git":
            value = None
        for f in path:
            value = None if value is None else value[f.name]
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
    note = Field("note", fields.STRING, required=False, ddl_type="VARCHAR")
    extra = Field(
        "extra",
        OBJECT,
        required=False,
        nullable=True,
        fields=(Field("level", fields.POSITIVE_INTEGER, column="extra_level", ddl_type="INTEGER"),),
    )
    record_fields = (*RECORD, note, extra)
    fields._set_paths(record_fields, "")
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
