"""reflection.v1: spec cases S1–S14, and proof that the typed model and the JSON Schema agree."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema.exceptions import best_match

from agent_reflection.errors import InvalidSidecar
from agent_reflection.reflection.fields import FIELDS, RECORD
from agent_reflection.reflection.record import (
    Reflection,
    json_schema,
    parse_self_report,
    validate_sidecar,
)

SCHEMA = json_schema()
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def full_doc() -> dict[str, Any]:
    """S1: the design §4 example, filled in."""
    return {
        "schema": "reflection.v1",
        "task_ref": "KAFKA-1234",
        "agent": "claude-code",
        "session_id": "0b6f7c2e-1f0a-4c4e-9a52-7a1f1d2c3b4a",
        "timestamp": "2026-11-22T14:41:52Z",
        "repo": "kafka",
        "confidence": 0.72,
        "most_likely_wrong": {"surface": "data", "description": "migration not run on replicas"},
        "known_not_in_diff": "staging DB already has the column",
        "risk": {
            "needs_review": True,
            "score": 0.9,
            "surface": "data",
            "reason": "data surface (score 0.9, needs review at 0.5): db/migrate/001.sql",
        },
        "files_changed": ["db/migrate/001.sql", "README.md"],
        "provenance": {
            "source": "stop-hook",
            "reflection_attempt": 1,
            "degraded": False,
            "reflection_mode": "solo",
        },
    }


def schema_error_path(doc: Any) -> str | None:
    """The JSON path jsonschema blames, with required/additionalProperties resolved to the key."""
    error = best_match(VALIDATOR.iter_errors(doc))
    return None if error is None else _path_of(error)


def schema_error_paths(doc: Any) -> set[str]:
    """Every path jsonschema blames (a document may have several faults)."""
    return {_path_of(e) for e in VALIDATOR.iter_errors(doc)}


def _path_of(error: Any) -> str:
    parts = [str(p) for p in error.absolute_path]
    if error.validator == "required":
        missing = [k for k in error.validator_value if k not in error.instance]
        parts.append(missing[0])
    elif error.validator == "additionalProperties":
        allowed = set(error.schema.get("properties", {}))
        parts.append(next(k for k in error.instance if k not in allowed))
    return "/" + "/".join(parts) if parts else "/"


def model_error_path(doc: Any) -> str | None:
    try:
        validate_sidecar(doc)
    except InvalidSidecar as exc:
        return exc.path
    return None


def mutate(path: str, value: Any = ..., *, delete: bool = False) -> dict[str, Any]:
    doc = full_doc()
    keys = path.strip("/").split("/")
    target: Any = doc
    for key in keys[:-1]:
        target = target[int(key)] if isinstance(target, list) else target[key]
    if delete:
        del target[keys[-1]]
    else:
        target[keys[-1]] = value
    return doc


# (id, document, expected path or None when valid)
SPEC_CASES: list[tuple[str, dict[str, Any], str | None]] = [
    ("S1", full_doc(), None),
    ("S2", mutate("/schema", "reflection.v2"), "/schema"),
    ("S3-high", mutate("/confidence", 1.2), "/confidence"),
    ("S3-low", mutate("/confidence", -0.1), "/confidence"),
    ("S4", mutate("/confidence", None), None),
    ("S5", mutate("/most_likely_wrong/surface", "security"), "/most_likely_wrong/surface"),
    ("S6", mutate("/risk/score", 1.5), "/risk/score"),
    ("S7", mutate("/risk", delete=True), "/risk"),
    ("S8", mutate("/provenance/reflection_mode", "auto"), "/provenance/reflection_mode"),
    ("S9", mutate("/provenance/reflection_attempt", 0), "/provenance/reflection_attempt"),
    ("S10", mutate("/provenance/source", "cron"), "/provenance/source"),
    ("S11", {**full_doc(), "mood": "great"}, "/mood"),
    ("S12-not-list", mutate("/files_changed", "a.py"), "/files_changed"),
    ("S12-item", mutate("/files_changed", ["a.py", 3]), "/files_changed/1"),
    ("S13-no-zone", mutate("/timestamp", "2026-11-22T14:41:52"), "/timestamp"),
    ("S13-offset", mutate("/timestamp", "2026-11-22T14:41:52+02:00"), "/timestamp"),
    ("S13-date", mutate("/timestamp", "22/11/2026"), "/timestamp"),
]
EXTRA_CASES: list[tuple[str, dict[str, Any], str | None]] = [
    ("mlw-null", mutate("/most_likely_wrong", None), None),
    ("knid-null", mutate("/known_not_in_diff", None), None),
    ("fractional-ts", mutate("/timestamp", "2026-11-22T14:41:52.123456+00:00"), None),
    ("confidence-bool", mutate("/confidence", True), "/confidence"),
    ("confidence-string", mutate("/confidence", "0.9"), "/confidence"),
    (
        "mlw-missing-description",
        mutate("/most_likely_wrong/description", delete=True),
        "/most_likely_wrong/description",
    ),
    ("mlw-extra", mutate("/most_likely_wrong/severity", "high"), "/most_likely_wrong/severity"),
    ("risk-surface", mutate("/risk/surface", "security"), "/risk/surface"),
    ("risk-needs-review-str", mutate("/risk/needs_review", "yes"), "/risk/needs_review"),
    ("risk-extra", mutate("/risk/weight", 1), "/risk/weight"),
    ("degraded-int", mutate("/provenance/degraded", 0), "/provenance/degraded"),
    (
        "attempt-float",
        mutate("/provenance/reflection_attempt", 1.5),
        "/provenance/reflection_attempt",
    ),
    ("empty-task-ref", mutate("/task_ref", ""), "/task_ref"),
    ("agent-number", mutate("/agent", 7), "/agent"),
    ("repo-missing", mutate("/repo", delete=True), "/repo"),
    ("provenance-missing", mutate("/provenance", delete=True), "/provenance"),
    ("files-null", mutate("/files_changed", None), "/files_changed"),
]
ALL_CASES = SPEC_CASES + EXTRA_CASES


@pytest.mark.spec
@pytest.mark.parametrize(
    ("doc", "path"), [c[1:] for c in SPEC_CASES], ids=[c[0] for c in SPEC_CASES]
)
def test_spec_cases(doc: dict[str, Any], path: str | None) -> None:
    assert model_error_path(doc) == path


@pytest.mark.spec
@pytest.mark.parametrize(("doc", "path"), [c[1:] for c in ALL_CASES], ids=[c[0] for c in ALL_CASES])
def test_s14_model_and_schema_agree_on_verdict_and_path(
    doc: dict[str, Any], path: str | None
) -> None:
    assert schema_error_path(doc) == path
    assert model_error_path(doc) == path


def test_valid_example_round_trips() -> None:
    doc = full_doc()
    record = validate_sidecar(doc)
    assert isinstance(record, Reflection)
    assert record.to_dict() == doc
    # the optional fields (the git object) are absent
    assert list(record.to_dict()) == [f.name for f in RECORD if f.required]
    assert json.loads(record.to_json()) == doc
    VALIDATOR.validate(record.to_dict())


def test_error_message_names_path_and_expectation_and_source() -> None:
    with pytest.raises(InvalidSidecar) as info:
        validate_sidecar(mutate("/risk/score", 1.5), source="runs/a.reflection.json")
    message = str(info.value)
    assert message.startswith("runs/a.reflection.json: invalid reflection.v1 at /risk/score")
    assert "a number in [0, 1], got 1.5" in message


def test_unknown_version_message_lists_supported_versions() -> None:
    with pytest.raises(InvalidSidecar, match=r"supported versions: reflection\.v1"):
        validate_sidecar(mutate("/schema", "reflection.v9"))


def test_not_an_object() -> None:
    for value in ([], "x", 3, None):
        assert model_error_path(value) == "/"
        assert schema_error_path(value) == "/"


def test_schema_is_draft_2020_12_and_rejects_unknown_top_level_fields() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"].endswith("2020-12/schema")
    assert SCHEMA["additionalProperties"] is False
    optional = {f.name for f in RECORD if not f.required}
    assert set(SCHEMA["properties"]) == set(FIELDS) == {*SCHEMA["required"], *optional}
    assert "git" in optional


# --- property-based agreement ---------------------------------------------------------------

SURFACES = ["auth", "data", "infra", "ui", "build", "test", "docs", "none"]
json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(-2, 2, allow_nan=False),
    st.text(max_size=5),
    st.sampled_from(SURFACES),
)
json_value = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)

OID = st.text("0123456789abcdef", min_size=40, max_size=40) | st.text(
    "0123456789abcdef", min_size=64, max_size=64
)
git_facts = st.fixed_dictionaries(
    {
        "branch": st.one_of(st.none(), st.text(min_size=1, max_size=10)),
        "head_start": st.one_of(st.none(), OID),
        "head_stop": st.one_of(st.none(), OID),
        "commits": st.lists(OID, max_size=3),
        "uncommitted": st.lists(
            st.fixed_dictionaries(
                {"path": st.text(min_size=1, max_size=8), "blob": st.one_of(st.none(), OID)}
            ),
            max_size=3,
        ),
    }
)

valid_docs = st.builds(
    lambda conf, mlw, knid, files, score, surface, attempt, degraded, mode, frac, git: {
        **full_doc(),
        **({} if git is None else {"git": git}),
        "timestamp": "2026-01-02T03:04:05" + frac + "Z",
        "confidence": conf,
        "most_likely_wrong": mlw,
        "known_not_in_diff": knid,
        "files_changed": files,
        "risk": {"needs_review": score >= 0.5, "score": score, "surface": surface, "reason": "r"},
        "provenance": {
            "source": "stop-hook",
            "reflection_attempt": attempt,
            "degraded": degraded,
            "reflection_mode": mode,
        },
    },
    st.one_of(st.none(), st.floats(0, 1)),
    st.one_of(
        st.none(),
        st.fixed_dictionaries(
            {"surface": st.sampled_from(SURFACES), "description": st.text(max_size=20)}
        ),
    ),
    st.one_of(st.none(), st.text(max_size=20)),
    st.lists(st.text(min_size=1, max_size=20), max_size=5),
    st.floats(0, 1),
    st.sampled_from(SURFACES),
    st.integers(1, 50),
    st.booleans(),
    st.sampled_from(["off", "solo", "orchestrated"]),
    st.sampled_from(["", ".5", ".123456789"]),
    st.one_of(st.none(), git_facts),
)


@given(valid_docs)
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
def test_every_valid_record_round_trips_and_the_schema_accepts_it(doc: dict[str, Any]) -> None:
    assert not list(VALIDATOR.iter_errors(doc))
    assert validate_sidecar(doc).to_dict() == doc


@given(st.data())
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_single_field_mutations_get_the_same_verdict_and_path(data: st.DataObject) -> None:
    doc = data.draw(valid_docs)
    leaf_paths = [f"/{k}" for k in FIELDS] + [
        f"/{k}/{sub}" for k in ("risk", "provenance") for sub in doc[k]
    ]
    if doc["most_likely_wrong"] is not None:
        leaf_paths += ["/most_likely_wrong/surface", "/most_likely_wrong/description"]
    if "git" in doc:
        leaf_paths += [f"/git/{sub}" for sub in doc["git"]]
        leaf_paths += [f"/git/commits/{i}" for i in range(len(doc["git"]["commits"]))]
        leaf_paths += [
            f"/git/uncommitted/{i}/{k}" for i in range(len(doc["git"]["uncommitted"])) for k in "pb"
        ]
    path = data.draw(st.sampled_from(leaf_paths))
    mutated = copy.deepcopy(doc)
    *parents, last = path.strip("/").split("/")
    target = mutated
    for key in parents:
        target = target[int(key)] if isinstance(target, list) else target[key]
    if last in ("p", "b"):
        last = {"p": "path", "b": "blob"}[last]
    if isinstance(target, list):
        target[int(last)] = data.draw(json_value)
    elif data.draw(st.booleans()):
        target[last] = data.draw(json_value)
    else:
        target.pop(last, None)
    # Same verdict; the model names the first fault in field order, which must be one of the
    # faults jsonschema reports (a replaced sub-object can hold several).
    model_path = model_error_path(mutated)
    schema_paths = schema_error_paths(mutated)
    assert (model_path is None) == (not schema_paths)
    if model_path is not None:
        assert model_path in schema_paths


def test_self_report_parsing() -> None:
    report = parse_self_report(
        {"confidence": 0.4, "most_likely_wrong": {"surface": "ui", "description": "d"}}
    )
    assert report.confidence == 0.4 and report.known_not_in_diff is None
    assert any(getattr(report, f.name) is not None for f in report.declared)
    empty = parse_self_report({})
    assert all(getattr(empty, f.name) is None for f in empty.declared)
    with pytest.raises(InvalidSidecar) as info:
        parse_self_report({"confidence": 0.4, "notes": "x"})
    assert info.value.path == "/notes"
    with pytest.raises(InvalidSidecar) as info:
        parse_self_report({"confidence": 2})
    assert info.value.path == "/confidence"


_STAMP_CHARS = st.sampled_from("0123456789-T:.Z+\n 0١")
_STAMPS = st.text(_STAMP_CHARS, max_size=32) | st.builds(
    lambda base, frac, tail: base + frac + tail,
    st.sampled_from(["2026-01-31T12:00:00", "2026-1-31T12:00:00", "2026-01-31 12:00:00"]),
    st.sampled_from(["", ".", ".1", ".123456789", ".1234567890", ".١"]),
    st.sampled_from(["Z", "+00:00", "Z\n", "Z\n\n", "+01:00", "", "z", "Z "]),
)


@given(_STAMPS)
def test_a_timestamp_is_accepted_exactly_when_the_schema_accepts_it(text: str) -> None:
    doc = mutate("/timestamp", text)
    assert (model_error_path(doc) is None) == (schema_error_path(doc) is None)
    assert model_error_path(doc) in (None, "/timestamp")


@pytest.mark.parametrize("item", [None, 3, "x", []])
def test_an_uncommitted_item_that_is_not_an_object_is_named_by_its_index(item: Any) -> None:
    # found by the mutation test above: the item's own path was given its index twice
    doc = full_doc()
    doc["git"] = {
        "branch": None,
        "head_start": None,
        "head_stop": None,
        "commits": [],
        "uncommitted": [{"path": "a.py", "blob": None}, item],
    }
    assert model_error_path(doc) == "/git/uncommitted/1"
    assert schema_error_paths(doc) == {"/git/uncommitted/1"}
