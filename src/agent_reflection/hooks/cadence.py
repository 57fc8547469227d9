"""``reflect-cadence-hook``: the cadence checkpoint as a Claude Code hook.

One entry point, registered for two events; it switches on ``hook_event_name``:

* ``PostToolUse``: count the tool call in the session's state file; when a checkpoint is due
  (:func:`agent_reflection.in_loop.cadence.should_inject_reflection`), print exactly one
  JSON document
  ``{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": <prompt>}}``
  and move the marker. Otherwise print nothing.
* ``PostToolUseFailure``: the same (a failed call is a tool call too), answering with
  ``"hookEventName": "PostToolUseFailure"``. A call reported by both events counts once.
* ``UserPromptSubmit``: a new task starts: reset count and marker to 0, remember the prompt as
  the task (shown verbatim in the next checkpoints), remove stale state files (also done on a
  session's first tool call). Prints nothing.
* any other event: nothing.

State: one small JSON file per session in the state directory (``$REFLECTION_STATE_DIR``, else
``$XDG_CACHE_HOME/agent-reflection``, else ``~/.cache/agent-reflection``).
Claude Code runs the hooks of parallel tool calls concurrently, so every update holds an
exclusive ``fcntl.flock`` on the session's lock file and replaces the state file atomically
(write a temporary file, then ``os.replace``). A ``tool_use_id`` already counted is ignored, so
a hook registered twice (user and project settings) counts each call once.

Cadence: ``--reflection-cadence N`` on the command line, else ``$REFLECTION_CADENCE``, else the
project's config (see :mod:`agent_reflection.in_loop.cadence_config`; re-read only when a config
file's size or mtime changes), else 7.

Contract: stdlib only (JSON through the C accelerator, see :mod:`._json_lite`), exits 0 on
every fault (diagnostics go to stderr, which Claude Code shows only in debug mode), stdout is
one JSON document or empty.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import sys
import time

from agent_reflection.hooks._entry import read_stdin, run_hook, warn
from agent_reflection.hooks._json_lite import dumps, loads
from agent_reflection.hooks.session_state import replace_file, session_key, state_dir
from agent_reflection.in_loop.cadence import (
    DEFAULT_CADENCE,
    reflection_prompt,
    should_inject_reflection,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

PROG = "reflect-cadence-hook"
CADENCE_ENV = "REFLECTION_CADENCE"
#: State files untouched for this long belong to finished sessions and are removed.
STALE_AFTER_SECONDS = 7 * 24 * 3600
#: Most recent ``tool_use_id`` values remembered for de-duplication.
SEEN_LIMIT = 64
#: Characters of the user's prompt kept as the task (the prompt shows at most 300).
TASK_STORE_LIMIT = 4000
STATE_VERSION = 1
#: Characters of a ``tool_use_id`` kept for de-duplication (real ids are ~30).
TOOL_USE_ID_LIMIT = 200
#: Largest state file read (a real one is a few kB).
MAX_STATE_BYTES = 1 << 20
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def fresh_state(task: str = "") -> dict[str, Any]:
    return {"version": STATE_VERSION, "count": 0, "last": 0, "task": task, "seen": [], "fired": []}


def read_state(path: str) -> dict[str, Any]:
    """The state at ``path``; a fresh one when missing or unreadable (never raises)."""
    try:
        state = loads(_read_regular(path, MAX_STATE_BYTES).decode("utf-8"))
    except (OSError, ValueError):
        return fresh_state()
    if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
        return fresh_state()
    for key in ("count", "last"):
        value = state.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return fresh_state(str(state.get("task") or ""))
    return state


def _read_regular(path: str, limit: int) -> bytes:
    """Up to ``limit`` bytes of the regular file ``path`` (no symlink, FIFO or device)."""
    fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        return os.read(fd, limit)
    finally:
        os.close(fd)


def write_state(path: str, state: dict[str, Any]) -> None:
    """Replace the state file atomically (readers see the old or the new file, never half).

    The temporary file is created exclusively and never through a symlink; ``os.replace``
    replaces whatever sits at ``path`` (a symlink there is replaced, not followed).
    """
    state["updated"] = time.time()
    replace_file(path, dumps(state).encode("utf-8"))


def _config_key(project_dir: str) -> list[Any]:
    key: list[Any] = [project_dir]
    for name in (".agent-reflection.toml", "pyproject.toml"):
        try:
            st = os.stat(os.path.join(project_dir, name))
        except (OSError, ValueError):
            key.append(None)
            continue
        if stat.S_ISREG(st.st_mode):
            key.append([st.st_mtime_ns, st.st_size])
        else:  # a FIFO or device would block (or never end) the config read
            _warn(f"{os.path.join(project_dir, name)} is not a regular file; ignored")
            key.append(None)
    return key


def configured_cadence(
    state: dict[str, Any], project_dir: str, cli_value: int | None, env: Mapping[str, str]
) -> int:
    """The cadence for this call. Config files are parsed only when they changed."""
    if cli_value is not None:
        return cli_value
    raw = env.get(CADENCE_ENV, "").strip()
    if raw:
        if raw.isdigit():
            return int(raw)
        _warn(f"${CADENCE_ENV}={raw!r} is not a whole number >= 0; using the config")
    key = _config_key(project_dir)
    cached = state.get("config")
    if isinstance(cached, dict) and cached.get("key") == key:
        value = cached.get("cadence")
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    cadence = DEFAULT_CADENCE
    if key[1] is not None or key[2] is not None:
        from agent_reflection.errors import ReflectionError
        from agent_reflection.in_loop.cadence_config import read_config_cadence

        try:
            found = read_config_cadence(project_dir)
        except ReflectionError as exc:
            _warn(f"{exc}; using {DEFAULT_CADENCE}")
        else:
            if found is not None:
                cadence = found.cadence
    state["config"] = {"key": key, "cadence": cadence}
    return cadence


class _Locked:
    """``with _Locked(path):`` holds an exclusive flock on ``path`` (created if needed)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = -1

    def __enter__(self) -> _Locked:
        flags = os.O_RDWR | os.O_CREAT | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC
        self.fd = os.open(self.path, flags, 0o600)
        try:
            if not stat.S_ISREG(os.fstat(self.fd).st_mode):
                raise OSError(errno.EINVAL, "not a regular file", self.path)
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(self.fd)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def on_post_tool_use(
    event: Mapping[str, Any], folder: str, cli_value: int | None, env: Mapping[str, str]
) -> str | None:
    """Count one tool call; the JSON to print when a checkpoint is due, else ``None``."""
    key = session_key(str(event.get("session_id") or "no-session"))
    path = os.path.join(folder, key + ".json")
    project_dir = env.get("CLAUDE_PROJECT_DIR") or str(event.get("cwd") or "") or os.getcwd()
    if len(project_dir) > 4096:  # longer than any real path (PATH_MAX): not a folder
        project_dir = os.getcwd()
    new_session = not os.path.exists(path)
    with _Locked(os.path.join(folder, key + ".lock")):
        state = read_state(path)
        tool_use_id = event.get("tool_use_id")
        if isinstance(tool_use_id, str):
            tool_use_id = tool_use_id[:TOOL_USE_ID_LIMIT]
        seen = _as_list(state.get("seen"))
        if isinstance(tool_use_id, str) and tool_use_id:
            if tool_use_id in seen:
                return None
            seen = [*seen, tool_use_id][-SEEN_LIMIT:]
        state["seen"] = seen
        state["count"] += 1
        cadence = configured_cadence(state, project_dir, cli_value, env)
        delta = should_inject_reflection(state["count"], state["last"], cadence)
        if delta is not None:
            state["last"] = state["count"]
            state["fired"] = [*_as_list(state.get("fired")), state["count"]][-100:]
        write_state(path, state)
    if new_session:  # sessions without the prompt hook still get their folder tidied
        remove_stale(folder, keep=key)
    if delta is None:
        return None
    prompt = reflection_prompt(delta, str(state.get("task") or ""))
    name = str(event.get("hook_event_name") or "PostToolUse")
    output = {"hookSpecificOutput": {"hookEventName": name, "additionalContext": prompt}}
    return dumps(output)


def on_user_prompt_submit(event: Mapping[str, Any], folder: str) -> None:
    """A new task: reset count and marker, remember the prompt, drop stale state files."""
    key = session_key(str(event.get("session_id") or "no-session"))
    path = os.path.join(folder, key + ".json")
    prompt = event.get("prompt")
    task = prompt[:TASK_STORE_LIMIT] if isinstance(prompt, str) else ""
    with _Locked(os.path.join(folder, key + ".lock")):
        old = read_state(path)
        state = fresh_state(task)
        if "config" in old:
            state["config"] = old["config"]
        write_state(path, state)
    remove_stale(folder, keep=key)


def remove_stale(folder: str, *, keep: str = "", now: float | None = None) -> int:
    """Delete state, lock and temporary files not touched for :data:`STALE_AFTER_SECONDS`."""
    limit = (time.time() if now is None else now) - STALE_AFTER_SECONDS
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        if entry.name.startswith(keep + ".") and keep:
            continue
        if not entry.name.endswith((".json", ".lock", ".tmp")):
            continue
        try:
            if entry.stat().st_mtime < limit:
                os.unlink(entry.path)
                removed += 1
        except OSError:
            continue
    return removed


def parse_cli_cadence(argv: list[str]) -> int | None:
    """``--reflection-cadence N`` / ``--reflection-cadence=N`` from the hook's command line."""
    for i, arg in enumerate(argv):
        value = None
        if arg == "--reflection-cadence" and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith("--reflection-cadence="):
            value = arg.split("=", 1)[1]
        if value is not None:
            if value.strip().isdigit():
                return int(value)
            _warn(f"--reflection-cadence {value!r} is not a whole number >= 0; ignored")
    return None


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
    return on_post_tool_use(event, folder, parse_cli_cadence(argv), env)


def _as_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _warn(message: str) -> None:
    warn(PROG, message)


def main() -> int:
    """Console-script entry point. Always returns 0."""
    return run_hook(PROG, _cadence)


def _cadence(argv: list[str]) -> str | None:
    out = handle(read_stdin(PROG), argv, os.environ)
    return None if out is None else out + "\n"


if __name__ == "__main__":
    sys.exit(main())
