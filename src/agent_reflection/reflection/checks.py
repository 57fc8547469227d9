"""reflection.v1 checks on plain dicts: one small function per field, in schema order.

Import-light on purpose (no ``typing``, ``dataclasses``, ``re`` or ``json``): the Stop hook
checks the dict it is about to write with :func:`check_reflection`, and every agent stop pays
for what the hook imports. :mod:`agent_reflection.reflection.record` is the typed face: its
``validate_sidecar`` and ``parse_self_report`` run these same checks, then build the frozen
dataclasses. Each check raises :class:`~agent_reflection.errors.InvalidSidecar` naming the
JSON path of the first problem and what the schema wants there.
"""

from __future__ import annotations

# collections.abc.Mapping itself: _collections_abc is loaded at every interpreter start, while
# importing collections.abc would first import collections (~4 ms per stop).
from _collections_abc import Mapping
from math import isnan

from agent_reflection.errors import InvalidSidecar

TYPE_CHECKING = False  # not imported from typing: the hook must not pay for typing at start
if TYPE_CHECKING:
    from typing import Any

SCHEMA_VERSION = "reflection.v1"
SUPPORTED_VERSIONS: tuple[str, ...] = (SCHEMA_VERSION,)
SURFACE_VALUES: tuple[str, ...] = ("auth", "data", "infra", "ui", "build", "test", "docs", "none")
REFLECTION_MODES: tuple[str, ...] = ("off", "solo", "orchestrated")
SELF_REPORT_FIELDS: tuple[str, ...] = ("confidence", "most_likely_wrong", "known_not_in_diff")
FIELDS: tuple[str, ...] = (
    "schema", "task_ref", "agent", "session_id", "timestamp", "repo",
    *SELF_REPORT_FIELDS, "risk", "files_changed", "provenance",
)  # fmt: skip
MOST_LIKELY_WRONG_FIELDS: tuple[str, ...] = ("surface", "description")
RISK_FIELDS: tuple[str, ...] = ("needs_review", "score", "surface", "reason")
PROVENANCE_FIELDS: tuple[str, ...] = (
    "source", "reflection_attempt", "degraded", "reflection_mode"
)  # fmt: skip

_DIGITS = frozenset("0123456789")
_STAMP_SHAPE = "0000-00-00T00:00:00"  # "0" stands for any ASCII digit


def is_utc_timestamp(text: str) -> bool:
    """True for ``2026-01-31T12:00:00Z`` (optional ``.fraction`` of 1–9 digits, ``Z`` or
    ``+00:00``): the schema's timestamp pattern, checked without importing ``re``.

    Accepts exactly what ``sidecar.TIMESTAMP_RE.match`` accepts (a test proves it), including
    that pattern's ``$`` letting one trailing newline through.
    """
    if text.endswith("\n"):
        text = text[:-1]
    if text.endswith("Z"):
        body = text[:-1]
    elif text.endswith("+00:00"):
        body = text[:-6]
    else:
        return False
    head, fraction = body[:19], body[19:]
    if len(head) != len(_STAMP_SHAPE):
        return False
    for ch, shape in zip(head, _STAMP_SHAPE, strict=True):
        if not (ch in _DIGITS if shape == "0" else ch == shape):
            return False
    if not fraction:
        return True
    digits = fraction[1:]
    return fraction[0] == "." and 1 <= len(digits) <= 9 and all(ch in _DIGITS for ch in digits)


def check_reflection(obj: Any) -> None:
    """Raise :class:`InvalidSidecar` unless ``obj`` is a valid reflection.v1 record."""
    check_object(obj, "", allowed=FIELDS, required=FIELDS)
    if obj["schema"] != SCHEMA_VERSION:
        raise InvalidSidecar(
            "/schema",
            f"the literal {SCHEMA_VERSION!r} (got {obj['schema']!r}; supported versions: "
            f"{', '.join(SUPPORTED_VERSIONS)})",
        )
    for key in FIELDS[1:4]:
        check_string(obj[key], f"/{key}", min_length=1)
    check_string(obj["timestamp"], "/timestamp")
    if not is_utc_timestamp(obj["timestamp"]):
        raise InvalidSidecar("/timestamp", "an ISO-8601 UTC time like 2026-01-31T12:00:00Z")
    check_string(obj["repo"], "/repo", min_length=1)
    check_self_report_fields(obj)
    check_risk(obj["risk"])
    check_files(obj["files_changed"])
    check_provenance(obj["provenance"])


def check_self_report(obj: Any) -> None:
    """The agent's self-report file: an object with any of the three self-report fields."""
    check_object(obj, "", allowed=SELF_REPORT_FIELDS, required=())
    check_self_report_fields(obj)


def check_self_report_fields(obj: Any) -> None:
    if obj.get("confidence") is not None:
        check_number(obj["confidence"], "/confidence")
    check_most_likely_wrong(obj.get("most_likely_wrong"))
    if obj.get("known_not_in_diff") is not None:
        check_string(obj["known_not_in_diff"], "/known_not_in_diff")


def check_object(
    obj: Any, path: str, *, allowed: tuple[str, ...], required: tuple[str, ...]
) -> None:
    if not isinstance(obj, Mapping):
        raise InvalidSidecar(path, f"an object, got {kind(obj)}")
    # Unknown keys first, then missing ones: the order JSON Schema validators report them in.
    for key in obj:
        if key not in allowed:
            raise InvalidSidecar(
                f"{path}/{key}", f"no such property (allowed: {', '.join(allowed)})"
            )
    for key in required:
        if key not in obj:
            raise InvalidSidecar(f"{path}/{key}", "a required property, missing")


def check_string(value: Any, path: str, *, min_length: int = 0) -> None:
    if not isinstance(value, str):
        raise InvalidSidecar(path, f"a string, got {kind(value)}")
    if len(value) < min_length:
        raise InvalidSidecar(path, "a non-empty string")


def check_number(value: Any, path: str) -> None:
    """A number in [0, 1] (not a boolean, not NaN)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or isnan(value):
        raise InvalidSidecar(path, f"a number in [0, 1], got {kind(value)}")
    if not 0 <= value <= 1:
        raise InvalidSidecar(path, f"a number in [0, 1], got {value!r}")


def check_surface(value: Any, path: str) -> None:
    if value not in SURFACE_VALUES or not isinstance(value, str):
        raise InvalidSidecar(path, f"one of {', '.join(SURFACE_VALUES)}, got {value!r}")


def check_most_likely_wrong(value: Any) -> None:
    if value is None:
        return
    path = "/most_likely_wrong"
    keys = MOST_LIKELY_WRONG_FIELDS
    check_object(value, path, allowed=keys, required=keys)
    check_surface(value["surface"], f"{path}/surface")
    check_string(value["description"], f"{path}/description")


def check_risk(value: Any) -> None:
    check_object(value, "/risk", allowed=RISK_FIELDS, required=RISK_FIELDS)
    if not isinstance(value["needs_review"], bool):
        raise InvalidSidecar("/risk/needs_review", f"a boolean, got {kind(value['needs_review'])}")
    check_number(value["score"], "/risk/score")
    check_surface(value["surface"], "/risk/surface")
    check_string(value["reason"], "/risk/reason")


def check_files(value: Any) -> None:
    if not isinstance(value, list):
        raise InvalidSidecar("/files_changed", f"an array of strings, got {kind(value)}")
    for i, v in enumerate(value):
        check_string(v, f"/files_changed/{i}")


def check_provenance(value: Any) -> None:
    path = "/provenance"
    check_object(value, path, allowed=PROVENANCE_FIELDS, required=PROVENANCE_FIELDS)
    if value["source"] != "stop-hook":
        raise InvalidSidecar(f"{path}/source", f"the literal 'stop-hook', got {value['source']!r}")
    attempt = value["reflection_attempt"]
    integral = isinstance(attempt, int) or (isinstance(attempt, float) and attempt.is_integer())
    if isinstance(attempt, bool) or not integral:
        raise InvalidSidecar(f"{path}/reflection_attempt", f"an integer ≥ 1, got {kind(attempt)}")
    if attempt < 1:
        raise InvalidSidecar(f"{path}/reflection_attempt", f"an integer ≥ 1, got {attempt!r}")
    if not isinstance(value["degraded"], bool):
        raise InvalidSidecar(f"{path}/degraded", f"a boolean, got {kind(value['degraded'])}")
    mode = value["reflection_mode"]
    if mode not in REFLECTION_MODES or not isinstance(mode, str):
        raise InvalidSidecar(
            f"{path}/reflection_mode", f"one of {', '.join(REFLECTION_MODES)}, got {mode!r}"
        )


def kind(value: Any) -> str:
    """How an error message names the JSON type (and value, for numbers) it got."""
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
