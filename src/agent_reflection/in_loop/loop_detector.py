"""The anti-loop detector: count failures of the same cause and escalate at a threshold.

A failure's *cause* comes from the text the call showed (:mod:`.error_signature`, the same
function live in the hook and in every replay): its decisive line (last failing test, else last
exception, else last error-looking line) normalised, with reworded sightings of one cause
grouped (same missing module, same missing file, same exception whatever its line number). A
shell call whose text shows a failure failed whatever its exit code; expected failures (a
search that found nothing, an edit tool's match count) and trivial slips (``cd`` into a missing
folder, a tool that is not installed) are not counted and do not break a streak either.

Counting (:func:`observe`): every counted failure adds one to its cause, whichever command
showed it (an agent varying the command around one failure is still stuck on it). A
*success* of a command that showed a cause clears that cause: the thing now works. Other
successes (reading a file, editing one) reset nothing, because a real loop is "edit, rerun, same
error" and the edits succeed. A new user prompt (a new task) clears all. *Noise* is learnt per
session: an exception line shown by at least :data:`NOISE_COMMANDS` different commands that
otherwise worked (exit 0) is printed by the environment, not by the work (a broken ``.pth``
file's traceback on every Python start); it is left out of every later reading, and a cause
built on it is dropped. When a cause's count reaches the threshold, and again every
``threshold`` further failures, the detector fires with ``[ATTEMPT: count]``. Beside the
causes, each command has a *command streak*: its counted failures, whatever their text, until
it succeeds; it escalates at ``threshold + COMMAND_EXTRA`` (an agent alternating between two
errors of one script is stuck too, but one cause repeating is the stronger sign).

The command key (:func:`command_key`; Bash: the command without heredoc bodies, file tools:
the path) still says *what* was run: it is how a success clears a cause, and what the hand-off
names as the failing command.

Stdlib only and import-light (``re``, which the hook's ``json`` imports anyway; no
dataclasses or typing at run time): the in-loop hook imports this module on every tool call.
State is a plain JSON-able dict.
"""

from __future__ import annotations

import re

from agent_reflection import config
from agent_reflection.in_loop import error_signature

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Failures of one cause before the detector escalates (declared, with where the value comes
#: from, in :data:`agent_reflection.config.ESCALATION_THRESHOLD`; docs/in-loop.md, "Checked
#: against a reader's labels").
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


#: A *command streak* (one command failing again and again, whatever its text, with no success
#: between) is a weaker sign than one cause repeating: it escalates only at this many more
#: failures than the threshold. Chosen on the tuning half of the labels (docs/in-loop.md).
COMMAND_EXTRA = 2
#: Prefix of a command streak's key among the causes.
COMMAND_CAUSE = "command: "
#: Different commands (that otherwise worked) an exception line must show up on to be noise.
NOISE_COMMANDS = 3
#: Noise candidate lines remembered per session.
MAX_NOISE = 16
#: Commands remembered per cause (to clear it when one of them succeeds).
MAX_COMMANDS = 8


def fresh_state(task: str = "") -> dict[str, Any]:
    """The detector's state at the start of a task."""
    return {"task": task, "step": 0, "streaks": {}, "files": [], "noise": {}}


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


def _learn_noise(state: dict[str, Any], command: str, text: str) -> None:
    """Note the exception lines of a call that worked; a line seen on enough different
    commands becomes noise and any cause built on it is dropped."""
    noise = state.get("noise")
    if not isinstance(noise, dict):
        noise = state["noise"] = {}
    for line in error_signature.noise_candidates(text):
        seen = noise.pop(line, None)
        seen = seen if isinstance(seen, list) else []
        if command not in seen and seen != ["*"]:
            seen = [*seen, command][-NOISE_COMMANDS:]
        if len(seen) >= NOISE_COMMANDS:
            seen = ["*"]  # confirmed noise
            streaks = state.get("streaks") or {}
            for cause, entry in list(streaks.items()):
                if isinstance(entry, dict) and entry.get("noise_line") == line:
                    del streaks[cause]
        noise[line] = seen
    while len(noise) > MAX_NOISE:
        del noise[next(iter(noise))]


def noise_lines(state: dict[str, Any]) -> frozenset[str]:
    """The session's confirmed noise lines (normalised)."""
    noise = state.get("noise")
    return (
        frozenset(k for k, v in noise.items() if v == ["*"])
        if isinstance(noise, dict)
        else frozenset()
    )


def observe(
    state: dict[str, Any],
    *,
    tool: str,
    tool_input: object,
    failed: bool,
    output: str = "",
    threshold: int = DEFAULT_THRESHOLD,
) -> dict[str, Any] | None:
    """Count one tool call into ``state`` (updated in place); the trigger when one fires.

    ``failed``: the tool reported a failure (non-zero exit, timeout, ``PostToolUseFailure``);
    ``output``: the text the call showed (on a failure, its error text). The reading of this
    call is left in ``state["last"]`` as ``[kind, cause]`` (:func:`.error_signature.read_failure`).

    The trigger is ``{"signature", "attempt", "command", "error", "tool", "first_step",
    "step", "files", "task"}``; ``signature`` is the cause, ``attempt`` its failure count.
    ``threshold`` 0 disables escalation (counting goes on).
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
    raw = named.get("command") if tool == "Bash" else None
    shell = isinstance(raw, str)
    text = output[-error_signature.TEXT_LIMIT :]
    if shell and not failed:
        _learn_noise(state, command, text)
    reading = error_signature.read_failure(
        text,
        failed=failed,
        command=raw if isinstance(raw, str) else "",
        shell=shell,
        noise=noise_lines(state),
    )
    state["last"] = [reading.kind, reading.cause]
    if reading.kind == "ok":  # the command works now: every cause it showed is cleared
        for cause, v in list(streaks.items()):
            if isinstance(v, dict) and command in (v.get("commands") or ()):
                del streaks[cause]
        return None
    if reading.kind != "failed":  # expected or trivial: neither counts nor breaks a streak
        return None
    fired: list[tuple[int, str, dict[str, Any]]] = []
    covered = False
    for cause in (*reading.causes, f"{COMMAND_CAUSE}{tool} {command}"):
        entry = streaks.pop(cause, None)
        if not isinstance(entry, dict) or not isinstance(entry.get("count"), int):
            entry = {"count": 0, "tool": tool, "commands": [], "first_step": state["step"]}
        entry["count"] += 1
        entry["tool"] = tool
        entry["command"] = command
        entry["error"] = reading.line[:KEY_LIMIT]
        entry["noise_line"] = error_signature.normalise_line(reading.line)
        commands = [c for c in entry.get("commands") or [] if c != command]
        entry["commands"] = [*commands, command][-MAX_COMMANDS:]
        streaks[cause] = entry  # re-inserted: the dict's order is least recently failed first
        if cause.startswith(COMMAND_CAUSE) and covered:
            continue  # a cause of this call has escalated already: the streak says no more
        need = threshold + (COMMAND_EXTRA if cause.startswith(COMMAND_CAUSE) else 0)
        count = entry["count"]
        covered = covered or count >= threshold
        if threshold > 0 and count >= need and not (count - need) % threshold:
            fired.append((count - need, cause, entry))
    while len(streaks) > MAX_SIGNATURES:
        del streaks[next(iter(streaks))]
    if not fired:
        return None
    # a cause speaks before a command streak, the longest-running first
    _, cause, entry = max(fired, key=lambda f: (not f[1].startswith(COMMAND_CAUSE), f[0]))
    return {
        "signature": cause,
        "attempt": entry["count"],
        "tool": tool,
        "command": command,
        "error": entry["error"],
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
        f"what_was_tried: {trigger['attempt']} attempts failed with this same "
        f"{'command' if str(trigger['signature']).startswith(COMMAND_CAUSE) else 'cause'} "
        f"(last error: {one_line(str(trigger.get('error') or ''), KEY_LIMIT) or 'no text'})",
        "</ESCALATION>",
    ]
    return "\n".join(lines)


def escalation_context(trigger: dict[str, Any], agent: str = "reflection-unblocker") -> str:
    """The ``additionalContext`` text: why, what to do, and the payload to hand over."""
    what = (
        "The same command has now failed"
        if str(trigger.get("signature") or "").startswith(COMMAND_CAUSE)
        else "The same failure has now happened"
    )
    return (
        "[System meta: anti-loop escalation. Not a user message.]\n"
        f"[ATTEMPT: {trigger['attempt']}] {what} "
        f"{trigger['attempt']} times (first at tool call {trigger.get('first_step')}). Stop "
        f"patching along the same line. Hand off to the `{agent}` subagent (Task / Agent "
        "tool) with a clean handoff: pass ONLY the block below, the original task and the "
        "current files; do not paste your failed attempts or this conversation. Then follow its "
        "reply.\n\n" + escalation_payload(trigger)
    )
