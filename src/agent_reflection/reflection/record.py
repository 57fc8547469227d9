"""reflection.v1: the typed record, its JSON Schema, and a validator that names the bad field.

Stdlib-only. The fields are declared once in :mod:`agent_reflection.reflection.fields`; the
checks (:mod:`agent_reflection.reflection.checks`) work on plain dicts and import nothing
costly: the Stop hook runs them on the record it writes, and this module runs the same checks,
then builds the frozen dataclasses (a test checks they match the declaration). The JSON Schema
is made from the declaration (:func:`json_schema`) and shipped as
``data/reflection.v1.schema.json``, the contract for other languages; tests prove the file is
the generated text and that schema and checks agree on every valid and invalid example, down to
the JSON path they name.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from agent_reflection.errors import InvalidSidecar
from agent_reflection.reflection import fields as F
from agent_reflection.reflection.checks import check_reflection, check_self_report
from agent_reflection.reflection.fields import (
    FIELDS,
    OID_PATTERN,
    REFLECTION_MODES,
    SCHEMA_VERSION,
    SELF_REPORT_FIELDS,
    SUPPORTED_VERSIONS,
    SURFACE_VALUES,
    TIMESTAMP_PATTERN,
)

__all__ = [
    "FIELDS",
    "REFLECTION_MODES",
    "SCHEMA_VERSION",
    "SELF_REPORT_FIELDS",
    "SUPPORTED_VERSIONS",
    "SURFACE_VALUES",
    "TIMESTAMP_RE",
    "GitFacts",
    "MostLikelyWrong",
    "Provenance",
    "Reflection",
    "Risk",
    "SelfReport",
    "UncommittedFile",
    "json_schema",
    "json_schema_text",
    "parse_self_report",
    "schema_document",
    "validate_sidecar",
]

#: The schema's timestamp pattern.
TIMESTAMP_RE = re.compile(TIMESTAMP_PATTERN)


@dataclass(frozen=True)
class MostLikelyWrong:
    surface: str
    description: str


@dataclass(frozen=True)
class Risk:
    needs_review: bool
    score: float
    surface: str
    reason: str


@dataclass(frozen=True)
class Provenance:
    source: str
    reflection_attempt: int
    degraded: bool
    reflection_mode: str


@dataclass(frozen=True)
class UncommittedFile:
    """A file changed and not committed at stop; ``blob`` None when it was deleted."""

    path: str
    blob: str | None


@dataclass(frozen=True)
class GitFacts:
    """What the session did in git (the record's optional ``git`` object)."""

    branch: str | None
    head_start: str | None
    head_stop: str | None
    commits: tuple[str, ...]
    uncommitted: tuple[UncommittedFile, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "branch": self.branch,
            "head_start": self.head_start,
            "head_stop": self.head_stop,
            "commits": list(self.commits),
            "uncommitted": [{"path": u.path, "blob": u.blob} for u in self.uncommitted],
        }


@dataclass(frozen=True)
class SelfReport:
    """What the agent says about its own work; every field optional."""

    confidence: float | None = None
    most_likely_wrong: MostLikelyWrong | None = None
    known_not_in_diff: str | None = None

    @property
    def is_empty(self) -> bool:
        return (
            self.confidence is None
            and self.most_likely_wrong is None
            and (self.known_not_in_diff is None)
        )


@dataclass(frozen=True)
class Reflection:
    """One reflection.v1 sidecar."""

    task_ref: str
    agent: str
    session_id: str
    timestamp: str
    repo: str
    confidence: float | None
    most_likely_wrong: MostLikelyWrong | None
    known_not_in_diff: str | None
    risk: Risk
    files_changed: tuple[str, ...]
    provenance: Provenance
    schema: str = SCHEMA_VERSION
    #: Absent (None) in sidecars written before it existed or outside a git work tree.
    git: GitFacts | None = None

    def to_dict(self) -> dict[str, Any]:
        mlw = self.most_likely_wrong
        out: dict[str, Any] = {
            "schema": self.schema,
            "task_ref": self.task_ref,
            "agent": self.agent,
            "session_id": self.session_id,
            "timestamp": self.timestamp,
            "repo": self.repo,
            "confidence": self.confidence,
            "most_likely_wrong": None
            if mlw is None
            else {"surface": mlw.surface, "description": mlw.description},
            "known_not_in_diff": self.known_not_in_diff,
            "risk": {
                "needs_review": self.risk.needs_review,
                "score": self.risk.score,
                "surface": self.risk.surface,
                "reason": self.risk.reason,
            },
            "files_changed": list(self.files_changed),
            "provenance": {
                "source": self.provenance.source,
                "reflection_attempt": self.provenance.reflection_attempt,
                "degraded": self.provenance.degraded,
                "reflection_mode": self.provenance.reflection_mode,
            },
        }
        if self.git is not None:
            out["git"] = self.git.to_dict()
        return out

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False, sort_keys=False)

    @classmethod
    def from_dict(cls, obj: Any) -> Reflection:
        return validate_sidecar(obj)


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of reflection.v1, made from the field declaration."""
    defs: dict[str, Any] = {}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://agent-reflection.invalid/schemas/reflection.v1.schema.json",
        "title": SCHEMA_VERSION,
        "description": "One coding-agent session's end-of-run reflection: mechanical fields "
        "written by the Stop hook, plus the agent's optional self-report.",
        **_object_schema(F.RECORD, defs, nullable=False),
        "$defs": defs,
    }


def json_schema_text() -> str:
    """:func:`json_schema` as the shipped file's text (a test proves the file is this)."""
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


def _object_schema(
    fields: tuple[F.Field, ...], defs: dict[str, Any], *, nullable: bool
) -> dict[str, Any]:
    return {
        "type": ["object", "null"] if nullable else "object",
        "additionalProperties": False,
        "required": [f.name for f in fields if f.required],
        "properties": {f.name: _field_schema(f, defs) for f in fields},
    }


_JSON_TYPES = {
    F.STRING: "string",
    F.TIMESTAMP: "string",
    F.UNIT_NUMBER: "number",
    F.BOOLEAN: "boolean",
    F.POSITIVE_INTEGER: "integer",
    F.STRING_ARRAY: "array",
    F.ENUM: "string",
    F.OID: "string",
}


def _field_schema(f: F.Field, defs: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any]
    if f.kind == F.OBJECT:
        out = _object_schema(f.fields, defs, nullable=f.nullable)
    elif f.kind in (F.OID_ARRAY, F.OBJECT_ARRAY):
        items = (
            {"type": "string", "pattern": OID_PATTERN}
            if f.kind == F.OID_ARRAY
            else _object_schema(f.fields, defs, nullable=False)
        )
        out = {"type": "array", "items": items}
        if f.max_items:
            out["maxItems"] = f.max_items
    elif f.kind in (F.VERSION, F.CONST):
        out = {"const": f.values[0]}
    elif f.kind == F.ENUM and f.schema_ref is not None:
        defs[f.schema_ref] = {"type": "string", "enum": list(f.values)}
        ref = {"$ref": f"#/$defs/{f.schema_ref}"}
        out = {"anyOf": [ref, {"type": "null"}]} if f.nullable else ref
    else:
        json_type = _JSON_TYPES[f.kind]
        out = {"type": [json_type, "null"] if f.nullable else json_type}
        if f.kind == F.STRING and f.min_length:
            out["minLength"] = f.min_length
        elif f.kind == F.TIMESTAMP:
            out["pattern"] = TIMESTAMP_PATTERN
        elif f.kind == F.OID:
            out["pattern"] = OID_PATTERN
        elif f.kind == F.UNIT_NUMBER:
            out.update(minimum=0, maximum=1)
        elif f.kind == F.POSITIVE_INTEGER:
            out["minimum"] = 1
        elif f.kind == F.STRING_ARRAY:
            out["items"] = {"type": "string"}
        elif f.kind == F.ENUM:
            out["enum"] = list(f.values)
    if f.description is not None:
        out["description"] = f.description
    return out


def schema_document() -> dict[str, Any]:
    """The shipped JSON Schema (draft 2020-12) as a dict (equal to :func:`json_schema`)."""
    from importlib import resources  # here, not at the top: the Stop hook never needs it

    text = resources.files("agent_reflection").joinpath("data/reflection.v1.schema.json")
    loaded: dict[str, Any] = json.loads(text.read_text("utf-8"))
    return loaded


def validate_sidecar(obj: Any, *, source: str | None = None) -> Reflection:
    """Return ``obj`` as a :class:`Reflection`, or raise :class:`InvalidSidecar`.

    The error names the JSON path of the first problem in field order (``/risk/score``) and
    what was expected there; ``source`` (a file name) is prefixed to the message when given.
    """
    try:
        return _reflection(obj)
    except InvalidSidecar as exc:
        if source is None:
            raise
        raise InvalidSidecar(exc.path, exc.expected, source=source) from None


def parse_self_report(obj: Any) -> SelfReport:
    """The agent's self-report file: an object with any of the three self-report fields.

    Raises :class:`InvalidSidecar` (path relative to the input file) on the wrong shape.
    """
    check_self_report(obj)
    return SelfReport(
        confidence=_float_or_none(obj.get("confidence")),
        most_likely_wrong=_most_likely_wrong(obj.get("most_likely_wrong")),
        known_not_in_diff=obj.get("known_not_in_diff"),
    )


# --- the checks live in reflection.checks (the Stop hook runs them on plain dicts); this
# --- module only turns a checked dict into the typed record -------------------------------


def _reflection(obj: Any) -> Reflection:
    check_reflection(obj)
    risk, provenance = obj["risk"], obj["provenance"]
    return Reflection(
        task_ref=obj["task_ref"],
        agent=obj["agent"],
        session_id=obj["session_id"],
        timestamp=obj["timestamp"],
        repo=obj["repo"],
        confidence=_float_or_none(obj["confidence"]),
        most_likely_wrong=_most_likely_wrong(obj["most_likely_wrong"]),
        known_not_in_diff=obj["known_not_in_diff"],
        risk=Risk(risk["needs_review"], float(risk["score"]), risk["surface"], risk["reason"]),
        files_changed=tuple(obj["files_changed"]),
        provenance=Provenance(
            "stop-hook",
            int(provenance["reflection_attempt"]),
            provenance["degraded"],
            provenance["reflection_mode"],
        ),
        git=_git_facts(obj.get("git")),
    )


def _git_facts(value: Any) -> GitFacts | None:
    if value is None:
        return None
    return GitFacts(
        branch=value["branch"],
        head_start=value["head_start"],
        head_stop=value["head_stop"],
        commits=tuple(value["commits"]),
        uncommitted=tuple(UncommittedFile(u["path"], u["blob"]) for u in value["uncommitted"]),
    )


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)


def _most_likely_wrong(value: Any) -> MostLikelyWrong | None:
    if value is None:
        return None
    return MostLikelyWrong(surface=value["surface"], description=value["description"])
