"""The hooks' JSON codec agrees with the standard library on hook-shaped data."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_reflection.hooks._json_lite import dumps, loads

scalars = st.none() | st.booleans() | st.integers() | st.text() | st.floats(allow_nan=False)
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(documents)
def test_round_trip_matches_stdlib(doc: object) -> None:
    text = dumps(doc)
    assert text == json.dumps(doc, ensure_ascii=False)
    assert loads(text) == json.loads(text)
    assert loads(f" \n{text}\t") == json.loads(text)


@pytest.mark.parametrize("bad", ["", "   ", "{", "{} {}", "nul", "[1,]", "{'a': 1}"])
def test_rejects_what_is_not_exactly_one_document(bad: str) -> None:
    with pytest.raises(ValueError):
        loads(bad)


def test_unserialisable_object_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="set"):
        dumps({"a": {1, 2}})
