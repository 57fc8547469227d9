"""``reflect-subagent-stop-hook``: enforce the reflection agent's output contract.

Registered for ``SubagentStop`` (matcher ``reflection-unblocker``). Reads the reply from
``last_assistant_message`` when Claude Code sends it, else from the last assistant message in
``agent_transcript_path`` (the subagent's own transcript; ``transcript_path`` is the parent's).
``@REJECTED`` tags in the subagent's first prompt become the protected paths of the check.

What it answers (stdout; exit 0 on every path):

* an invalid reply: ``{"decision": "block", "reason": ...}`` naming every problem (which fields
  are missing, which output kinds are allowed), so the subagent answers again. **Once** per
  subagent: never while ``stop_hook_active`` is true, and never a second time for the same
  ``agent_id`` (a marker file in the state dir; Claude Code may send the flag as null on the
  first fire). A reply that could not be read at all (no text anywhere) is not blocked: the
  hook cannot tell a broken reply from a missing transcript.
* a valid terminal ``<ESCALATION>`` at ``[ATTEMPT: 4]`` or later: ``{"systemMessage": ...}``,
  shown to the user: reflection-level rescue is blocked too, a person must step in.
* anything else, and any event whose ``agent_type`` is not ``reflection-unblocker`` (one
  without the field is recorded but never blocked): nothing.

Every reply is appended as one JSON line to ``<state dir>/reflection-agent.jsonl`` (the state
folder of :mod:`agent_reflection.hooks.paths`): kind, valid, problems, attempt, layers, the
decision (``block``, ``pass``, ``surface``), the reply (bounded). Diagnostics go to stderr.
"""

from __future__ import annotations

import json
import os
import time

from agent_reflection.hooks._entry import read_stdin, run_hook, warn
from agent_reflection.hooks.paths import create_file, open_regular, read_at, session_key, state_dir

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, NoReturn

PROG = "reflect-subagent-stop-hook"
AGENT_TYPE = "reflection-unblocker"
LOG_NAME = "reflection-agent.jsonl"
#: Characters of the reply kept in the log.
TEXT_LIMIT = 4000
#: Bytes read from the end of a subagent transcript when looking for its last reply.
TAIL_BYTES = 2_000_000
#: Bytes read from the start of a transcript for its first prompt (the first line).
HEAD_BYTES = 1_000_000
#: Characters of an id (session, agent, agent type) kept in the log.
ID_LIMIT = 256
#: Characters of a reply that are checked (a reply is a few kB; the rest is cut, not scanned).
CHECK_LIMIT = 200_000
#: Problems listed in a block's reason (the rest are counted).
REASON_PROBLEMS = 12
#: The rescue attempt from which a terminal escalation goes to the user.
TERMINAL_ATTEMPT = 4


def _text_of(message: Any) -> str:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        ]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def transcript_messages(path: str) -> tuple[str, str]:
    """(first user prompt, last assistant text) of a transcript; blanks when not found.

    Only a regular file is read, and not through a symlink in its last component: a FIFO or
    device (``/dev/zero``) raises ``OSError`` at once instead of blocking or never ending. At
    most :data:`HEAD_BYTES` from the start and :data:`TAIL_BYTES` from the end are read.
    """
    fd = open_regular(path)
    try:
        head = read_at(fd, HEAD_BYTES)
        first_end = head.find(b"\n")
        head = head if first_end < 0 else head[: first_end + 1]
        start = max(len(head), os.fstat(fd).st_size - TAIL_BYTES)
        tail = read_at(fd, TAIL_BYTES, start)
    finally:
        os.close(fd)
    lines = [head, *tail.splitlines()]  # a tail starting mid-line fails to parse: skipped
    first_user = last_assistant = ""
    for raw in lines:
        try:
            record = json.loads(raw.decode("utf-8", "replace"))
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        text = _text_of(record.get("message"))
        if record.get("type") == "user" and not first_user and text:
            first_user = text
        elif record.get("type") == "assistant" and text.strip():
            last_assistant = text
    return first_user, last_assistant


def _short(value: object) -> str | None:
    """An id as logged: a string cut to :data:`ID_LIMIT` characters; anything else is None."""
    return value[:ID_LIMIT] if isinstance(value, str) else None


def record_for(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """The log record for one SubagentStop event (``None`` for another agent type)."""
    from agent_reflection.in_loop.escalation_contract import check_output, rejected_paths_in

    agent_type = event.get("agent_type")
    if agent_type not in (None, "", AGENT_TYPE):
        return None
    text = event.get("last_assistant_message")
    source = "last_assistant_message"
    prompt = ""
    path = event.get("agent_transcript_path")
    if isinstance(path, str) and path:
        try:
            prompt, from_transcript = transcript_messages(path)
        except OSError as exc:
            warn(PROG, f"cannot read {path}: {exc}")
            from_transcript = ""
        if not (isinstance(text, str) and text.strip()):
            text, source = from_transcript, "agent_transcript"
    if not isinstance(text, str) or not text.strip():
        text, source = "", "none"
    text = text[:CHECK_LIMIT]
    check = check_output(text, rejected_paths=rejected_paths_in(prompt[:CHECK_LIMIT]))
    return {
        "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "session_id": _short(event.get("session_id")),
        "agent_id": _short(event.get("agent_id")),
        "agent_type": _short(agent_type),
        "source": source,
        "kind": check.kind,
        "valid": check.valid,
        "problems": [str(p) for p in check.problems],
        "need_context": check.need_context,
        "attempt": check.attempt,
        "failure_layers": list(check.failure_layers),
        "text": text[:TEXT_LIMIT],
    }


def append_record(folder: str, record: Mapping[str, Any]) -> str:
    """Append one JSON line (a single ``O_APPEND`` write, safe beside other writers).

    The log is never opened through a symlink, and anything but a regular file there (a FIFO
    would block the open) is refused.
    """
    os.makedirs(folder, mode=0o700, exist_ok=True)
    path = os.path.join(folder, LOG_NAME)
    fd = open_regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
    finally:
        os.close(fd)
    return path


def block_reason(problems: list[str]) -> str:
    """The reason sent back to the subagent: every problem, then what it may reply."""
    from agent_reflection.in_loop.escalation_contract import (
        DECLARED_KINDS,
        RETRY_PACKET_FIELDS,
        TERMINAL_FIELDS,
    )

    shown = [f"- {p}" for p in problems[:REASON_PROBLEMS]]
    if len(problems) > REASON_PROBLEMS:
        shown.append(f"- (+{len(problems) - REASON_PROBLEMS} more)")
    missing = [p.split(":", 1)[0] for p in problems if "missing" in p]
    return "\n".join(
        [
            "Your reply breaks the reflection-unblocker output contract and was not accepted.",
            *shown,
            *([f"Missing fields: {', '.join(missing)}."] if missing else []),
            "Reply again with exactly one of these output kinds: "
            + ", ".join(f"`output: {k}` (first line)" for k in DECLARED_KINDS)
            + "; a <RETRY_PACKET> with "
            + ", ".join(RETRY_PACKET_FIELDS)
            + "; `[NEED_CONTEXT: <target>]`; `[COHERENCE_CHECK_FAILED]`; or, at rescue attempt "
            f"{TERMINAL_ATTEMPT}+ only, one terminal <ESCALATION> with "
            + ", ".join(TERMINAL_FIELDS)
            + " and nothing else. Fix only what is listed above.",
        ]
    )


def _first_block(folder: str, event: Mapping[str, Any]) -> bool:
    """True the first time this subagent is blocked (creates its marker; atomic)."""
    session = session_key(str(event.get("session_id") or "no-session"))
    agent = session_key(str(event.get("agent_id") or "no-agent"))
    os.makedirs(folder, mode=0o700, exist_ok=True)
    path = os.path.join(folder, f"{session}.agent-{agent}.blocked.json")
    return create_file(path, json.dumps({"blocked_at": time.time()}).encode("utf-8"))


def decide(event: Mapping[str, Any], record: dict[str, Any], folder: str) -> str | None:
    """The JSON to print for ``record`` (and its ``decision`` set), or ``None`` to pass."""
    record["decision"] = "pass"
    if event.get("agent_type") != AGENT_TYPE:
        return None  # an event without the agent type is recorded, never acted on
    if not record["valid"]:
        if record["source"] == "none" or event.get("stop_hook_active") is True:
            return None
        if not _first_block(folder, event):
            return None
        record["decision"] = "block"
        return json.dumps(
            {"decision": "block", "reason": block_reason(record["problems"])}, ensure_ascii=False
        )
    attempt = record.get("attempt")
    if record["kind"] == "escalation" and isinstance(attempt, int) and attempt >= TERMINAL_ATTEMPT:
        record["decision"] = "surface"
        layers = ", ".join(record.get("failure_layers") or ["unknown"])
        message = (
            f"Reflection agent: terminal escalation at [ATTEMPT: {attempt}] (suspected layer: "
            f"{layers}). Reflection-level rescue is blocked too; a person needs to decide the next "
            "step. Do not re-run the coder or the reflection agent with the same context.\n\n"
            + record["text"]
        )
        return json.dumps({"systemMessage": message}, ensure_ascii=False)
    return None


def handle(raw: str, env: Mapping[str, str]) -> str | None:
    event = json.loads(raw) if raw.strip() else {}
    if not isinstance(event, dict) or event.get("hook_event_name") != "SubagentStop":
        return None
    record = record_for(event)
    if record is None:
        return None
    folder = state_dir(env)
    out = decide(event, record, folder)
    try:
        append_record(folder, record)
    except OSError as exc:  # the contract is enforced even when the log cannot be written
        warn(PROG, f"cannot append to {os.path.join(folder, LOG_NAME)}: {exc}")
    return out


def main() -> NoReturn:
    """Console-script entry point. Ends the process with status 0; stdout is one JSON document
    or empty."""
    run_hook(PROG, _subagent_stop)


def _subagent_stop(argv: list[str]) -> str | None:
    del argv  # the hook takes no arguments
    out = handle(read_stdin(PROG), os.environ)
    return None if out is None else out + "\n"


if __name__ == "__main__":
    main()
