"""``reflect-subagent-stop-hook``: check the reflection agent's reply against the contract.

Registered for ``SubagentStop`` (matcher ``reflection-unblocker``). Reads the reply from
``last_assistant_message`` when Claude Code sends it, else from the last assistant message in
``agent_transcript_path`` (the subagent's own transcript; ``transcript_path`` is the parent's).
``@REJECTED`` tags in the subagent's first prompt become the protected paths of the check.

Appends one JSON line per reply to ``<state dir>/reflection-agent.jsonl`` (the state dir of
:mod:`agent_reflection.hooks.cadence`): kind, valid, problems, attempt, layers, the reply
(bounded). Never blocks: exit 0 and empty stdout on every path, diagnostics on stderr.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import time

from agent_reflection.hooks._entry import read_stdin, run_hook, warn
from agent_reflection.hooks._json_lite import dumps, loads
from agent_reflection.hooks.cadence import state_dir

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

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
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


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
    fd = os.open(path, os.O_RDONLY | _O_NONBLOCK | _O_NOFOLLOW | _O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        head = _read_at(fd, 0, HEAD_BYTES)
        first_end = head.find(b"\n")
        head = head if first_end < 0 else head[: first_end + 1]
        start = max(len(head), info.st_size - TAIL_BYTES)
        tail = _read_at(fd, start, TAIL_BYTES)
    finally:
        os.close(fd)
    lines = [head, *tail.splitlines()]  # a tail starting mid-line fails to parse: skipped
    first_user = last_assistant = ""
    for raw in lines:
        try:
            record = loads(raw.decode("utf-8", "replace"))
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


def _read_at(fd: int, offset: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = os.pread(fd, limit - size, offset + size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _short(value: object) -> str | None:
    """An id as logged: a string cut to :data:`ID_LIMIT` characters; anything else is None."""
    return value[:ID_LIMIT] if isinstance(value, str) else None


def record_for(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """The log record for one SubagentStop event (``None`` for another agent type)."""
    from agent_reflection.escalation.contract import check_output, rejected_paths_in

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
            _warn(f"cannot read {path}: {exc}")
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
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC
    fd = os.open(path, flags, 0o600)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        os.write(fd, (dumps(record) + "\n").encode("utf-8"))
    finally:
        os.close(fd)
    return path


def handle(raw: str, env: Mapping[str, str]) -> None:
    event = loads(raw) if raw.strip() else {}
    if not isinstance(event, dict) or event.get("hook_event_name") != "SubagentStop":
        return
    record = record_for(event)
    if record is not None:
        append_record(state_dir(env), record)


def _warn(message: str) -> None:
    warn(PROG, message)


def main() -> int:
    """Console-script entry point. Always returns 0 and prints nothing on stdout."""
    return run_hook(PROG, _subagent_stop)


def _subagent_stop(argv: list[str]) -> None:
    del argv  # the hook takes no arguments
    handle(read_stdin(PROG), os.environ)


if __name__ == "__main__":
    sys.exit(main())
