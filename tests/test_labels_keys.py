"""The labels loader's fast path (orjson, keys hashed in DuckDB) gives the records, keys and
rejects the standard library's reading gives: a corpus loaded by an earlier version re-loads
as already present, whatever its records hold."""

from __future__ import annotations

import gc
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_reflection.load.labels import (
    canonical_text,
    load_labels,
    parse_record,
    parse_usual,
)
from agent_reflection.store.db import connect


def reference_digest(rec: dict[str, Any]) -> str:
    """The record key's digest as the loader wrote it before orjson (stdlib json)."""
    text = json.dumps(rec, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


# Values where orjson and the standard library part ways: floats of every magnitude (Python's
# repr switches to an exponent below 1e-4 and from 1e16), integers past 64 bits, non-ASCII,
# DEL and control characters, nesting.
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([1e-5, 1e-4, 9.999e15, 1e16, 5e-324, -0.0, 0.0, 123.0, 1e300]),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=6),
    st.sampled_from(["\x7f", "caf\u00e9", "\u2028", "a\x1fb", "tab\t", ""]),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)
confidences = st.one_of(
    st.floats(min_value=0, max_value=1),
    st.sampled_from([0.0, -0.0, 1.0, 1e-7, 5e-5, 0.5]),
    st.sampled_from([1.5, -0.1, "0.3", "high", True, None, 50]),
)
corrects = st.sampled_from([True, False, 0, 1, 1.0, "yes", "no", "maybe", None, 2])
records = st.fixed_dictionaries(
    {"confidence": confidences, "correct": corrects},
    optional={
        "model": st.sampled_from(["o1", "caf\u00e9", "m\x7f", ""]),
        "question_id": st.text(max_size=5),
        "extra": values,
        "n": values,
    },
)


@pytest.mark.slow  # 4-10 s: 25 files loaded twice into DuckDB
@given(st.lists(records, min_size=1, max_size=12), st.booleans())
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_keys_rows_and_rejects_match_the_standard_library(
    tmp_path_factory: pytest.TempPathFactory, recs: list[dict[str, Any]], ascii_only: bool
) -> None:
    recs = recs + recs[:2]  # identical records: the occurrence number tells them apart
    folder = tmp_path_factory.mktemp("keys")
    path = folder / "k.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=ascii_only) + "\n" for r in recs), "utf-8")
    expected: list[tuple[int, str, float, bool, dict[str, str]]] = []
    seen: dict[str, int] = {}
    rejected = 0
    # split on "\n" only, as the loader does (splitlines also breaks at NEL and U+2028)
    for line, raw in enumerate(path.read_text("utf-8").split("\n")[:-1], start=1):
        rec = json.loads(raw)
        try:
            conf, correct, groups = parse_record(rec)
        except ValueError:
            rejected += 1
            continue
        digest = reference_digest(rec)
        seen[digest] = seen.get(digest, 0) + 1
        expected.append((line, f"{digest}#{seen[digest]}", conf, correct, groups))
    con = connect(folder / "k.duckdb")
    summary = load_labels(con, path)
    assert (summary.read, summary.loaded, summary.rejected) == (
        len(recs),
        len(expected),
        rejected,
    )
    stored = [
        (line, key, conf, correct, json.loads(groups))
        for line, key, conf, correct, groups in con.execute(
            "SELECT line, record_key, confidence, correct, groups FROM labels ORDER BY line"
        ).fetchall()
    ]
    assert stored == expected
    again = load_labels(con, path)
    assert (again.loaded, again.already_present) == (0, len(expected))


@given(st.dictionaries(st.text(max_size=4), values, max_size=5))
@settings(max_examples=300, deadline=None)
def test_canonical_text_is_the_standard_librarys(rec: dict[str, Any]) -> None:
    assert canonical_text(rec) == json.dumps(rec, sort_keys=True, separators=(",", ":"))
    # labels.record_key before its #n (the load computes it in DuckDB)
    assert hashlib.sha256(canonical_text(rec).encode()).hexdigest() == reference_digest(rec)


@given(records)
@settings(max_examples=300, deadline=None)
def test_the_usual_record_parses_as_the_full_checks_do(rec: dict[str, Any]) -> None:
    usual = parse_usual(rec)
    if usual is not None:
        assert usual == parse_record(rec)


def test_a_usual_record_takes_the_fast_path() -> None:
    rec = {"question_id": "q1", "confidence": 0.25, "correct": False, "model": "o1"}
    assert parse_usual(rec) == (0.25, False, {"question_id": "q1", "model": "o1"})
    assert parse_usual({**rec, "confidence": 1e-5}) is None  # a float orjson writes otherwise
    assert parse_usual({**rec, "correct": 1}) is None  # 1/0 and words: the full checks


def test_the_collector_is_on_again_after_a_load_and_stays_off_if_it_was(tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl"
    path.write_text('{"confidence": 0.5, "correct": true}\n{"confidence": 2}\n', "utf-8")
    con = connect(tmp_path / "g.duckdb")
    assert gc.isenabled()
    load_labels(con, path, corpus="a")
    assert gc.isenabled()
    gc.disable()
    try:
        load_labels(con, path, corpus="b")
        assert not gc.isenabled()
    finally:
        gc.enable()
