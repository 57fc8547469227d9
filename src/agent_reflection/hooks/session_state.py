"""Per-session state files outside the work tree: the one mechanism every hook shares.

Where they live: :func:`state_dir` (``$REFLECTION_STATE_DIR``, else
``$XDG_CACHE_HOME/agent-reflection``, else ``~/.cache/agent-reflection``), one file per session
named by :func:`session_key`:

* ``<key>.json`` (+ ``<key>.lock``): the in-loop hook's state, one part per job (the cadence
  checkpoint, the anti-loop detector), read and replaced under :class:`Locked`;
* ``<key>.start.json``: the ``SessionStart`` hook's record of the session's starting HEAD,
  branch and work tree, read by the Stop hook for ``git.head_start``.

How they are handled, once for all: regular files only, never through a symlink
(:func:`read_json`), atomic replace (:func:`replace_file`: readers see the old file or the new,
never half), an exclusive ``flock`` for read-modify-write (:class:`Locked`: Claude Code runs the
hooks of parallel tool calls at once), de-duplication of tool calls reported twice
(:func:`first_sighting`), and removal of files untouched for seven days (:func:`remove_stale`).

Stdlib only and import-light: every hook start pays for what it imports.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
import time
import zlib

from agent_reflection import config

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

#: Version of the ``<key>.start.json`` file (readers ignore other versions).
START_VERSION = 1
START_SUFFIX = ".start.json"
#: Largest start file read (a real one is ~300 bytes).
MAX_START_BYTES = 64 << 10
#: Largest state file read (a real one is a few kB).
MAX_STATE_BYTES = 1 << 20
#: State files untouched for this long belong to finished sessions and are removed.
STALE_AFTER_SECONDS = 7 * 24 * 3600
#: Most recent ``tool_use_id`` values remembered for de-duplication.
SEEN_LIMIT = 64
#: Characters of a ``tool_use_id`` kept for de-duplication (real ids are ~30).
TOOL_USE_ID_LIMIT = 200
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def state_dir(env: Mapping[str, str]) -> str:
    """The folder holding the per-session state files."""
    explicit = config.env_text(config.STATE_DIR, env)
    if explicit:
        return explicit
    base = config.env_text(config.XDG_CACHE_HOME, env) or os.path.join(
        os.path.expanduser("~"), ".cache"
    )
    return os.path.join(base, "agent-reflection")


def session_key(session_id: str) -> str:
    """``session_id`` made safe as a file name (a checksum keeps altered ids distinct).

    Cut to 80 characters before the per-character loop: a 10 MB id costs no more than a UUID.
    No ``.`` is kept, so ``<key>.json`` and ``<key>.start.json`` never collide across sessions.
    """
    safe = "".join(c if c in _SAFE else "_" for c in session_id[:80])
    if safe != session_id or not safe:
        safe = f"{safe}-{zlib.crc32(session_id.encode('utf-8', 'replace')):08x}"
    return safe


def read_regular(path: str, limit: int) -> bytes:
    """Up to ``limit`` bytes of the regular file ``path`` (no symlink, FIFO or device)."""
    fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        return os.read(fd, limit)
    finally:
        os.close(fd)


def read_json(path: str, limit: int = MAX_STATE_BYTES) -> Any:
    """The JSON document in the regular file ``path``; ``None`` when missing or unreadable."""
    try:
        return json.loads(read_regular(path, limit))
    except (OSError, ValueError, RecursionError):
        return None


def write_json(path: str, state: dict[str, Any]) -> None:
    """Stamp ``state["updated"]`` and replace ``path`` with it atomically (:func:`replace_file`)."""
    state["updated"] = time.time()
    replace_file(path, json.dumps(state, ensure_ascii=False).encode("utf-8"))


def replace_file(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically: readers see the old file or the new, never half.

    The temporary file is created exclusively and never through a symlink; ``os.replace``
    replaces whatever sits at ``path`` (a symlink there is replaced, not followed). On any
    failure the temporary file is removed.
    """
    tmp = f"{path}.{os.getpid()}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC
    try:
        fd = os.open(tmp, flags, 0o600)
    except FileExistsError:  # left by a killed run that had our pid
        os.unlink(tmp)
        fd = os.open(tmp, flags, 0o600)
    try:
        while data:
            data = data[os.write(fd, data) :]
    except BaseException:
        os.close(fd)
        _unlink(tmp)
        raise
    os.close(fd)
    try:
        os.replace(tmp, path)
    except OSError:
        _unlink(tmp)
        raise


class Locked:
    """``with Locked(path):`` holds an exclusive flock on ``path`` (created if needed; a
    regular file only, never through a symlink)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = -1

    def __enter__(self) -> Locked:
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


def first_sighting(state: dict[str, Any], tool_use_id: object) -> bool:
    """False when ``tool_use_id`` was already counted in ``state`` (a call reported by two
    events, or a hook registered twice); else remember it (the last :data:`SEEN_LIMIT`)."""
    seen = state.get("seen")
    seen = seen if isinstance(seen, list) else []
    if isinstance(tool_use_id, str) and tool_use_id:
        tool_use_id = tool_use_id[:TOOL_USE_ID_LIMIT]
        if tool_use_id in seen:
            return False
        seen = [*seen, tool_use_id][-SEEN_LIMIT:]
    state["seen"] = seen
    return True


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


# --- the session's start record (SessionStart writes it, the Stop hook reads it) --------------


def start_path(env: Mapping[str, str], session_id: str) -> str:
    return os.path.join(state_dir(env), session_key(session_id) + START_SUFFIX)


def read_start(env: Mapping[str, str], session_id: str) -> dict[str, Any] | None:
    """The session's start record, or None when missing, unreadable or malformed."""
    state = read_json(start_path(env, session_id), MAX_START_BYTES)
    if not isinstance(state, dict) or state.get("version") != START_VERSION:
        return None
    if state.get("session_id") != session_id or not isinstance(state.get("root"), str):
        return None
    return state


def write_start(env: Mapping[str, str], session_id: str, record: dict[str, Any]) -> str:
    """Write the start record atomically (temp file, then ``os.replace``); returns its path.

    The folder is created (mode 0700) when missing; the temp file is created exclusively and
    never through a symlink.
    """
    folder = state_dir(env)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    path = start_path(env, session_id)
    data = {**record, "version": START_VERSION, "written": time.time()}
    replace_file(path, json.dumps(data, ensure_ascii=False).encode("utf-8"))
    return path


def _unlink(path: str) -> None:
    try:  # noqa: SIM105 (contextlib would cost the hook its imports)
        os.unlink(path)
    except OSError:  # already gone
        pass
