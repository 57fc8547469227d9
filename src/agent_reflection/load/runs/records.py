"""The records every run-log format is parsed into, and the small pure functions they share."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime

#: Statuses that count as a failure for streaks and skill correlation.
FAILURE_STATUSES = ("failed", "timeout")
#: Characters of a step's input / output kept in ``run_steps``.
SUMMARY_LIMIT = 2000
#: The range of the BIGINT columns integers are stored in.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

_STATUS_ALIASES = {
    "timed_out": "timeout",
    "timedout": "timeout",
    "time_out": "timeout",
    "error": "failed",
    "errored": "failed",
    "failure": "failed",
    "fail": "failed",
    "success": "completed",
    "succeeded": "completed",
    "done": "completed",
}


@dataclass(frozen=True)
class OutcomeRecord:
    """One sub-session (agent run) outcome."""

    session_id: str
    task_id: str | None
    objective: str | None
    status: str
    started_at: datetime | None
    finished_at: datetime
    result_length: int | None
    cost: float | None
    raw: str  # JSON text


@dataclass(frozen=True)
class StepRecord:
    """One logged step of a sub-session (a tool call, usually)."""

    step_key: str
    session_id: str
    seq: int | None
    at: datetime | None
    action: str
    tool: str | None
    input_summary: str | None
    output_summary: str | None
    skill: str | None


@dataclass(frozen=True)
class TaskRecord:
    """A task of the agent platform (the thing that spawns sub-sessions).

    ``derived`` tasks were not read from a record but built from outcomes (e.g. one per
    repository in a SWE-bench export); they do not count in the load's read/loaded numbers.
    """

    task_id: str
    status: str
    run_count: int | None
    ai_prompt: str | None
    last_result_summary: str | None
    derived: bool = False


@dataclass(frozen=True)
class Reject:
    """A source record that could not be parsed, with where it is and why.

    ``file_error``: the file could not be read on from here (damage, binary data, a document
    that does not parse), so the load fails though it keeps what it read before."""

    location: str
    raw: str | None
    reason: str
    file_error: bool = False


Parsed = OutcomeRecord | StepRecord | TaskRecord | Reject


def normalise_status(value: object) -> str:
    """Lower-case, trimmed, with common aliases mapped (``timed_out`` → ``timeout``, ...)."""
    text = str(value).strip().lower()
    return _STATUS_ALIASES.get(text, text)


def parse_time(value: object, field: str) -> datetime:
    """An ISO-8601 string (``Z`` allowed; naive means UTC) or epoch seconds, as aware UTC."""
    if isinstance(value, bool) or value is None:
        raise ValueError(f"{field}: expected an ISO-8601 time or epoch seconds, got {value!r}")
    if isinstance(value, int | float):
        return _from_epoch(float(value), field)
    if isinstance(value, str):
        text = value.strip()
        try:
            seconds = float(text)
        except ValueError:
            pass
        else:
            return _from_epoch(seconds, field)
        try:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(
                f"{field}: {value!r} is not an ISO-8601 time (e.g. 2025-11-18T22:55:06Z)"
            ) from None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    raise ValueError(f"{field}: expected an ISO-8601 time or epoch seconds, got {value!r}")


def _from_epoch(seconds: float, field: str) -> datetime:
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        raise ValueError(f"{field}: {seconds!r} epoch seconds is outside years 1-9999") from None


def optional_time(value: object, field: str) -> datetime | None:
    return None if value is None or value == "" else parse_time(value, field)


def optional_int(value: object, field: str) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"{field}: expected an integer, got {value!r}")
    try:
        number = int(value)
    except (ValueError, OverflowError):
        raise ValueError(f"{field}: expected an integer, got {value!r}") from None
    if not INT64_MIN <= number <= INT64_MAX:
        raise ValueError(f"{field}: {value!r} does not fit in a 64-bit integer")
    return number


def optional_float(value: object, field: str) -> float | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"{field}: expected a number, got {value!r}")
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"{field}: expected a number, got {value!r}") from None


def clip(text: object) -> str | None:
    if text is None:
        return None
    value = text if isinstance(text, str) else json.dumps(text, default=str)
    return value[:SUMMARY_LIMIT]


def to_json(obj: object) -> str:
    return json.dumps(obj, default=str, sort_keys=True)


_SKILL_NAME_RE = re.compile(r"""skill_name["']?\s*[:=]\s*["']?([A-Za-z0-9_.\-]+)""")
_ACTION_ADD_RE = re.compile(r""""action"\s*:\s*"add\"""")
_LEGACY_SKILL_RE = re.compile(r"""data/skills/([A-Za-z0-9_.\-]+?)\.md""")


def skill_read(tool: str | None, text: str | None) -> str | None:
    """The skill a logged tool call read, if it read one (the peer's three detections, in order).

    1. ``text`` is JSON with ``tool == "skill"`` and ``arguments.action`` in {read, search}
       (``arguments`` a dict or a JSON string): its ``skill_name`` (or ``name``).
    2. A ``skill_name: X`` / ``"skill_name": "X"`` mention, unless the text has ``"action": "add"``.
    3. Legacy: a ``read_file`` call on ``data/skills/<name>.md`` gives ``<name>``.
    """
    if not text:
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        obj = None
    if isinstance(obj, dict) and tool == "skill" and "arguments" not in obj:
        obj = {"tool": "skill", "arguments": obj}
    if isinstance(obj, dict) and (obj.get("tool") or obj.get("name")) == "skill":
        args = obj.get("arguments", obj.get("args", {}))
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                args = {}
        if isinstance(args, dict) and args.get("action") in ("read", "search"):
            name = args.get("skill_name") or args.get("name")
            if isinstance(name, str) and name:
                return name
    if not _ACTION_ADD_RE.search(text):
        match = _SKILL_NAME_RE.search(text)
        if match:
            return match.group(1)
    if "read_file" in text or tool == "read_file":
        legacy = _LEGACY_SKILL_RE.search(text)
        if legacy:
            return legacy.group(1)
    return None


def tool_of(text: str | None) -> str | None:
    """The tool name in a JSON tool-call text (``tool`` or ``name``), else None."""
    if not text:
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    if isinstance(obj, dict):
        name = obj.get("tool") or obj.get("name")
        return name if isinstance(name, str) else None
    return None
