"""File-system safety for the Stop hook: safe names, the lock sentinel, atomic no-follow writes.

The output folder is opened component by component below a trusted base (the git work tree's
root) with ``O_NOFOLLOW | O_DIRECTORY`` and created with ``mkdir`` relative to its parent: a
symlinked ``.reflection`` committed in a repository is refused, never followed, and no folder
named ``.git`` is entered. Only an explicit absolute ``REFLECTION_DIR`` outside the work tree is
taken as given (the user named it, symlinks and all).

Every file the hook creates is opened relative to an open descriptor of the output folder with
``O_CREAT | O_EXCL | O_NOFOLLOW``: a symlink planted where the lock, a temp file or a sidecar
goes is never followed (``O_EXCL`` fails on any existing name, symlink or not). Sidecars are
written to a hidden temp file, fsynced, then hard-linked to their final name (which fails
rather than replacing anything already there) — a reader never sees a partial sidecar.
"""

from __future__ import annotations

import errno
import os
import stat
import time

TYPE_CHECKING = False  # not imported from typing: the hook must not pay for typing at start
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType

#: Longest session id kept in a file name (a UUID is 36).
MAX_SESSION_CHARS = 64
#: Characters of a raw session id looked at when sanitising: it is cut first, so a 10 MB id
#: costs no more than a short one (longer runs collapse to one ``_`` anyway).
MAX_RAW_SESSION_CHARS = 4 * MAX_SESSION_CHARS
#: A lock older than this is left over from a killed run and is removed (seconds).
STALE_LOCK_SECONDS = 120.0
SIDECAR_SUFFIX = ".reflection.json"
#: The characters a session id keeps (``re`` is not imported: it costs every stop ~15 ms).
SAFE_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_NOFOLLOW = os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC


class LockHeld(Exception):
    """Another run holds this session's lock (or something sits at the lock path)."""


class UnsafePath(OSError):
    """A path the hook refuses to write through: a symlink, a non-folder, or inside ``.git``."""


def sanitise_session_id(raw: object) -> str:
    """A session id safe as part of a file name: ``[A-Za-z0-9._-]``, ≤ 64 chars, no leading dot.

    Any other run of characters (``/``, ``\\``, NUL, spaces, non-ASCII), and any ``..``, becomes
    one ``_``; a non-string, empty or all-dots id becomes ``unknown``.
    """
    if not isinstance(raw, str):
        return "unknown"
    raw = raw[:MAX_RAW_SESSION_CHARS]  # cut before the character loop, never after
    safe = _runs(raw, lambda ch: ch not in SAFE_CHARS, 1)
    safe = _runs(_runs(safe, ".".__eq__, 2), "_".__eq__, 2).lstrip(".")
    safe = safe[:MAX_SESSION_CHARS]
    return safe if safe.strip("._-") else "unknown"


def _runs(text: str, member: Callable[[str], bool], min_run: int) -> str:
    """``text`` with every run of at least ``min_run`` ``member`` characters replaced by ``_``."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        j = i
        while j < n and member(text[j]):
            j += 1
        if j - i >= min_run:
            out.append("_")
        elif j > i:
            out.append(text[i:j])
        else:
            out.append(text[i])
            j += 1
        i = j
    return "".join(out)


def utc_now() -> int:
    """Now, in nanoseconds since the epoch (``time`` is cheaper to import than ``datetime``)."""
    return time.time_ns()


def iso_timestamp(moment_ns: int) -> str:
    """``2026-01-31T12:00:00.123Z`` (reflection.v1's ``timestamp``)."""
    seconds, ms = divmod(moment_ns // 1_000_000, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{ms:03d}Z"


def file_stamp(moment_ns: int) -> str:
    """``20260131T120000.123Z``: sortable and free of ``:`` (valid on every file system)."""
    seconds, ms = divmod(moment_ns // 1_000_000, 1000)
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(seconds)) + f".{ms:03d}Z"


def sidecar_name(session: str, moment_ns: int, attempt: int = 0) -> str:
    extra = f"-{attempt}" if attempt else ""
    return f"{session}-{file_stamp(moment_ns)}{extra}{SIDECAR_SUFFIX}"


class OutputDir:
    """An open descriptor of the output folder; every create happens relative to it.

    A context manager closing the descriptor on exit. Plain classes rather than
    ``contextlib.contextmanager``: ``contextlib`` pulls in ``collections`` and ``functools``,
    which every agent stop would pay for.
    """

    __slots__ = ("fd", "path")

    def __init__(self, path: str, fd: int) -> None:
        self.path = path
        self.fd = fd

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
        return OutputDir(path, os.open(path, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC))
    fd = os.open(base, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    for i, part in enumerate(parts):  # each step closes the parent's descriptor, even on error
        fd = _open_child_dir(fd, part, base, parts[: i + 1], create=True)
    return OutputDir(path, fd)


def open_regular_for_read(path: str, base: str | None = None) -> int:
    """A read descriptor of the regular file ``path``; a FIFO or device is refused, not waited on.

    Inside ``base`` no symlink is followed on the way (as :func:`open_output_dir`); outside it
    the path is opened as given. ``O_NONBLOCK`` makes opening a FIFO return at once.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | _O_CLOEXEC
    if base is None or not (parts := below(base, path)):
        fd = os.open(path, flags)
    else:
        dir_fd = os.open(base, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
        for i, part in enumerate(parts[:-1]):  # each step closes the parent's descriptor
            dir_fd = _open_child_dir(dir_fd, part, base, parts[: i + 1], create=False)
        try:
            try:
                fd = os.open(parts[-1], flags | _O_NOFOLLOW, dir_fd=dir_fd)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise UnsafePath(errno.ELOOP, "a symlink, not followed", path) from None
                raise
        finally:
            os.close(dir_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
    except BaseException:
        os.close(fd)
        raise
    return fd


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
            try:  # noqa: SIM105 (contextlib would cost the hook its imports)
                os.mkdir(name, 0o777, dir_fd=parent_fd)
            except FileExistsError:
                pass
        try:
            return os.open(name, _DIR_NOFOLLOW, dir_fd=parent_fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise UnsafePath(
                    exc.errno, "a symlink or not a folder, not followed", where
                ) from None
            raise
    finally:
        os.close(parent_fd)


class SessionLock:
    """A held ``<session>.lock``; ``with`` it to remove it on every exit path."""

    __slots__ = ("name", "out")

    def __init__(self, out: OutputDir, name: str) -> None:
        self.out = out
        self.name = name

    def __enter__(self) -> str:
        return self.name

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        _unlink_quietly(self.out, self.name)


def session_lock(
    out: OutputDir, session: str, *, stale_after: float = STALE_LOCK_SECONDS
) -> SessionLock:
    """Take ``<session>.lock`` in the output folder; ``with`` the result to release it.

    Raises :class:`LockHeld` when the name exists (a run in progress, a planted symlink, ...),
    unless it is older than ``stale_after`` seconds: that is a lock a killed run left behind,
    and it is removed (never followed) and taken over.
    """
    name = f"{session}.lock"
    fd = _create_lock(out, name, stale_after)
    try:
        os.write(fd, f"{os.getpid()}\n".encode())
    finally:
        os.close(fd)
    return SessionLock(out, name)


def _create_lock(out: OutputDir, name: str, stale_after: float) -> int:
    try:
        return os.open(name, _CREATE, 0o600, dir_fd=out.fd)
    except FileExistsError:
        pass
    try:
        age = time.time() - os.stat(name, dir_fd=out.fd, follow_symlinks=False).st_mtime
    except FileNotFoundError:
        age = stale_after + 1  # released meanwhile: take it
    if age <= stale_after:
        raise LockHeld(f"{os.path.join(out.path, name)} exists (another run, {age:.0f}s old)")
    _unlink_quietly(out, name)
    try:
        return os.open(name, _CREATE, 0o600, dir_fd=out.fd)
    except FileExistsError:
        raise LockHeld(f"{os.path.join(out.path, name)} was re-created by another run") from None


def write_new_file(out: OutputDir, name: str, data: bytes, *, max_tries: int = 20) -> str:
    """Atomically create ``name`` (or ``<stem>-N<suffix>`` if taken) holding ``data``.

    Temp file + fsync + hard link, then the folder is fsynced. Returns the name written.
    Never replaces or follows anything already at the target name.
    """
    tmp = f".{name}.{os.getpid()}.{time.monotonic_ns()}.tmp"
    fd = os.open(tmp, _CREATE, 0o644, dir_fd=out.fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        final = _link_unique(out, tmp, name, max_tries)
    finally:
        _unlink_quietly(out, tmp)
    try:  # noqa: SIM105 (contextlib would cost the hook its imports)
        os.fsync(out.fd)
    except OSError:  # some file systems refuse fsync on a folder; the link is in place
        pass
    return final


def _link_unique(out: OutputDir, tmp: str, name: str, max_tries: int) -> str:
    stem, suffix = _split_suffix(name)
    for n in range(max_tries):
        target = name if n == 0 else f"{stem}-{n}{suffix}"
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


def _split_suffix(name: str) -> tuple[str, str]:
    if name.endswith(SIDECAR_SUFFIX):
        return name[: -len(SIDECAR_SUFFIX)], SIDECAR_SUFFIX
    stem, dot, ext = name.rpartition(".")
    return (stem, dot + ext) if dot else (name, "")


def read_marker(out: OutputDir, name: str) -> int | None:
    """The integer in marker file ``name`` (no symlink followed), or None if absent/unreadable."""
    try:
        fd = os.open(name, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=out.fd)
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
        fd = os.open(name, _CREATE, 0o600, dir_fd=out.fd)
    except OSError:
        return False
    try:
        os.write(fd, f"{value}\n".encode())
    finally:
        os.close(fd)
    return True


def remove_marker(out: OutputDir, name: str) -> None:
    _unlink_quietly(out, name)


def _unlink_quietly(out: OutputDir, name: str) -> None:
    try:  # noqa: SIM105 (contextlib would cost the hook its imports)
        os.unlink(name, dir_fd=out.fd)
    except OSError:  # already gone, or the folder became unwritable
        pass
