"""reflection.v1: the typed record, its JSON Schema, and a validator that names the bad field.

Stdlib-only. The checks themselves live in :mod:`agent_reflection.reflection.checks`, which works
on plain dicts and imports nothing costly: the Stop hook runs them on the record it writes,
and this module runs the same checks, then builds the frozen dataclasses. The shipped JSON
Schema (``data/reflection.v1.schema.json``) is the contract for other languages; tests prove
the two agree on every valid and invalid example, down to the JSON path they name.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from agent_reflection.errors import InvalidSidecar
from agent_reflection.reflection.checks import (
    FIELDS,
    REFLECTION_MODES,
    SCHEMA_VERSION,
    SELF_REPORT_FIELDS,
    SUPPORTED_VERSIONS,
    SURFACE_VALUES,
    check_reflection,
    check_self_report,
)

__all__ = [
    "FIELDS", "REFLECTION_MODES", "SCHEMA_VERSION", "SELF_REPORT_FIELDS", "SUPPORTED_VERSIONS",
    "SURFACE_VALUES", "TIMESTAMP_RE", "MostLikelyWrong", "Provenance", "Reflection", "Risk",
    "SelfReport", "parse_self_report", "schema_document", "validate_sidecar",
]  # fmt: skip

#: The schema's timestamp pattern (``_sidecar_core.is_utc_timestamp`` checks the same without re).
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
    check_self_report(obj)
    return SelfReport(
        confidence=_float_or_none(obj.get("confidence")),
        most_likely_wrong=_most_likely_wrong(obj.get("most_likely_wrong")),
        known_not_in_diff=obj.get("known_not_in_diff"),
    )


# --- the checks live in _sidecar_core (the Stop hook runs them on plain dicts); this module
# --- only turns a checked dict into the typed record ---------------------------------------


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
    )


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)


def _most_likely_wrong(value: Any) -> MostLikelyWrong | None:
    if value is None:
        return None
    return MostLikelyWrong(surface=value["surface"], description=value["description"])
