"""The hooks' JSON codec agrees with the standard library on hook-shaped data."""

from __future__ import annotations

import json
import subprocess
import sys

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


keys = st.text() | st.integers() | st.booleans() | st.none() | st.floats()
pretty_documents = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(keys, inner, max_size=4)
    ),
    max_leaves=20,
)


@given(pretty_documents, st.sampled_from([0, 1, 2, 4]))
def test_indented_output_matches_stdlib(doc: object, indent: int) -> None:
    assert dumps(doc, indent=indent) == json.dumps(doc, ensure_ascii=False, indent=indent)


@pytest.mark.parametrize("bad", ["", "   ", "{", "{} {}", "nul", "[1,]", "{'a': 1}"])
def test_rejects_what_is_not_exactly_one_document(bad: str) -> None:
    with pytest.raises(ValueError):
        loads(bad)


def test_unserialisable_object_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="set"):
        dumps({"a": {1, 2}})


def test_bad_json_is_a_value_error_when_json_was_never_imported() -> None:
    # In a fresh interpreter (as in a hook) the C scanner cannot build its JSONDecodeError.
    code = (
        "import sys\n"
        "from agent_reflection.hooks._json_lite import loads\n"
        "assert 'json' not in sys.modules\n"
        "for bad in ['{bad', '[1,', '{\"a\": tru}', 'nul']:\n"
        "    try:\n"
        "        loads(bad)\n"
        "    except ValueError as exc:\n"
        "        print(type(exc).__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["JSONDecodeError"] * 4
