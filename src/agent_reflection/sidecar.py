"""reflection.v1: the typed record, its JSON Schema, and a validator that names the bad field.

Stdlib-only: the Stop hook builds and checks records with it. The shipped JSON Schema
(``data/reflection.v1.schema.json``) is the contract for other languages; tests prove the two
agree on every valid and invalid example, down to the JSON path they name.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent_reflection.errors import InvalidSidecar

SCHEMA_VERSION = "reflection.v1"
SUPPORTED_VERSIONS: tuple[str, ...] = (SCHEMA_VERSION,)
SURFACE_VALUES: tuple[str, ...] = ("auth", "data", "infra", "ui", "build", "test", "docs", "none")
REFLECTION_MODES: tuple[str, ...] = ("off", "solo", "orchestrated")
SELF_REPORT_FIELDS: tuple[str, ...] = ("confidence", "most_likely_wrong", "known_not_in_diff")
FIELDS: tuple[str, ...] = (
    "schema", "task_ref", "agent", "session_id", "timestamp", "repo",
    *SELF_REPORT_FIELDS, "risk", "files_changed", "provenance",
)  # fmt: skip
TIMESTAMP_RE = re.compile(
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?(Z|\+00:00)$"
)


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

    def to_dict(self) -> dict[str, Any]:
        mlw = self.most_likely_wrong
        return {
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

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False, sort_keys=False)

    @classmethod
    def from_dict(cls, obj: Any) -> Reflection:
        return validate_sidecar(obj)


def schema_document() -> dict[str, Any]:
    """The shipped JSON Schema (draft 2020-12) as a dict."""
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
    _object(obj, "", allowed=SELF_REPORT_FIELDS, required=())
    return SelfReport(
        confidence=_confidence(obj.get("confidence")),
        most_likely_wrong=_most_likely_wrong(obj.get("most_likely_wrong")),
        known_not_in_diff=_optional_string(obj.get("known_not_in_diff"), "/known_not_in_diff"),
    )


# --- the validator: one small function per field, in schema order -------------------------


def _reflection(obj: Any) -> Reflection:
    _object(obj, "", allowed=FIELDS, required=FIELDS)
    if obj["schema"] != SCHEMA_VERSION:
        raise InvalidSidecar(
            "/schema",
            f"the literal {SCHEMA_VERSION!r} (got {obj['schema']!r}; supported versions: "
            f"{', '.join(SUPPORTED_VERSIONS)})",
        )
    ids = {k: _string(obj[k], f"/{k}", min_length=1) for k in FIELDS[1:4]}
    timestamp = _string(obj["timestamp"], "/timestamp")
    if not TIMESTAMP_RE.match(timestamp):
        raise InvalidSidecar("/timestamp", "an ISO-8601 UTC time like 2026-01-31T12:00:00Z")
    return Reflection(
        task_ref=ids["task_ref"],
        agent=ids["agent"],
        session_id=ids["session_id"],
        timestamp=timestamp,
        repo=_string(obj["repo"], "/repo", min_length=1),
        confidence=_confidence(obj["confidence"]),
        most_likely_wrong=_most_likely_wrong(obj["most_likely_wrong"]),
        known_not_in_diff=_optional_string(obj["known_not_in_diff"], "/known_not_in_diff"),
        risk=_risk(obj["risk"]),
        files_changed=_files(obj["files_changed"]),
        provenance=_provenance(obj["provenance"]),
    )


def _object(obj: Any, path: str, *, allowed: tuple[str, ...], required: tuple[str, ...]) -> None:
    if not isinstance(obj, Mapping):
        raise InvalidSidecar(path, f"an object, got {_kind(obj)}")
    # Unknown keys first, then missing ones: the order JSON Schema validators report them in.
    for key in obj:
        if key not in allowed:
            raise InvalidSidecar(
                f"{path}/{key}", f"no such property (allowed: {', '.join(allowed)})"
            )
    for key in required:
        if key not in obj:
            raise InvalidSidecar(f"{path}/{key}", "a required property, missing")


def _string(value: Any, path: str, *, min_length: int = 0) -> str:
    if not isinstance(value, str):
        raise InvalidSidecar(path, f"a string, got {_kind(value)}")
    if len(value) < min_length:
        raise InvalidSidecar(path, "a non-empty string")
    return value


def _optional_string(value: Any, path: str) -> str | None:
    return None if value is None else _string(value, path)


def _number(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise InvalidSidecar(path, f"a number in [0, 1], got {_kind(value)}")
    if not 0 <= value <= 1:
        raise InvalidSidecar(path, f"a number in [0, 1], got {value!r}")
    return float(value)


def _confidence(value: Any) -> float | None:
    return None if value is None else _number(value, "/confidence")


def _surface(value: Any, path: str) -> str:
    if value not in SURFACE_VALUES or not isinstance(value, str):
        raise InvalidSidecar(path, f"one of {', '.join(SURFACE_VALUES)}, got {value!r}")
    return value


def _most_likely_wrong(value: Any) -> MostLikelyWrong | None:
    if value is None:
        return None
    path = "/most_likely_wrong"
    keys = ("surface", "description")
    _object(value, path, allowed=keys, required=keys)
    return MostLikelyWrong(
        surface=_surface(value["surface"], f"{path}/surface"),
        description=_string(value["description"], f"{path}/description"),
    )


def _risk(value: Any) -> Risk:
    keys = ("needs_review", "score", "surface", "reason")
    _object(value, "/risk", allowed=keys, required=keys)
    if not isinstance(value["needs_review"], bool):
        raise InvalidSidecar("/risk/needs_review", f"a boolean, got {_kind(value['needs_review'])}")
    return Risk(
        needs_review=value["needs_review"],
        score=_number(value["score"], "/risk/score"),
        surface=_surface(value["surface"], "/risk/surface"),
        reason=_string(value["reason"], "/risk/reason"),
    )


def _files(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise InvalidSidecar("/files_changed", f"an array of strings, got {_kind(value)}")
    return tuple(_string(v, f"/files_changed/{i}") for i, v in enumerate(value))


def _provenance(value: Any) -> Provenance:
    path = "/provenance"
    keys = ("source", "reflection_attempt", "degraded", "reflection_mode")
    _object(value, path, allowed=keys, required=keys)
    if value["source"] != "stop-hook":
        raise InvalidSidecar(f"{path}/source", f"the literal 'stop-hook', got {value['source']!r}")
    attempt = value["reflection_attempt"]
    integral = isinstance(attempt, int) or (isinstance(attempt, float) and attempt.is_integer())
    if isinstance(attempt, bool) or not integral:
        raise InvalidSidecar(f"{path}/reflection_attempt", f"an integer ≥ 1, got {_kind(attempt)}")
    if attempt < 1:
        raise InvalidSidecar(f"{path}/reflection_attempt", f"an integer ≥ 1, got {attempt!r}")
    if not isinstance(value["degraded"], bool):
        raise InvalidSidecar(f"{path}/degraded", f"a boolean, got {_kind(value['degraded'])}")
    mode = value["reflection_mode"]
    if mode not in REFLECTION_MODES or not isinstance(mode, str):
        raise InvalidSidecar(
            f"{path}/reflection_mode", f"one of {', '.join(REFLECTION_MODES)}, got {mode!r}"
        )
    return Provenance("stop-hook", int(attempt), value["degraded"], mode)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__
