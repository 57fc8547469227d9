"""The anti-loop detector: count repeated failures of the same kind and escalate at a threshold.

A *failure signature* names one kind of failure: the tool, the command it ran (Bash: the
command without heredoc bodies; file tools: the file path; other tools: the tool alone) and the
decisive line of its error. Both halves are normalised so that reruns of the same thing match:

* command (Bash: every line of the command except heredoc bodies, which are data, joined with
  `` ; ``): runs of digits become ``N`` and hex ids (git SHAs, UUIDs, ``0x…`` addresses) become
  ``<hex>``; paths are kept, because *which* file or test ran is part of what was tried;
* error: the same, and also every token holding a ``/`` (a path) becomes ``<path>``: line
  numbers, temporary folders and object addresses change between otherwise identical failures.

The decisive error line is the last non-empty line of the error text (a traceback ends with the
exception, a test runner with its verdict), prefixed by ``exit N`` when the text starts with
Claude Code's ``Exit code N`` line.

Counting (:func:`observe`): every failure adds one to its signature's count. A *success* of the
same command (same tool and command key) clears every signature of that command: the thing now
works. Other successes (reading a file, editing one) do not reset anything, because a real loop
is "edit, rerun, same error" and the edits succeed. A new user prompt (a new task) clears all.
When a signature's count reaches the threshold, and again every ``threshold`` further failures,
the detector fires with ``[ATTEMPT: count]``.

Stdlib only and import-light (``re``, which the hook's ``json`` imports anyway; no
dataclasses or typing at run time): the in-loop hook imports this module on every tool call.
State is a plain JSON-able dict.
"""

from __future__ import annotations

import re

from agent_reflection import config

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Failures of one signature before the detector escalates (declared, with where the value
#: comes from, in :data:`agent_reflection.config.ESCALATION_THRESHOLD`; measured on the real
#: agent runs: docs/in-loop.md, "Threshold").
DEFAULT_THRESHOLD: int = config.ESCALATION_THRESHOLD.default
#: Characters kept of a normalised command or error line.
KEY_LIMIT = 200
#: Signatures remembered per session (the oldest are dropped first).
MAX_SIGNATURES = 32
#: Files remembered per session for the handoff (most recent last).
MAX_FILES = 8
#: Characters of the task shown in the payload.
TASK_LIMIT = 300
#: Tools whose input names one file: the file is the "command" of the signature.
FILE_TOOLS = frozenset(("Edit", "MultiEdit", "Write", "Read", "NotebookEdit"))
_QUOTES = "\"'`()[]{}<>,;:"
#: A hex id: ``0x…``, or 7+ hex digits (``-`` allowed between them) holding a digit and a letter.
_HEX_ID = re.compile(r"0[xX][0-9a-fA-F]+|(?=.*[0-9])(?=.*[a-fA-F])(?:-*[0-9a-fA-F]){7,}-*")


def normalise(text: str, *, paths: bool) -> str:
    """``text`` with digit runs as ``N``, hex ids as ``<hex>`` and (``paths``) paths as ``<path>``.

    Whitespace is collapsed and the result cut to :data:`KEY_LIMIT` characters.
    """
    words: list[str] = []
    for token in text[: KEY_LIMIT * 4].split():
        if _HEX_ID.fullmatch(token.strip(_QUOTES).rstrip(".")):
            words.append("<hex>")
        elif paths and ("/" in token or "\\" in token):
            words.append("<path>")
        else:
            words.append(re.sub(r"[0-9]+", "N", token))
    return " ".join(words)[:KEY_LIMIT]


def _heredoc_delimiter(line: str) -> str | None:
    at = line.find("<<")
    if at < 0 or line[at:].startswith("<<<"):
        return None
    words = line[at + 2 :].lstrip("-").split()
    word = words[0].strip("'\"") if words else ""
    return word or None


def shell_lines(command: str) -> list[str]:
    """The non-empty lines of a shell command, heredoc bodies left out (they are data)."""
    lines: list[str] = []
    delimiter: str | None = None
    for line in command.splitlines():
        if delimiter is not None:
            if line.strip() == delimiter:
                delimiter = None
            continue
        if line.strip():
            lines.append(line.strip())
            delimiter = _heredoc_delimiter(line)
    return lines


def command_key(tool: str, tool_input: object) -> str:
    """What was run: Bash's command (no heredoc bodies), a file tool's path, else nothing."""
    if isinstance(tool_input, dict):
        if tool == "Bash":
            command = tool_input.get("command")
            if isinstance(command, str):
                return normalise(" ; ".join(shell_lines(command)), paths=False)
        elif tool in FILE_TOOLS:
            path = tool_input.get("file_path") or tool_input.get("notebook_path")
            if isinstance(path, str):
                return normalise(path, paths=False)
    return ""


def error_key(error: str) -> str:
    """The decisive line of an error text, normalised (see the module doc)."""
    lines = [ln.strip() for ln in error.splitlines() if ln.strip()]
    if not lines:
        return ""
    prefix = ""
    first = lines[0]
    if first.startswith("Exit code ") and first[10:].strip().lstrip("-").isdigit():
        prefix = f"exit {first[10:].strip()}"
        lines = lines[1:]
    last = normalise(lines[-1], paths=True) if lines else ""
    return f"{prefix}: {last}" if prefix and last else prefix or last


def signature(tool: str, command: str, error: str) -> str:
    """One failure kind: ``tool | command key | error key``."""
    return f"{tool} | {command} | {error}"


def fresh_state(task: str = "") -> dict[str, Any]:
    """The detector's state at the start of a task."""
    return {"task": task, "step": 0, "streaks": {}, "files": []}


def checked_state(state: object) -> dict[str, Any]:
    """``state`` when it is a usable detector state, else a fresh one (keeping its task)."""
    if not isinstance(state, dict):
        return fresh_state()
    step = state.get("step")
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        return fresh_state(str(state.get("task") or ""))
    if not isinstance(state.get("streaks"), dict):
        state["streaks"] = {}
    return state


def observe(
    state: dict[str, Any],
    *,
    tool: str,
    tool_input: object,
    failed: bool,
    error: str = "",
    threshold: int = DEFAULT_THRESHOLD,
) -> dict[str, Any] | None:
    """Count one tool call into ``state`` (updated in place); the trigger when one fires.

    The trigger is ``{"signature", "attempt", "command", "error", "tool", "first_step",
    "step", "files", "task"}``; ``attempt`` is the signature's failure count. ``threshold``
    0 disables escalation (counting goes on).
    """
    state["step"] = int(state.get("step") or 0) + 1
    streaks = state.get("streaks")
    if not isinstance(streaks, dict):
        streaks = state["streaks"] = {}
    files = [f for f in state.get("files") or [] if isinstance(f, str)]
    named = tool_input if isinstance(tool_input, dict) else {}
    path = named.get("file_path") or named.get("notebook_path")
    if isinstance(path, str) and path:  # the file a file tool named, last touched last
        files = [f for f in files if f != path[:KEY_LIMIT]] + [path[:KEY_LIMIT]]
    state["files"] = files[-MAX_FILES:]
    command = command_key(tool, tool_input)
    if not failed:  # the command works now: every failure of it is cleared
        for sig, v in list(streaks.items()):
            if isinstance(v, dict) and v.get("tool") == tool and v.get("command") == command:
                del streaks[sig]
        return None
    err = error_key(error)
    sig = signature(tool, command, err)
    entry = streaks.pop(sig, None)
    if not isinstance(entry, dict) or not isinstance(entry.get("count"), int):
        entry = {"count": 0, "tool": tool, "command": command, "error": err}
        entry["first_step"] = state["step"]
    entry["count"] += 1
    streaks[sig] = entry  # re-inserted: the dict's order is least recently failed first
    while len(streaks) > MAX_SIGNATURES:
        del streaks[next(iter(streaks))]
    count = entry["count"]
    if threshold <= 0 or count < threshold or count % threshold:
        return None
    return {
        "signature": sig,
        "attempt": count,
        "tool": tool,
        "command": command,
        "error": err,
        "first_step": entry.get("first_step"),
        "step": state["step"],
        "files": list(state["files"]),
        "task": str(state.get("task") or ""),
    }


def one_line(text: str, limit: int) -> str:
    """``text`` on one line (whitespace collapsed), cut to ``limit`` characters with ``...``."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def escalation_payload(trigger: dict[str, Any]) -> str:
    """The bounded ``<ESCALATION>`` trigger for the reflection agent (a clean handoff).

    Holds the original task, the latest error signature and the files touched; never the
    failed transcript. It parses as a valid trigger of the escalation contract.
    """
    task = one_line(str(trigger.get("task") or ""), TASK_LIMIT) or "not recorded (no prompt seen)"
    files = [f"- {one_line(str(f), KEY_LIMIT)}" for f in trigger.get("files") or []]
    lines = [
        "<ESCALATION>",
        "status: blocked",
        f"attempt: [ATTEMPT: {trigger['attempt']}]",
        f"original_task: {task}",
        f"error_signature: {one_line(str(trigger['signature']), 3 * KEY_LIMIT)}",
        f"failing_command: {trigger.get('command') or trigger.get('tool')}",
        "files:",
        *(files or ["- none recorded"]),
        f"what_was_tried: the same {trigger.get('tool')} call failed {trigger['attempt']} times "
        "with this signature",
        "</ESCALATION>",
    ]
    return "\n".join(lines)


def escalation_context(trigger: dict[str, Any], agent: str = "reflection-unblocker") -> str:
    """The ``additionalContext`` text: why, what to do, and the payload to hand over."""
    return (
        "[System meta: anti-loop escalation. Not a user message.]\n"
        f"[ATTEMPT: {trigger['attempt']}] The same failure has now happened "
        f"{trigger['attempt']} times (first at tool call {trigger.get('first_step')}). Stop "
        f"patching along the same line. Hand off to the `{agent}` subagent (Task / Agent "
        "tool) with a clean handoff: pass ONLY the block below, the original task and the "
        "current files; do not paste your failed attempts or this conversation. Then follow its "
        "reply.\n\n" + escalation_payload(trigger)
    )
