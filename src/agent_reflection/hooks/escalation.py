"""``reflect-escalation-hook``: the anti-loop detector as a Claude Code hook.

Registered for ``PostToolUse`` and ``PostToolUseFailure`` (and ``UserPromptSubmit``, which
starts a new task); it switches on ``hook_event_name``:

* ``PostToolUseFailure``: one failure of its signature (see
  :mod:`agent_reflection.in_loop.loop_detector`). When a signature reaches the threshold, print
  ``{"hookSpecificOutput": {"hookEventName": "PostToolUseFailure", "additionalContext": ...}}``
  holding the bounded ``<ESCALATION>`` payload with ``[ATTEMPT: N]`` and the instruction to hand
  off to the ``reflection-unblocker`` subagent with a clean handoff. An interrupt
  (``is_interrupt``) is the user's doing, not a failure: ignored.
* ``PostToolUse``: a success; clears the signatures of the same command. Prints nothing.
* ``UserPromptSubmit``: a new task: clears every count and remembers the prompt as the task of
  the handoff. Prints nothing.

Threshold: ``--escalation-threshold N`` on the command line, else
``$REFLECTION_ESCALATION_THRESHOLD``, else 4 (:data:`loop_detector.DEFAULT_THRESHOLD`, measured
on real agent runs; docs/in-loop.md). ``0`` disables escalation.

State: ``<session>.loop.json`` beside the cadence hook's files (same folder, same locking and
atomic replace). Contract: stdlib only, exit 0 on every fault (a corrupt state file starts
afresh), stdout is one JSON document or empty.
"""

from __future__ import annotations

import os
import sys

from agent_reflection.hooks._entry import read_stdin, run_hook, warn
from agent_reflection.hooks._json_lite import dumps, loads
from agent_reflection.hooks.cadence import (
    MAX_STATE_BYTES,
    SEEN_LIMIT,
    TASK_STORE_LIMIT,
    TOOL_USE_ID_LIMIT,
    _as_list,
    _Locked,
    _read_regular,
    remove_stale,
    write_state,
)
from agent_reflection.hooks.session_state import session_key, state_dir
from agent_reflection.in_loop import loop_detector

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

PROG = "reflect-escalation-hook"
THRESHOLD_ENV = "REFLECTION_ESCALATION_THRESHOLD"
THRESHOLD_FLAG = "--escalation-threshold"
STATE_SUFFIX = ".loop.json"
#: Characters of an error text read (the decisive line is near its end).
ERROR_LIMIT = 20_000


def read_loop_state(path: str) -> dict[str, Any]:
    """The detector state at ``path``; a fresh one when missing, unreadable or corrupt."""
    try:
        state = loads(_read_regular(path, MAX_STATE_BYTES).decode("utf-8"))
    except (OSError, ValueError):
        return loop_detector.fresh_state()
    if not isinstance(state, dict) or state.get("version") != loop_detector.STATE_VERSION:
        return loop_detector.fresh_state()
    step = state.get("step")
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        return loop_detector.fresh_state(str(state.get("task") or ""))
    if not isinstance(state.get("streaks"), dict):
        state["streaks"] = {}
    return state


def parse_threshold(argv: list[str], env: Mapping[str, str]) -> int:
    """The threshold from the command line, the environment, or the default."""
    for i, arg in enumerate(argv):
        value = None
        if arg == THRESHOLD_FLAG and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith(THRESHOLD_FLAG + "="):
            value = arg.split("=", 1)[1]
        if value is not None:
            if value.strip().isdigit():
                return int(value)
            _warn(f"{THRESHOLD_FLAG} {value!r} is not a whole number >= 0; ignored")
    raw = env.get(THRESHOLD_ENV, "").strip()
    if raw:
        if raw.isdigit():
            return int(raw)
        _warn(f"${THRESHOLD_ENV}={raw!r} is not a whole number >= 0; using the default")
    return loop_detector.DEFAULT_THRESHOLD


def on_tool_event(
    event: Mapping[str, Any], folder: str, threshold: int, *, failed: bool
) -> str | None:
    """Count one tool call; the JSON to print when the detector fires, else ``None``."""
    key = session_key(str(event.get("session_id") or "no-session"))
    path = os.path.join(folder, key + STATE_SUFFIX)
    new_session = not os.path.exists(path)
    tool = event.get("tool_name")
    tool = tool[:TOOL_USE_ID_LIMIT] if isinstance(tool, str) else ""
    error = event.get("error") if failed else ""
    if not isinstance(error, str):
        error = "" if error is None else dumps(error)
    with _Locked(os.path.join(folder, key + ".loop.lock")):
        state = read_loop_state(path)
        tool_use_id = event.get("tool_use_id")
        seen = _as_list(state.get("seen"))
        if isinstance(tool_use_id, str) and tool_use_id:
            tool_use_id = tool_use_id[:TOOL_USE_ID_LIMIT]
            if tool_use_id in seen:
                return None
            seen = [*seen, tool_use_id][-SEEN_LIMIT:]
        state["seen"] = seen
        trigger = loop_detector.observe(
            state,
            tool=tool,
            tool_input=event.get("tool_input"),
            failed=failed,
            error=error[-ERROR_LIMIT:],
            threshold=threshold,
        )
        if trigger is not None:
            fired = _as_list(state.get("fired"))
            state["fired"] = [*fired, [state["step"], trigger["attempt"]]][-100:]
        write_state(path, state)
    if new_session:
        remove_stale(folder, keep=key)
    if trigger is None:
        return None
    name = str(event.get("hook_event_name"))
    context = loop_detector.escalation_context(trigger)
    return dumps({"hookSpecificOutput": {"hookEventName": name, "additionalContext": context}})


def on_user_prompt_submit(event: Mapping[str, Any], folder: str) -> None:
    """A new task: clear every count, remember the prompt."""
    key = session_key(str(event.get("session_id") or "no-session"))
    prompt = event.get("prompt")
    task = prompt[:TASK_STORE_LIMIT] if isinstance(prompt, str) else ""
    with _Locked(os.path.join(folder, key + ".loop.lock")):
        write_state(os.path.join(folder, key + STATE_SUFFIX), loop_detector.fresh_state(task))


def handle(raw: str, argv: list[str], env: Mapping[str, str]) -> str | None:
    """Everything the hook does, given stdin text, arguments and environment."""
    event = loads(raw) if raw.strip() else {}
    if not isinstance(event, dict):
        return None
    name = event.get("hook_event_name")
    if name not in ("PostToolUse", "PostToolUseFailure", "UserPromptSubmit"):
        return None
    folder = state_dir(env)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    if name == "UserPromptSubmit":
        on_user_prompt_submit(event, folder)
        return None
    if name == "PostToolUseFailure" and event.get("is_interrupt") is True:
        return None
    threshold = parse_threshold(argv, env)
    return on_tool_event(event, folder, threshold, failed=name == "PostToolUseFailure")


def _warn(message: str) -> None:
    warn(PROG, message)


def main() -> int:
    """Console-script entry point. Always returns 0."""
    return run_hook(PROG, _escalation)


def _escalation(argv: list[str]) -> str | None:
    out = handle(read_stdin(PROG), argv, os.environ)
    return None if out is None else out + "\n"


if __name__ == "__main__":
    sys.exit(main())
