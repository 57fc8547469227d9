"""Replay recorded agent sessions through the anti-loop detector (pure core, thin readers).

Two real sources feed it:

* agent runs (``steps.jsonl.gz`` + ``runs.jsonl``, mini-swe-agent format): one Bash call per
  step; a step failed when its return code is non-zero or it timed out; the error text is
  ``Exit code N`` (or ``timeout``). When ``step-outputs.jsonl.gz`` is there, each call also
  carries the observation the agent saw (its first and last 600 characters, joined 1:1 on
  ``(instance_id, step)``). Format errors (the model's reply did not parse: no command ran) and
  the final submission are not tool calls and skip.
* Claude Code transcripts: every ``tool_use`` with its ``tool_result``; ``is_error`` marks a
  failure and the result text is the error; a success's text is its ``toolUseResult`` read as
  the live hook reads ``tool_response`` (:func:`.error_signature.response_text`).

:func:`replay_session` runs :func:`loop_detector.observe` over one session and reports where it
would have escalated and what followed; :func:`streak_table` measures, for each streak length
k, how many runs reached a failure streak (one cause, or one command) of k and how many of
those were resolved.
"""

from __future__ import annotations

import gzip
import json
import statistics
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_reflection.errors import ReflectionError, json_error_text
from agent_reflection.in_loop import loop_detector
from agent_reflection.in_loop.error_signature import response_text
from agent_reflection.stats.wilson import wilson_ci


class ReplayInputError(ReflectionError, ValueError):
    """A replay input line cannot be used; the message names the file, line and field."""


@dataclass(frozen=True)
class ToolCall:
    """One tool call as the detector sees it."""

    step: int
    tool: str
    tool_input: Mapping[str, Any]
    failed: bool
    error: str = ""
    #: What the agent saw after the call (an agent-run step's observation, a transcript's tool
    #: result), failed or not; "" when the source keeps none.
    output: str = ""


@dataclass(frozen=True)
class Session:
    """A recorded session: its calls and, when known, whether its task was resolved."""

    session_id: str
    source: str
    calls: tuple[ToolCall, ...]
    resolved: bool | None = None
    task: str = ""


@dataclass(frozen=True)
class EscalationPoint:
    """Where the detector fires in a replay, and what the session did afterwards."""

    session_id: str
    source: str
    step: int
    first_step: int
    attempt: int
    signature: str
    calls_in_session: int
    calls_after: int
    #: A later call of the same command succeeded (the agent got past this failure itself).
    fixed_later: bool
    #: Later failures with the same cause.
    repeats_after: int
    resolved: bool | None
    payload: str


@dataclass(frozen=True)
class SessionReplay:
    session_id: str
    source: str
    calls: int
    failures: int
    max_streak: int
    resolved: bool | None
    escalations: tuple[EscalationPoint, ...]


@dataclass(frozen=True)
class StreakRow:
    """Runs whose longest failure streak is at least ``k``, and how many resolved."""

    k: int
    runs: int
    share_of_runs: float
    resolved: int
    resolved_share: float | None
    ci_low: float | None
    ci_high: float | None


def call_text(call: ToolCall) -> str:
    """The text the detector reads for ``call``: what it showed, else its error text."""
    return call.output or call.error


def replay_session(session: Session, threshold: int) -> SessionReplay:
    """Run the detector over ``session`` at ``threshold`` (pure)."""
    state = loop_detector.fresh_state(session.task)
    fired: list[tuple[int, dict[str, Any]]] = []
    readings: list[tuple[str, str]] = []
    max_streak = 0
    for index, call in enumerate(session.calls):
        trigger = loop_detector.observe(
            state,
            tool=call.tool,
            tool_input=call.tool_input,
            failed=call.failed,
            output=call_text(call),
            threshold=threshold,
        )
        readings.append((str(state["last"][0]), str(state["last"][1])))
        counts = [v["count"] for v in state["streaks"].values()]
        max_streak = max([max_streak, *counts])
        if trigger is not None:
            fired.append((index, trigger))
    points = []
    for index, trigger in fired:
        later = session.calls[index + 1 :]
        after = readings[index + 1 :]
        same = [
            kind
            for c, (kind, _) in zip(later, after, strict=True)
            if c.tool == trigger["tool"]
            and loop_detector.command_key(c.tool, c.tool_input) == trigger["command"]
        ]
        points.append(
            EscalationPoint(
                session_id=session.session_id,
                source=session.source,
                step=session.calls[index].step,
                first_step=session.calls[int(trigger["first_step"]) - 1].step,
                attempt=int(trigger["attempt"]),
                signature=str(trigger["signature"]),
                calls_in_session=len(session.calls),
                calls_after=len(later),
                fixed_later=any(kind == "ok" for kind in same),
                repeats_after=sum(
                    1 for kind, cause in after if kind == "failed" and cause == trigger["signature"]
                ),
                resolved=session.resolved,
                payload=loop_detector.escalation_payload(trigger),
            )
        )
    return SessionReplay(
        session.session_id,
        session.source,
        len(session.calls),
        sum(c.failed for c in session.calls),
        max_streak,
        session.resolved,
        tuple(points),
    )


def streak_table(replays: Sequence[SessionReplay], ks: Iterable[int]) -> tuple[StreakRow, ...]:
    """For each k: runs with a longest streak >= k, and the share of them resolved (Wilson CI).

    Only sessions with a known outcome count. ``k = 0`` is every run (the baseline).
    """
    known = [r for r in replays if r.resolved is not None]
    rows = []
    for k in ks:
        hit = [r for r in known if r.max_streak >= k]
        solved = sum(1 for r in hit if r.resolved)
        ci = wilson_ci(solved, len(hit)) if hit else None
        rows.append(
            StreakRow(
                k=k,
                runs=len(hit),
                share_of_runs=len(hit) / len(known) if known else 0.0,
                resolved=solved,
                resolved_share=ci.proportion if ci else None,
                ci_low=ci.ci_low if ci else None,
                ci_high=ci.ci_high if ci else None,
            )
        )
    return tuple(rows)


@dataclass(frozen=True)
class ReplaySummary:
    """What the detector would have done over a set of sessions."""

    sessions: int
    escalated_sessions: int
    escalation_points: int
    #: Median tool call of each escalated session's first escalation.
    median_first_escalation_call: float | None
    #: Median share of the session's calls already made at the first escalation.
    median_first_escalation_share: float | None
    #: Escalation points after which the same command later succeeded.
    fixed_later: int
    #: Escalated / other sessions with a known outcome, and how many of each resolved.
    escalated_known: int
    escalated_resolved: int
    other_known: int
    other_resolved: int


def _median(values: Sequence[float]) -> float | None:
    return float(statistics.median(values)) if values else None


def summarise(replays: Sequence[SessionReplay]) -> ReplaySummary:
    """Counts and medians of :func:`replay_all`'s result (pure)."""
    escalated = [r for r in replays if r.escalations]
    firsts = [r.escalations[0] for r in escalated]
    calls_at = [p.calls_in_session - p.calls_after for p in firsts]
    other = [r for r in replays if not r.escalations and r.resolved is not None]
    known = [r for r in escalated if r.resolved is not None]
    return ReplaySummary(
        sessions=len(replays),
        escalated_sessions=len(escalated),
        escalation_points=sum(len(r.escalations) for r in replays),
        median_first_escalation_call=_median(calls_at),
        median_first_escalation_share=_median(
            [c / p.calls_in_session for c, p in zip(calls_at, firsts, strict=True)]
        ),
        fixed_later=sum(p.fixed_later for r in replays for p in r.escalations),
        escalated_known=len(known),
        escalated_resolved=sum(1 for r in known if r.resolved),
        other_known=len(other),
        other_resolved=sum(1 for r in other if r.resolved),
    )


# --- readers (I/O) ---------------------------------------------------------------------------


def _field(record: Mapping[str, Any], name: str, kind: type, where: str) -> Any:
    value = record.get(name)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise ReplayInputError(f"{where}: field {name!r} must be {kind.__name__}, got {value!r}")
    return value


def read_agent_runs(runs_dir: str | Path) -> tuple[Session, ...]:
    """The sessions of a mini-swe-agent export (``steps.jsonl.gz``, ``runs.jsonl``)."""
    folder = Path(runs_dir)
    resolved: dict[str, bool] = {}
    runs_path = folder / "runs.jsonl"
    with runs_path.open(encoding="utf-8") as handle:
        for where, record in _records(handle, runs_path):
            run_id = _field(record, "instance_id", str, where)
            resolved[run_id] = _field(record, "resolved", bool, where)
    outputs = read_step_outputs(folder / STEP_OUTPUTS)
    steps: dict[str, list[ToolCall]] = {}
    steps_path = folder / "steps.jsonl.gz"
    with gzip.open(steps_path, "rt", encoding="utf-8") as handle:
        for where, record in _records(handle, steps_path):
            if record.get("format_error") or record.get("final_submission"):
                continue  # no command ran
            run_id = _field(record, "instance_id", str, where)
            returncode = record.get("returncode")
            timed_out = bool(record.get("timed_out"))
            if returncode is not None and not isinstance(returncode, int):
                raise ReplayInputError(f"{where}: field 'returncode' must be int or null")
            failed = timed_out or returncode not in (0, None)
            error = "timeout" if timed_out else f"Exit code {returncode}" if failed else ""
            step = _field(record, "step", int, where)
            steps.setdefault(run_id, []).append(
                ToolCall(
                    step=step,
                    tool="Bash",
                    tool_input={"command": _field(record, "command", str, where)},
                    failed=failed,
                    error=error,
                    output=outputs.get((run_id, step), ""),
                )
            )
    return tuple(
        Session(
            run_id, "agent-runs", tuple(sorted(calls, key=lambda c: c.step)), resolved.get(run_id)
        )
        for run_id, calls in sorted(steps.items())
    )


#: The agent-run export's observations, beside ``steps.jsonl.gz`` (optional).
STEP_OUTPUTS = "step-outputs.jsonl.gz"
#: Between an observation's head and tail when the middle was not kept.
ELIDED = "\n[...]\n"


def read_step_outputs(path: Path) -> dict[tuple[str, int], str]:
    """``(instance_id, step)`` -> the observation text (head, and tail when the text was longer
    than both); empty when the file is not there."""
    if not path.is_file():
        return {}
    texts: dict[tuple[str, int], str] = {}
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for where, record in _records(handle, path):
            head = _field(record, "output_head", str, where)
            tail = _field(record, "output_tail", str, where)
            size = _field(record, "output_chars", int, where)
            key = (_field(record, "instance_id", str, where), _field(record, "step", int, where))
            texts[key] = head if size <= len(head) else head + ELIDED + tail
    return texts


def _records(lines: Iterable[str], path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, object) of each non-blank line, ``where`` naming the file and line."""
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path} line {n}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ReplayInputError(f"{where}: not JSON ({json_error_text(exc)})") from None
        if not isinstance(record, dict):
            raise ReplayInputError(f"{where}: must be a JSON object")
        yield where, record


def _result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return "\n".join(t for t in texts if isinstance(t, str))
    return ""


def read_transcript(path: str | Path) -> Session:
    """A Claude Code transcript as a session: its tool calls in file order, its first prompt.

    Lines that are not JSON objects are skipped (the format is internal and unstable).
    """
    records = []
    for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict):
            records.append(record)
    results: dict[str, tuple[bool, str, str]] = {}
    task = ""
    session_id = Path(path).name
    for record in records:
        session_id = str(record.get("sessionId") or session_id)
        content = (record.get("message") or {}).get("content")
        if record.get("type") == "user" and isinstance(content, str) and not task:
            task = content
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                failed, text = bool(block.get("is_error")), _result_text(block.get("content"))
                # a success shows what the hook's tool_response shows (Bash: stdout, stderr)
                response = record.get("toolUseResult")
                shown = text if failed or response is None else response_text(response)
                results[str(block.get("tool_use_id"))] = (failed, text, shown)
    calls: list[ToolCall] = []
    for record in records:
        content = (record.get("message") or {}).get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                failed, text, shown = results.get(str(block.get("id")), (False, "", ""))
                tool_input = block.get("input")
                calls.append(
                    ToolCall(
                        step=len(calls) + 1,
                        tool=str(block.get("name") or ""),
                        tool_input=tool_input if isinstance(tool_input, dict) else {},
                        failed=failed,
                        error=text if failed else "",
                        output=shown,
                    )
                )
    return Session(session_id, Path(path).name, tuple(calls), None, task)


def replay_all(
    sessions: Sequence[Session], threshold: int = loop_detector.DEFAULT_THRESHOLD
) -> tuple[SessionReplay, ...]:
    """:func:`replay_session` for every session."""
    return tuple(replay_session(s, threshold) for s in sessions)
