"""mini-swe-agent / SWE-bench run exports.

Three shapes, told apart per file:

* a runs export (JSONL, one run per line: ``instance_id``, ``repo``, ``exit_status``,
  ``resolved``, ``first_response_at``, ``last_response_at``, ``instance_cost_usd``,
  ``submission_chars``, ...);
* a steps export (JSONL, optionally gzipped: ``instance_id``, ``step``, ``created_at``,
  ``command``, ``outcome``, ...);
* upstream trajectory files (``*.traj.json[.gz]``: ``info.exit_status``, ``messages``).

Mapping: session = ``instance_id``; task = the repository (``django/django``), one derived
task per repository; status = ``completed`` when the run resolved its instance, ``failed`` when
it submitted a patch that did not resolve it (SWE-bench's verdict); without a verdict
(trajectories) ``Submitted`` is ``completed``, an exit status naming time is ``timeout``, any
other is ``failed``. ``result_length`` = characters of the submitted patch.
"""

from __future__ import annotations

import json
import re
from collections import Counter
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
    optional_float,
    optional_int,
    parse_time,
    to_json,
)
from agent_reflection.load.runs.textio import parse_lines, read_whole
from agent_reflection.load.text import READ_ERRORS, UndecodableText

_BASH_BLOCK = re.compile(r"```bash\s*\n(.*?)```", re.S)


def task_prompt(repo: str) -> str:
    """The prompt of the derived task for ``repo`` (what the agent is asked to do there)."""
    return f"Resolve a SWE-bench Verified issue in {repo} and submit a patch"


def status_of(exit_status: object, resolved: object) -> str:
    if resolved is True:
        return "completed"
    if resolved is False:
        return "failed"
    text = str(exit_status or "").lower()
    if text == "submitted":
        return "completed"
    return "timeout" if "time" in text else "failed"


def repo_of(instance_id: str) -> str:
    """``django__django-11099`` → ``django/django``."""
    head = instance_id.rsplit("-", 1)[0]
    return head.replace("__", "/", 1)


def parse_swe(
    path: Path, encoding: str | None = None, notes: list[str] | None = None
) -> Iterator[Parsed]:
    """Records of one runs export, steps export or trajectory file.

    ``encoding`` and ``notes``: see :func:`~agent_reflection.load.runs.textio.text_lines`.
    """
    if path.name.endswith((".traj.json", ".traj.json.gz")):
        yield from _trajectory(path, encoding)
        return
    repos: Counter[str] = Counter()

    def parse_line(where: str, line: str) -> OutcomeRecord | StepRecord:
        obj = json.loads(line)
        if not isinstance(obj, dict):
            raise ValueError("each line must be a JSON object")
        if "step" in obj:
            return _step(obj)
        record = _run(obj)
        if record.task_id:
            repos[record.task_id] += 1
        return record

    yield from parse_lines(path, parse_line, encoding, notes)
    for repo, count in sorted(repos.items()):
        yield TaskRecord(repo, "active", count, task_prompt(repo), None, derived=True)


def _run(obj: dict[str, Any]) -> OutcomeRecord:
    instance = obj.get("instance_id")
    if not instance:
        raise ValueError("instance_id: missing (required)")
    finished = obj.get("last_response_at")
    if finished is None:
        raise ValueError("last_response_at: missing (the run's finish time)")
    repo = obj.get("repo") or repo_of(str(instance))
    started = obj.get("first_response_at")
    return OutcomeRecord(
        session_id=str(instance),
        task_id=str(repo),
        objective=f"{task_prompt(str(repo))}: {instance}",
        status=status_of(obj.get("exit_status"), obj.get("resolved")),
        started_at=parse_time(started, "first_response_at") if started else None,
        finished_at=parse_time(finished, "last_response_at"),
        result_length=optional_int(obj.get("submission_chars"), "submission_chars"),
        cost=optional_float(obj.get("instance_cost_usd"), "instance_cost_usd"),
        raw=to_json(obj),
    )


def _step(obj: dict[str, Any]) -> StepRecord:
    instance = obj.get("instance_id")
    if not instance:
        raise ValueError("instance_id: missing (required)")
    seq = optional_int(obj.get("step"), "step")
    created = obj.get("created_at")
    return StepRecord(
        step_key=f"swe:{instance}:{seq}",
        session_id=str(instance),
        seq=seq,
        at=parse_time(created, "created_at") if created else None,
        action="tool_call",
        tool="bash",
        input_summary=clip(obj.get("command")),
        output_summary=clip(obj.get("outcome")),
        skill=None,
    )


def _trajectory(path: Path, encoding: str | None = None) -> Iterator[Parsed]:
    try:
        doc = json.loads(read_whole(path, encoding))
        info = doc["info"]
        instance = str(doc.get("instance_id") or path.name.split(".traj.json")[0])
        messages = doc["messages"]
    except UndecodableText:
        raise
    except (ValueError, KeyError, TypeError, *READ_ERRORS) as exc:
        yield Reject(str(path), None, f"not a mini-swe-agent trajectory ({exc!r})", file_error=True)
        return
    times: list[float] = []
    step = 0
    for msg in messages:
        created = ((msg.get("extra") or {}).get("response") or {}).get("created")
        if msg.get("role") != "assistant":
            continue
        if isinstance(created, int | float):
            times.append(float(created))
        for command in _BASH_BLOCK.findall(str(msg.get("content") or "")):
            step += 1
            yield StepRecord(
                step_key=f"swe:{instance}:{step}",
                session_id=instance,
                seq=step,
                at=parse_time(created, "created") if isinstance(created, int | float) else None,
                action="tool_call",
                tool="bash",
                input_summary=clip(command.strip()),
                output_summary=None,
                skill=None,
            )
    if not times:
        yield Reject(str(path), None, "no assistant message with a response time: no finish time")
        return
    repo = repo_of(instance)
    submission = info.get("submission") or ""
    yield OutcomeRecord(
        session_id=instance,
        task_id=repo,
        objective=f"{task_prompt(repo)}: {instance}",
        status=status_of(info.get("exit_status"), None),
        started_at=parse_time(min(times), "created"),
        finished_at=parse_time(max(times), "created"),
        result_length=len(submission),
        cost=optional_float((info.get("model_stats") or {}).get("instance_cost"), "instance_cost"),
        raw=to_json(
            {"instance_id": instance, "info": {k: v for k, v in info.items() if k != "submission"}}
        ),
    )
    yield TaskRecord(repo, "active", None, task_prompt(repo), None, derived=True)
