"""``reflect-in-loop-hook``: the in-loop jobs of a Claude Code session in one hook process.

Registered for ``PostToolUse``, ``PostToolUseFailure`` and ``UserPromptSubmit``; it switches on
``hook_event_name`` and runs two parts on one session state:

* **cadence** (:mod:`agent_reflection.in_loop.cadence`): every tool call counts (a failed call
  too); every N calls a checkpoint prompt is due. A new prompt resets count and marker and
  becomes the task shown in the checkpoint.
* **escalation** (:mod:`agent_reflection.in_loop.loop_detector`): the text the call showed
  (``error`` of a ``PostToolUseFailure``; ``tool_response`` of a ``PostToolUse``: Bash's
  stdout and stderr, so a traceback behind exit 0 is a failure) is read by
  :mod:`agent_reflection.in_loop.error_signature`, the same code the replays use; a counted
  failure adds to its cause, a success of a command clears its causes; at the threshold the
  coder gets the bounded ``<ESCALATION>`` block and the instruction to hand off to the
  ``reflection-unblocker`` subagent. An interrupt (``is_interrupt``) is the user's doing, not a
  failure: ignored. A new prompt clears every count.

Output: exactly one JSON document or nothing,
``{"hookSpecificOutput": {"hookEventName": <the event>, "additionalContext": <text>}}``. When
a checkpoint and an escalation fall on the same call, the text is the checkpoint, a blank line,
then the escalation: the checkpoint stays the first line (the loaders find it by that line) and
the last thing the agent reads is the hand-off, which is the next step the checkpoint asks for.

Parts and settings (the command line beats the environment, which beats the project file;
:mod:`agent_reflection.config`): ``--only cadence`` / ``--only escalation`` (repeatable; default
both), ``--reflection-cadence N`` / ``$REFLECTION_CADENCE`` / ``reflection_cadence`` in the
project file (re-read only when a file's size or mtime changes) / 7, and
``--escalation-threshold N`` / ``$REFLECTION_ESCALATION_THRESHOLD`` / 4; 0 disables a part's
output (its counting goes on). ``reflect-cadence-hook`` and ``reflect-escalation-hook``, the
commands of earlier installs, run this hook with one part.

State: ``<session>.json`` under ``<session>.lock`` in the state folder, one entry per part
(:mod:`agent_reflection.hooks.paths`: locking, atomic replace, de-duplication of a
``tool_use_id`` reported twice, per part, stale-file removal).

Contract: stdlib only, exits 0 on every fault (diagnostics go to stderr, which Claude Code
shows only in debug mode).
"""

from __future__ import annotations

import json
import os
import stat
from collections import namedtuple

from agent_reflection import config
from agent_reflection.hooks._entry import read_stdin, run_hook, warn
from agent_reflection.hooks.paths import (
    Locked,
    first_sighting,
    read_json,
    remove_stale,
    session_key,
    state_dir,
    write_json,
)
from agent_reflection.in_loop import cadence, error_signature, loop_detector

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any, NoReturn

PROG = "reflect-in-loop-hook"
#: The parts, in the order their texts are joined.
PARTS = ("cadence", "escalation")
EVENTS = ("PostToolUse", "PostToolUseFailure", "UserPromptSubmit")
STATE_VERSION = 2
#: Characters of the user's prompt kept as the task (the prompts show at most 300).
TASK_STORE_LIMIT = 4000
#: Characters of a call's text read (the decisive line is near its end).
ERROR_LIMIT = 20_000
#: Longer than any real path (PATH_MAX): not a folder.
MAX_PROJECT_DIR = 4096
#: Characters of a tool name kept (real ones are short).
TOOL_NAME_LIMIT = 200


#: Each part's option in the hook's command: the cadence, the escalation threshold.
OPTIONS = {"cadence": config.CADENCE.option, "escalation": config.ESCALATION_THRESHOLD.option}
#: What a command line asks: the parts to run, and the last value given to each part's option.
Args = namedtuple("Args", ("parts", "values"))


def parse_args(argv: Sequence[str], parts: tuple[str, ...], say: Callable[[str], None]) -> Args:
    """``--only PART`` (repeatable, within ``parts``) and each part's option
    (``--reflection-cadence N``, ``--escalation-threshold N``), as ``--opt V`` or ``--opt=V``;
    anything else is ignored. The installer reads the commands it wrote with it too."""
    part_of = {option: part for part, option in OPTIONS.items()}
    only: list[str] = []
    values: dict[str, str] = {}
    for i, arg in enumerate(argv):
        name, sep, value = arg.partition("=")
        if (name == "--only" or name in part_of) and (sep or i + 1 < len(argv)):
            value = value if sep else argv[i + 1]
            if name == "--only":
                only.append(value)
            else:
                values[part_of[name]] = value
    for part in only:
        if part not in PARTS:
            say(f"--only {part!r} is not one of {', '.join(PARTS)}; ignored")
    if any(p in PARTS for p in only):
        parts = tuple(p for p in parts if p in only)
    return Args(parts, values)


def read_state(path: str) -> dict[str, Any]:
    """The session's state at ``path``; an empty one when missing, unreadable or another
    version (every part then starts afresh)."""
    state = read_json(path)
    if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
        return {"version": STATE_VERSION}
    return state


def handle(
    raw: str, argv: Sequence[str], env: Mapping[str, str], parts: tuple[str, ...] = PARTS
) -> str | None:
    """Everything the hook does, given stdin text, arguments, environment and the parts the
    command runs; the JSON to print, or ``None``."""

    def say(message: str) -> None:
        warn(prog_of(parts), message)

    event = json.loads(raw) if raw.strip() else {}
    if not isinstance(event, dict):
        return None
    name = event.get("hook_event_name")
    if name not in EVENTS:
        return None
    args = parse_args(argv, parts, say)
    if not args.parts:
        return None
    folder = state_dir(env)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    key = session_key(str(event.get("session_id") or "no-session"))
    path = os.path.join(folder, key + ".json")
    if name == "UserPromptSubmit":
        new_task(event, args, path, os.path.join(folder, key + ".lock"))
        remove_stale(folder, keep=key)
        return None
    new_session = not os.path.exists(path)
    texts: list[str] = []
    with Locked(os.path.join(folder, key + ".lock")):
        state = read_state(path)
        if "cadence" in args.parts:
            texts += _cadence(state, event, args, env, say)
        interrupted = name == "PostToolUseFailure" and event.get("is_interrupt") is True
        if "escalation" in args.parts and not interrupted:
            texts += _escalation(state, event, args, env, say)
        write_json(path, state)
    if new_session:  # sessions without the prompt hook still get their folder tidied
        remove_stale(folder, keep=key)
    if not texts:
        return None
    output = {
        "hookSpecificOutput": {"hookEventName": name, "additionalContext": "\n\n".join(texts)}
    }
    return json.dumps(output, ensure_ascii=False)


def new_task(event: Mapping[str, Any], args: Args, path: str, lock: str) -> None:
    """A new prompt: reset each part, remember the prompt as the task."""
    prompt = event.get("prompt")
    task = prompt[:TASK_STORE_LIMIT] if isinstance(prompt, str) else ""
    with Locked(lock):
        state = read_state(path)
        if "cadence" in args.parts:
            old = state.get("cadence")
            state["cadence"] = cadence.fresh_state(task)
            if isinstance(old, dict) and "config" in old:  # keyed by the files' stamps: still good
                state["cadence"]["config"] = old["config"]
        if "escalation" in args.parts:
            state["escalation"] = loop_detector.fresh_state(task)
        write_json(path, state)


def _cadence(
    state: dict[str, Any],
    event: Mapping[str, Any],
    args: Args,
    env: Mapping[str, str],
    say: Callable[[str], None],
) -> list[str]:
    part = state["cadence"] = cadence.checked_state(state.get("cadence"))
    if not first_sighting(part, event.get("tool_use_id")):
        return []
    project_dir = config.env_text(config.PROJECT_DIR, env) or str(event.get("cwd") or "")
    if not project_dir or len(project_dir) > MAX_PROJECT_DIR:
        project_dir = os.getcwd()
    every, _ = config.resolve(
        config.CADENCE,
        cli=args.values.get("cadence"),
        env=env,
        project=lambda key: _project_value(part, project_dir, key, say),
        warn=say,
    )
    delta = cadence.count_call(part, every)
    return [] if delta is None else [cadence.reflection_prompt(delta, str(part.get("task") or ""))]


def _project_value(
    part: dict[str, Any], project_dir: str, key: str, say: Callable[[str], None]
) -> tuple[object, str] | None:
    """The cadence in the project file (``key``), parsed and cached in the cadence ``part``
    until a file's size or mtime changes (a bad value is said once, then cached as unset)."""
    stamp: list[Any] = [project_dir]
    for file in config.project_files(project_dir):
        try:
            st = os.stat(file)
        except (OSError, ValueError):
            stamp.append(None)
            continue
        if stat.S_ISREG(st.st_mode):
            stamp.append([st.st_mtime_ns, st.st_size])
        else:  # a FIFO or device would block (or never end) the read
            say(f"{file} is not a regular file; ignored")
            stamp.append(None)
    cached = part.get("config")
    if isinstance(cached, dict) and cached.get("key") == stamp:
        found = cached.get("found")
        return (found[0], found[1]) if isinstance(found, list) and len(found) == 2 else None
    value: list[Any] | None = None
    if stamp[1] is not None or stamp[2] is not None:
        try:
            found = config.project_value(project_dir, key)
            if found is not None:
                value = [config.parse(config.CADENCE, *found), found[1]]
        except config.InvalidSetting as exc:
            say(f"{exc}; using the default")
    part["config"] = {"key": stamp, "found": value}
    return None if value is None else (value[0], value[1])


def _escalation(
    state: dict[str, Any],
    event: Mapping[str, Any],
    args: Args,
    env: Mapping[str, str],
    say: Callable[[str], None],
) -> list[str]:
    part = state["escalation"] = loop_detector.checked_state(state.get("escalation"))
    if not first_sighting(part, event.get("tool_use_id")):
        return []
    threshold, _ = config.resolve(
        config.ESCALATION_THRESHOLD, cli=args.values.get("escalation"), env=env, warn=say
    )
    failed = event.get("hook_event_name") == "PostToolUseFailure"
    tool = event.get("tool_name")
    if failed:  # the error text of a failure
        output = event.get("error")
        if not isinstance(output, str):
            output = "" if output is None else json.dumps(output)
    else:  # what the tool showed: a shell call's text can show a failure behind exit 0
        output = error_signature.response_text(event.get("tool_response"))
    trigger = loop_detector.observe(
        part,
        tool=tool[:TOOL_NAME_LIMIT] if isinstance(tool, str) else "",
        tool_input=event.get("tool_input"),
        failed=failed,
        output=output[-ERROR_LIMIT:],
        threshold=threshold,
    )
    if trigger is None:
        return []
    fired = part.get("fired")
    fired = fired if isinstance(fired, list) else []
    part["fired"] = [*fired, [part["step"], trigger["attempt"]]][-100:]
    return [loop_detector.escalation_context(trigger)]


def prog_of(parts: tuple[str, ...]) -> str:
    """The command's name in diagnostics: an earlier install's command names its part."""
    return PROG if parts == PARTS else f"reflect-{parts[0]}-hook"


def _main(parts: tuple[str, ...]) -> NoReturn:
    prog = prog_of(parts)

    def body(argv: list[str]) -> str | None:
        out = handle(read_stdin(prog), argv, os.environ, parts)
        return None if out is None else out + "\n"

    run_hook(prog, body)


def main() -> NoReturn:
    """``reflect-in-loop-hook``: both parts (or those ``--only`` names). Ends the process with
    status 0."""
    _main(PARTS)


def cadence_main() -> NoReturn:
    """``reflect-cadence-hook``, the command of earlier installs: the cadence part alone."""
    _main(("cadence",))


def escalation_main() -> NoReturn:
    """``reflect-escalation-hook``, the command of earlier installs: the escalation part alone."""
    _main(("escalation",))


if __name__ == "__main__":
    main()
