"""The documented JSONL run-log shape: one object per line, ``kind`` outcome | step | task.

\b
{"kind": "outcome", "session_id": "s1", "task_id": "t1", "objective": "...",
 "status": "failed", "started_at": "2025-11-18T22:55:06Z", "finished_at": 1763506506.0,
 "result_length": 12, "cost": 0.03}
{"kind": "step", "session_id": "s1", "at": "...", "action": "tool_call", "tool": "read_file",
 "input": "data/skills/deploy.md", "output": "..."}
{"kind": "task", "id": "t1", "status": "active", "run_count": 4, "ai_prompt": "...",
 "last_result_summary": "..."}

``kind`` defaults to ``outcome``. ``finished_at`` (or ``timestamp``) is required for outcomes;
``result_length`` may be replaced by ``result`` (its length is taken).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent_reflection.load.runs.records import (
    OutcomeRecord,
    Parsed,
    Reject,
    StepRecord,
    TaskRecord,
    clip,
    normalise_status,
    optional_float,
    optional_int,
    optional_time,
    parse_time,
    skill_read,
    to_json,
)
from agent_reflection.load.runs.textio import parse_lines


def parse_jsonl(
    path: Path, encoding: str | None = None, notes: list[str] | None = None
) -> Iterator[Parsed]:
    """Every line of ``path`` as a record or a :class:`Reject` naming line and field.

    ``encoding`` and ``notes``: see :func:`~agent_reflection.load.runs.textio.text_lines`.
    """
    return parse_lines(path, _parse_line, encoding, notes)


def _parse_line(where: str, line: str) -> Parsed:
    try:
        obj = json.loads(line)
    except ValueError as exc:
        return Reject(where, line, f"not JSON ({exc}); each line must be one object")
    if not isinstance(obj, dict):
        return Reject(where, line, "each line must be a JSON object")
    return parse_object(obj, where)


def parse_object(obj: dict[str, Any], where: str) -> OutcomeRecord | StepRecord | TaskRecord:
    """One JSONL object (``kind`` outcome | step | task) as a record; ValueError names the field."""
    kind = obj.get("kind", "outcome")
    if kind == "outcome":
        return _outcome(obj)
    if kind == "step":
        return _step(obj, where)
    if kind == "task":
        return _task(obj)
    raise ValueError(f"kind: {kind!r} is not one of outcome, step, task")


def _required_str(obj: dict[str, Any], *names: str) -> str:
    for name in names:
        value = obj.get(name)
        if value is not None and str(value).strip():
            return str(value)
    raise ValueError(f"{names[0]}: missing (required)")


def _outcome(obj: dict[str, Any]) -> OutcomeRecord:
    session_id = _required_str(obj, "session_id")
    status = normalise_status(_required_str(obj, "status"))
    finished = obj.get("finished_at", obj.get("timestamp"))
    if finished is None:
        raise ValueError("finished_at: missing (required; ISO-8601 or epoch seconds)")
    result_length = optional_int(obj.get("result_length"), "result_length")
    if result_length is None and isinstance(obj.get("result"), str):
        result_length = len(obj["result"])
    task_id = obj.get("task_id")
    return OutcomeRecord(
        session_id=session_id,
        task_id=str(task_id) if task_id not in (None, "") else None,
        objective=obj.get("objective"),
        status=status,
        started_at=optional_time(obj.get("started_at"), "started_at"),
        finished_at=parse_time(finished, "finished_at"),
        result_length=result_length,
        cost=optional_float(obj.get("cost"), "cost"),
        raw=to_json(obj),
    )


def _step(obj: dict[str, Any], where: str) -> StepRecord:
    session_id = _required_str(obj, "session_id", "session")
    text_in = clip(obj.get("input"))
    tool = obj.get("tool")
    seq = optional_int(obj.get("seq", obj.get("step")), "seq")
    digest = hashlib.sha1(to_json(obj).encode()).hexdigest()[:16]
    return StepRecord(
        step_key=f"jsonl:{session_id}:{seq if seq is not None else digest}",
        session_id=session_id,
        seq=seq,
        at=optional_time(obj.get("at", obj.get("timestamp")), "at"),
        action=str(obj.get("action") or "tool_call"),
        tool=str(tool) if tool else None,
        input_summary=text_in,
        output_summary=clip(obj.get("output")),
        skill=skill_read(str(tool) if tool else None, _full_text(obj.get("input"))),
    )


def _full_text(value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, default=str)


def _task(obj: dict[str, Any]) -> TaskRecord:
    return TaskRecord(
        task_id=_required_str(obj, "id", "task_id"),
        status=normalise_status(obj.get("status") or "active"),
        run_count=optional_int(obj.get("run_count"), "run_count"),
        ai_prompt=obj.get("ai_prompt"),
        last_result_summary=obj.get("last_result_summary"),
    )
