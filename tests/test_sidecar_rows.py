"""The loader's row: accepted exactly when the JSON Schema accepts the record, holding the value
at each declared leaf's path; every problem named; and the content hash is the SHA-256 of the
canonical JSON the issue pins."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_reflection.errors import InvalidSidecar
from agent_reflection.load.sidecars.rows import canonical_json, sidecar_row
from agent_reflection.reflection.checks import describe_problems, record_problems, reflection_row
from agent_reflection.reflection.fields import (
    OBJECT,
    POSITIVE_INTEGER,
    RECORD,
    UNIT_NUMBER,
    Field,
    leaves,
)
from agent_reflection.reflection.record import json_schema, validate_sidecar

SCHEMA = jsonschema.Draft202012Validator(json_schema())

BASE: dict[str, Any] = {
    "schema": "reflection.v1",
    "task_ref": "PROJ-1",
    "agent": "claude-code",
    "session_id": "s-1",
    "timestamp": "2026-03-01T12:00:00Z",
    "repo": "flask",
    "confidence": 0.5,
    "most_likely_wrong": {"surface": "data", "description": "off by one"},
    "known_not_in_diff": None,
    "risk": {"needs_review": False, "score": 0.25, "surface": "docs", "reason": "README"},
    "files_changed": ["README.md"],
    "provenance": {
        "source": "stop-hook",
        "reflection_attempt": 1,
        "degraded": False,
        "reflection_mode": "orchestrated",
    },
}

GIT: dict[str, Any] = {
    "branch": "main",
    "head_start": "a" * 40,
    "head_stop": "b" * 64,
    "commits": ["c" * 40, "b" * 64],
    "uncommitted": [{"path": "src/x.py", "blob": "d" * 40}, {"path": "gone", "blob": None}],
}
OIDS = ["0" * 40, "f" * 64, "F" * 40, "a" * 39, "a" * 40 + "\n", "g" * 40]

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 2**40),
    st.text(max_size=5),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(
        [
            "",
            "auth",
            "none",
            "solo",
            "off",
            "stop-hook",
            "reflection.v1",
            "2026-01-31T00:00:00Z",
            "2026-01-31T00:00:00.5+00:00",
        ]
    ),
    st.sampled_from([0, 1, 0.0, 1.0, 0.5, 2.0, -0.0, 1.5]),
    st.sampled_from(OIDS),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)

PATHS = (
    [(k,) for k in BASE]
    + [("risk", k) for k in BASE["risk"]]
    + [("provenance", k) for k in BASE["provenance"]]
    + [
        ("most_likely_wrong", "surface"),
        ("most_likely_wrong", "description"),
        ("files_changed", 0),
        ("git",),
        *[("git", k) for k in GIT],
        ("git", "commits", 0),
        ("git", "uncommitted", 0),
        ("git", "uncommitted", 1, "blob"),
        ("git", "uncommitted", 0, "path"),
    ]
)


@st.composite
def mutated_records(draw: st.DrawFn) -> Any:
    record = json.loads(json.dumps({**BASE, "git": GIT} if draw(st.booleans()) else BASE))
    for _ in range(draw(st.integers(0, 3))):
        path = draw(st.sampled_from(PATHS))
        parent = record
        for key in path[:-1]:
            if isinstance(parent, dict):
                parent = parent.get(key)
            elif isinstance(parent, list) and isinstance(key, int) and key < len(parent):
                parent = parent[key]
            else:
                parent = None
        if not isinstance(parent, dict | list):
            continue
        action = draw(st.sampled_from(["set", "set", "set", "delete", "extra"]))
        last = path[-1]
        if isinstance(parent, list) and not (isinstance(last, int) and last < len(parent)):
            continue
        if action == "delete" and isinstance(parent, dict):
            parent.pop(last, None)
        elif action == "extra" and isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=4))] = draw(json_values)
        elif isinstance(parent, dict) or (isinstance(last, int) and last < len(parent)):
            parent[last] = draw(json_values)
    # what json.loads would give back, so only JSON types appear
    return json.loads(json.dumps(record))


def _leaf_paths(fields: tuple[Field, ...], parents: tuple[str, ...] = ()) -> list[Any]:
    out: list[Any] = []
    for f in fields:
        if f.kind == OBJECT:
            out.extend(_leaf_paths(f.fields, (*parents, f.name)))
        elif f.column is not None:
            out.append(((*parents, f.name), f))
    return out


LEAF_PATHS = _leaf_paths(RECORD)


def expected_row(obj: Any) -> tuple[Any, ...] | None:
    """The row read off the record along the declaration (None when the JSON Schema rejects it;
    NaN passes the schema's bounds but is no number in [0, 1])."""
    if not SCHEMA.is_valid(obj) or _has_nan(obj):
        return None
    row: list[Any] = []
    for names, f in LEAF_PATHS:
        value: Any = obj
        for name in names:
            value = None if value is None else value.get(name)
        if value is not None and f.kind == UNIT_NUMBER:
            value = float(value)
        elif value is not None and f.kind == POSITIVE_INTEGER:
            value = int(value)
        row.append(value)
    assert [f.column for _, f in LEAF_PATHS] == [f.column for f in leaves()]
    return tuple(row)


def _has_nan(obj: Any) -> bool:
    if isinstance(obj, float):
        return math.isnan(obj)
    if isinstance(obj, dict):
        return any(_has_nan(v) for v in obj.values())
    return isinstance(obj, list) and any(_has_nan(v) for v in obj)


def checked(obj: Any) -> tuple[Any, ...] | None:
    """The loader's row, or None when it rejects the record (validate_sidecar agrees)."""
    try:
        row = reflection_row(obj)
    except InvalidSidecar:
        with pytest.raises(InvalidSidecar):
            validate_sidecar(obj)
        return None
    assert same(reflection_row(validate_sidecar(obj).to_dict()), row)
    return row


def same(a: tuple[Any, ...] | None, b: tuple[Any, ...] | None) -> bool:
    if a is None or b is None:
        return a is b
    return [(type(x), x) for x in a] == [(type(y), y) for y in b]


@settings(max_examples=300, deadline=None)
@given(mutated_records())
def test_the_row_is_taken_exactly_when_the_schema_accepts_the_record(obj):
    assert same(checked(obj), expected_row(obj))


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_arbitrary_json_is_rejected_as_the_schema_rejects_it(obj):
    assert same(checked(obj), expected_row(obj))


@settings(max_examples=300, deadline=None)
@given(mutated_records())
def test_every_problem_is_listed_and_the_first_is_the_one_reflection_row_raises(obj):
    problems = record_problems(obj)
    try:
        reflection_row(obj)
    except InvalidSidecar as exc:
        assert problems and (problems[0].path, problems[0].expected) == (exc.path, exc.expected)
        # no problem twice, and every one names a JSON path
        assert len({p.path for p in problems}) == len(problems)
        assert all(p.path.startswith("/") for p in problems)
    else:
        assert problems == ()


def test_problems_in_nested_objects_and_array_items_are_all_named():
    git = {**GIT, "uncommitted": [{"path": 3, "blob": "d" * 40}, {"blob": "x", "mode": 1}]}
    obj = {**BASE, "risk": {**BASE["risk"], "score": 2}, "git": git, "agent": 5}
    del obj["repo"]
    found = [(p.path, p.expected) for p in record_problems(obj)]
    assert found == [
        ("/repo", "a required property, missing"),
        ("/agent", "a string, got the number 5"),
        ("/risk/score", "a number in [0, 1], got 2"),
        ("/git/uncommitted/0/path", "a string, got the number 3"),
        ("/git/uncommitted/1/mode", "no such property (allowed: path, blob)"),
        ("/git/uncommitted/1/path", "a required property, missing"),
        ("/git/uncommitted/1/blob", "a git object id (40 or 64 lowercase hex digits)"),
    ]
    text = describe_problems(record_problems(obj))
    assert text.startswith("invalid reflection.v1, 7 problems: /repo: a required property")
    assert describe_problems(record_problems(obj), max_chars=80).endswith("; … and 6 more")
    assert record_problems([1]) and record_problems(BASE) == ()


def test_nan_is_not_a_number_in_0_1():
    obj = json.loads(json.dumps({**BASE, "confidence": math.nan}))
    assert checked(obj) is None and expected_row(obj) is None
    with pytest.raises(InvalidSidecar) as caught:
        reflection_row(obj)
    expected = "a number in [0, 1], got the number nan"
    assert (caught.value.path, caught.value.expected) == ("/confidence", expected)


@given(mutated_records())
@settings(max_examples=300, deadline=None)
def test_content_hash_is_sha256_of_the_pinned_canonical_json(obj):
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical_json(obj) == text
    row = sidecar_row(text.encode("utf-8"), "/x/a.reflection.json")
    if isinstance(row, tuple):
        assert row[0] == hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_a_row_carries_hash_file_and_canonical_raw():
    data = json.dumps(BASE, indent=4).encode("utf-8")
    row = sidecar_row(data, "/x/a.reflection.json")
    assert isinstance(row, tuple)
    pinned = json.dumps(BASE, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert row[0] == hashlib.sha256(pinned.encode("utf-8")).hexdigest()
    assert row[-2:] == ("/x/a.reflection.json", canonical_json(BASE))


def test_a_byte_order_mark_is_accepted():
    row = sidecar_row(b"\xef\xbb\xbf" + json.dumps(BASE).encode(), "bom.json")
    assert isinstance(row, tuple)


def test_canonical_json_escapes_like_json_dumps():
    tricky = 'quote " back \\ nl \n tab \t nul \x00 ctl \x1f ls \u2028 emoji 🦆 é'
    record = json.loads(json.dumps(BASE))
    record.update(known_not_in_diff=tricky, files_changed=[tricky, ""], confidence=1e-07)
    record["most_likely_wrong"]["description"] = tricky
    record["risk"]["score"] = 1
    record["provenance"]["reflection_attempt"] = 3.0
    assert reflection_row(record) is not None
    expected = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical_json(record) == expected
    row = sidecar_row(json.dumps(record).encode(), "t.json")
    assert isinstance(row, tuple) and row[-1] == expected and '"reflection_attempt":3.0' in row[-1]
