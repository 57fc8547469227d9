"""Per-session state files outside the work tree: where they live and the session-start record.

The cadence hook keeps one ``<key>.json`` per session in :func:`state_dir`
(``$REFLECTION_STATE_DIR``, else ``$XDG_CACHE_HOME/agent-reflection``, else
``~/.cache/agent-reflection``). The ``SessionStart`` hook writes ``<key>.start.json`` beside it:
the session's starting HEAD, branch and work tree, read by the Stop hook for ``git.head_start``.
The cadence hook's clean-up removes either file once untouched for seven days.

Stdlib only and import-light: every hook start pays for what it imports.
"""

from __future__ import annotations

import os
import stat
import time
import zlib

from agent_reflection.hooks._json_lite import dumps, loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

STATE_DIR_ENV = "REFLECTION_STATE_DIR"
#: Version of the ``<key>.start.json`` file (readers ignore other versions).
START_VERSION = 1
START_SUFFIX = ".start.json"
#: Largest start file read (a real one is ~300 bytes).
MAX_START_BYTES = 64 << 10
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def state_dir(env: Mapping[str, str]) -> str:
    """The folder holding the per-session state files."""
    explicit = env.get(STATE_DIR_ENV)
    if explicit:
        return explicit
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
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


def start_path(env: Mapping[str, str], session_id: str) -> str:
    return os.path.join(state_dir(env), session_key(session_id) + START_SUFFIX)


def read_start(env: Mapping[str, str], session_id: str) -> dict[str, Any] | None:
    """The session's start record, or None when missing, unreadable or malformed."""
    try:
        fd = os.open(
            start_path(env, session_id), os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC
        )
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        state = loads(os.read(fd, MAX_START_BYTES).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    finally:
        os.close(fd)
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
    replace_file(path, dumps({**record, "version": START_VERSION, "written": time.time()}).encode())
    return path


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


def _unlink(path: str) -> None:
    try:  # noqa: SIM105 (contextlib would cost the hook its imports)
        os.unlink(path)
    except OSError:  # already gone
        pass
