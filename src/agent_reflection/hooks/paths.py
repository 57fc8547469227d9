"""The hooks' files, in one place: where they go and how they are read and written safely.

**The output folder** of the Stop hook's sidecars is inside the git work tree
(``.reflection/sidecars``) or an explicit ``REFLECTION_DIR``. It is opened component by
component below a trusted base (the work tree's root) with ``O_NOFOLLOW | O_DIRECTORY`` and
created with ``mkdir`` relative to its parent: a symlinked ``.reflection`` committed in a
repository is refused, never followed, and no folder named ``.git`` is entered. Only an explicit
absolute ``REFLECTION_DIR`` outside the work tree is taken as given (the user named it, symlinks
and all). Every file the hook creates there is opened relative to an open descriptor of the
folder with ``O_CREAT | O_EXCL | O_NOFOLLOW``: a symlink planted where the lock, a temp file or
a sidecar goes is never followed (``O_EXCL`` fails on any existing name, symlink or not).
Sidecars are written to a hidden temp file, fsynced, then hard-linked to their final name (which
fails rather than replacing anything already there) — a reader never sees a partial sidecar.

**The state folder** is outside the work tree (:func:`state_dir`: ``$REFLECTION_STATE_DIR``,
else ``$XDG_CACHE_HOME/agent-reflection``, else ``~/.cache/agent-reflection``), one file per
session named by :func:`session_key`:

* ``<key>.json`` (+ ``<key>.lock``): the in-loop hook's state, one part per job (the cadence
  checkpoint, the anti-loop detector), read and replaced under :class:`Locked`;
* ``<key>.start.json``: the ``SessionStart`` hook's record of the session's starting HEAD,
  branch and work tree, read by the Stop hook for ``git.head_start``.

Its files are regular files only, never read or written through a symlink
(:func:`open_regular`), replaced atomically (:func:`replace_file`: readers see the old file or
the new, never half), and removed when untouched for seven days (:func:`remove_stale`).

**Two locks, on purpose.** A second Stop hook for the same session skips: the
``<session>.lock`` sentinel in the output folder (:func:`session_lock`; one a killed run left
behind is taken over after two minutes). Parallel tool calls wait their turn: an exclusive
``flock`` on the session's state (:class:`Locked`), because Claude Code runs the hooks of
parallel tool calls at once and every call must be counted.

Stdlib only and import-light: every hook start pays for what it imports.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import stat
import time
import zlib
from collections import namedtuple

from agent_reflection import config

TYPE_CHECKING = False  # not imported from typing: the hooks must not pay for typing at start
if TYPE_CHECKING:
    from collections.abc import Mapping
    from types import TracebackType
    from typing import Any

#: Longest session id kept in a file name (a UUID is 36).
MAX_SESSION_CHARS = 64
#: Characters of a raw session id looked at when sanitising: it is cut first, so a 10 MB id
#: costs no more than a short one (longer runs collapse to one ``_`` anyway).
MAX_RAW_SESSION_CHARS = 4 * MAX_SESSION_CHARS
#: A lock older than this is left over from a killed run and is removed (seconds).
STALE_LOCK_SECONDS = 120.0
SIDECAR_SUFFIX = ".reflection.json"
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
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class LockHeld(Exception):
    """Another run holds this session's lock (or something sits at the lock path)."""


class UnsafePath(OSError):
    """A path the hook refuses to write through: a symlink, a non-folder, or inside ``.git``."""


# --- names and stamps -------------------------------------------------------------------------


def sanitise_session_id(raw: object) -> str:
    """A session id safe as part of a file name: ``[A-Za-z0-9._-]``, ≤ 64 chars, no leading dot.

    Any other run of characters (``/``, ``\\``, NUL, spaces, non-ASCII), and any ``..``, becomes
    one ``_``; a non-string, empty or all-dots id becomes ``unknown``.
    """
    if not isinstance(raw, str):
        return "unknown"
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", raw[:MAX_RAW_SESSION_CHARS])  # cut first
    safe = re.sub(r"_{2,}", "_", re.sub(r"\.{2,}", "_", safe)).lstrip(".")[:MAX_SESSION_CHARS]
    return safe if safe.strip("._-") else "unknown"


def session_key(session_id: str) -> str:
    """``session_id`` made safe as a state file's name (a checksum keeps altered ids distinct).

    Cut to 80 characters first: a 10 MB id costs no more than a UUID. No ``.`` is kept, so
    ``<key>.json`` and ``<key>.start.json`` never collide across sessions.
    """
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", session_id[:80])
    if safe != session_id or not safe:
        safe = f"{safe}-{zlib.crc32(session_id.encode('utf-8', 'replace')):08x}"
    return safe


def iso_timestamp(moment_ns: int) -> str:
    """``2026-01-31T12:00:00.123Z`` (reflection.v1's ``timestamp``)."""
    seconds, ms = divmod(moment_ns // 1_000_000, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{ms:03d}Z"


def file_stamp(moment_ns: int) -> str:
    """``20260131T120000.123Z``: :func:`iso_timestamp` without ``-`` and ``:`` (sortable, and
    valid on every file system)."""
    return iso_timestamp(moment_ns).replace("-", "").replace(":", "")


def sidecar_name(session: str, moment_ns: int, attempt: int = 0) -> str:
    extra = f"-{attempt}" if attempt else ""
    return f"{session}-{file_stamp(moment_ns)}{extra}{SIDECAR_SUFFIX}"


# --- reading and writing one file -------------------------------------------------------------


def open_regular(
    path: str, flags: int = os.O_RDONLY, *, dir_fd: int | None = None, follow: bool = False
) -> int:
    """A descriptor of the regular file ``path`` (created with mode 0600 if ``flags`` say so).

    A symlink in its last component is not followed (unless ``follow``), and a FIFO or device
    is refused with ``OSError`` at once instead of blocking or never ending (``O_NONBLOCK``).
    """
    extra = os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    fd = os.open(path, flags | extra, 0o600, dir_fd=dir_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_at(fd: int, limit: int, offset: int = 0) -> bytes:
    """Up to ``limit`` bytes of ``fd`` from ``offset`` (fewer at the end of the file)."""
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = os.pread(fd, limit - size, offset + size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def read_regular(path: str, limit: int, base: str | None = None) -> bytes:
    """Up to ``limit`` bytes of the regular file ``path`` (:func:`open_regular`).

    Inside ``base`` no symlink is followed on the way (as :func:`open_output_dir`); a path
    outside ``base`` (the user named it) is opened as given. Without ``base`` only the last
    component is not followed.
    """
    if base is None or not (parts := below(base, path)):
        fd = open_regular(path, follow=base is not None)
    else:
        dir_fd = os.open(base, _DIR)
        for i, part in enumerate(parts[:-1]):  # each step closes the parent's descriptor
            dir_fd = _open_child_dir(dir_fd, part, base, parts[: i + 1], create=False)
        try:
            fd = open_regular(parts[-1], dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UnsafePath(errno.ELOOP, "a symlink, not followed", path) from None
            raise
        finally:
            os.close(dir_fd)
    try:
        return read_at(fd, limit)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def unlink_quietly(name: str, dir_fd: int | None = None) -> None:
    try:  # noqa: SIM105 (contextlib would cost the in-loop hook its import on every call)
        os.unlink(name, dir_fd=dir_fd)
    except OSError:  # already gone, or the folder became unwritable
        pass


# --- the output folder ------------------------------------------------------------------------


class OutputDir(namedtuple("OutputDir", ("path", "fd"))):
    """An open descriptor of the output folder; every create happens relative to it.

    A context manager closing the descriptor on exit.
    """

    __slots__ = ()
    path: str
    fd: int

    def __enter__(self) -> OutputDir:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        os.close(self.fd)


def open_output_dir(path: str, base: str | None = None) -> OutputDir:
    """Open (creating as needed) the output folder ``path``; ``with`` the result.

    With ``base`` (the work tree's root) and ``path`` inside it, every folder below ``base`` is
    made and opened relative to its parent's descriptor with ``O_NOFOLLOW``: a symlink or a
    non-folder anywhere on that chain, or a component named ``.git``, raises
    :class:`UnsafePath` and nothing is created past it. Otherwise (an explicit absolute
    ``REFLECTION_DIR`` outside the work tree) the path is made and opened as given.
    """
    if base is None or (parts := below(base, path)) is None:
        os.makedirs(path, exist_ok=True)
        return OutputDir(path, os.open(path, _DIR))
    fd = os.open(base, _DIR)
    for i, part in enumerate(parts):  # each step closes the parent's descriptor, even on error
        fd = _open_child_dir(fd, part, base, parts[: i + 1], create=True)
    return OutputDir(path, fd)


def below(base: str, path: str) -> list[str] | None:
    """The components of ``path`` below ``base`` (lexically, both absolute); None if outside."""
    base = os.path.normpath(base)
    path = os.path.normpath(path)
    if path == base:
        return []
    prefix = base if base.endswith(os.sep) else base + os.sep
    if not path.startswith(prefix):
        return None
    return [part for part in path[len(prefix) :].split(os.sep) if part]


def _open_child_dir(parent_fd: int, name: str, base: str, chain: list[str], *, create: bool) -> int:
    """Open folder ``name`` in ``parent_fd`` without following a symlink; closes ``parent_fd``."""
    where = os.path.join(base, *chain)
    try:
        if name.lower() == ".git":  # never write into (or read the hook's files from) .git
            raise UnsafePath(errno.EPERM, "inside .git, refused", where)
        if create:
            try:  # noqa: SIM105 (contextlib would cost the in-loop hook its import)
                os.mkdir(name, 0o777, dir_fd=parent_fd)
            except FileExistsError:
                pass
        try:
            return os.open(name, _DIR | os.O_NOFOLLOW, dir_fd=parent_fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise UnsafePath(
                    exc.errno, "a symlink or not a folder, not followed", where
                ) from None
            raise
    finally:
        os.close(parent_fd)


class SessionLock(namedtuple("SessionLock", ("out", "name"))):
    """A held ``<session>.lock``; ``with`` it to remove it on every exit path."""

    __slots__ = ()
    out: OutputDir
    name: str

    def __enter__(self) -> str:
        return self.name

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        unlink_quietly(self.name, self.out.fd)


def session_lock(out: OutputDir, session: str) -> SessionLock:
    """Take ``<session>.lock`` in the output folder; ``with`` the result to release it.

    Raises :class:`LockHeld` when the name exists (a run in progress, a planted symlink, ...),
    unless it is older than :data:`STALE_LOCK_SECONDS`: that is a lock a killed run left
    behind, and it is removed (never followed) and taken over.
    """
    name = f"{session}.lock"
    data = f"{os.getpid()}\n".encode()
    if create_file(name, data, out.fd):
        return SessionLock(out, name)
    try:
        age = time.time() - os.stat(name, dir_fd=out.fd, follow_symlinks=False).st_mtime
    except FileNotFoundError:
        age = STALE_LOCK_SECONDS + 1  # released meanwhile: take it
    if age <= STALE_LOCK_SECONDS:
        raise LockHeld(f"{os.path.join(out.path, name)} exists (another run, {age:.0f}s old)")
    unlink_quietly(name, out.fd)
    if not create_file(name, data, out.fd):
        raise LockHeld(f"{os.path.join(out.path, name)} was re-created by another run")
    return SessionLock(out, name)


def create_file(name: str, data: bytes, dir_fd: int | None = None) -> bool:
    """Create ``name`` (relative to ``dir_fd``) holding ``data``; False if the name exists.

    Never through a symlink: ``O_EXCL`` fails on any existing name.
    """
    try:
        fd = os.open(name, _CREATE, 0o600, dir_fd=dir_fd)
    except FileExistsError:
        return False
    try:
        write_all(fd, data)
    finally:
        os.close(fd)
    return True


def write_new_file(out: OutputDir, name: str, data: bytes, *, max_tries: int = 20) -> str:
    """Atomically create sidecar ``name`` (or ``<stem>-N.reflection.json`` if taken) holding
    ``data``.

    Temp file + fsync + hard link, then the folder is fsynced. Returns the name written.
    Never replaces or follows anything already at the target name.
    """
    tmp = f".{name}.{os.getpid()}.{time.monotonic_ns()}.tmp"
    fd = os.open(tmp, _CREATE, 0o644, dir_fd=out.fd)
    try:
        try:
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        final = _link_unique(out, tmp, name, max_tries)
    finally:
        unlink_quietly(tmp, out.fd)
    try:  # noqa: SIM105 (contextlib would cost the in-loop hook its import)
        os.fsync(out.fd)
    except OSError:  # some file systems refuse fsync on a folder; the link is in place
        pass
    return final


def _link_unique(out: OutputDir, tmp: str, name: str, max_tries: int) -> str:
    stem = name.removesuffix(SIDECAR_SUFFIX)
    for n in range(max_tries):
        target = name if n == 0 else f"{stem}-{n}{SIDECAR_SUFFIX}"
        try:
            os.link(tmp, target, src_dir_fd=out.fd, dst_dir_fd=out.fd, follow_symlinks=False)
            return target
        except FileExistsError:
            continue
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS):
                raise
            # No hard links here (some FUSE / network file systems): rename, after checking
            # the name is free (a small race, but rename never follows a symlink either).
            try:
                os.stat(target, dir_fd=out.fd, follow_symlinks=False)
                continue
            except FileNotFoundError:
                os.rename(tmp, target, src_dir_fd=out.fd, dst_dir_fd=out.fd)
                return target
    raise FileExistsError(errno.EEXIST, f"no free name for {name} in {out.path}")


def read_marker(out: OutputDir, name: str) -> int | None:
    """The integer in marker file ``name`` (no symlink followed), or None if absent/unreadable."""
    try:
        fd = open_regular(name, dir_fd=out.fd)
    except OSError:
        return None
    try:
        text = os.read(fd, 64).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    return int(text) if text.isdigit() else 1


def create_marker(out: OutputDir, name: str, value: int) -> bool:
    """Create marker ``name`` holding ``value``; False if it exists or cannot be made."""
    try:
        return create_file(name, f"{value}\n".encode(), out.fd)
    except OSError:
        return False


# --- the state folder -------------------------------------------------------------------------


def state_dir(env: Mapping[str, str]) -> str:
    """The folder holding the per-session state files."""
    explicit = config.env_text(config.STATE_DIR, env)
    if explicit:
        return explicit
    base = config.env_text(config.XDG_CACHE_HOME, env) or os.path.join(
        os.path.expanduser("~"), ".cache"
    )
    return os.path.join(base, "agent-reflection")


def read_json(path: str, limit: int = MAX_STATE_BYTES) -> Any:
    """The JSON document in the regular file ``path``; ``None`` when missing or unreadable."""
    try:
        return json.loads(read_regular(path, limit))
    except (OSError, ValueError, RecursionError):
        return None


def write_json(path: str, state: dict[str, Any]) -> None:
    """Stamp ``state["updated"]`` and replace ``path`` with it atomically (:func:`replace_file`).
    ASCII with escapes: a work tree's or branch's name that is not UTF-8 (``os.fsdecode``d)
    reads back as it was written."""
    state["updated"] = time.time()
    replace_file(path, json.dumps(state).encode("ascii"))


def replace_file(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically: readers see the old file or the new, never half.

    The temporary file is created exclusively and never through a symlink; ``os.replace``
    replaces whatever sits at ``path`` (a symlink there is replaced, not followed). On any
    failure the temporary file is removed.
    """
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, _CREATE, 0o600)
    except FileExistsError:  # left by a killed run that had our pid
        os.unlink(tmp)
        fd = os.open(tmp, _CREATE, 0o600)
    try:
        try:
            write_all(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        unlink_quietly(tmp)
        raise


class Locked:
    """``with Locked(path):`` holds an exclusive flock on ``path`` (created if needed; a
    regular file only, never through a symlink)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = -1

    def __enter__(self) -> Locked:
        self.fd = open_regular(self.path, os.O_RDWR | os.O_CREAT)
        try:
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


def remove_stale(folder: str, *, keep: str = "") -> int:
    """Delete state, lock and temporary files not touched for :data:`STALE_AFTER_SECONDS`."""
    limit = time.time() - STALE_AFTER_SECONDS
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
    """Write the start record by :func:`write_json`; returns its path.

    The folder is created (mode 0700) when missing.
    """
    os.makedirs(state_dir(env), mode=0o700, exist_ok=True)
    path = start_path(env, session_id)
    write_json(path, {**record, "version": START_VERSION})
    return path
