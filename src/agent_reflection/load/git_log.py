"""The ``git log`` format this package reads, and an incremental parser of its output.

One ``git log -z --numstat -M`` pass writes, per commit, a header of NUL-separated fields
(:data:`LOG_FORMAT`), then — when the commit changes files — a newline and one NUL-terminated
numstat entry per file: ``added<TAB>deleted<TAB>path``, ``-<TAB>-<TAB>path`` for binary files,
and ``added<TAB>deleted<TAB>`` followed by ``old<NUL>new`` for renames. :class:`LogParser` is fed
the pipe's chunks as they arrive and hands back each commit once the next one starts, so memory
stays bounded however long the history is.

Pure: no processes here (see :mod:`agent_reflection.load.git` for running git).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

#: Marks the start of a commit header. Never a digit or ``-``, so it cannot be confused with a
#: numstat entry (which always starts with one) — paths and messages are consumed by position.
MARKER = "\x1e"

#: Header fields, in order (``--date=raw`` makes %ad/%cd ``<epoch> <+hhmm>``).
HEADER_FIELDS = (
    "sha", "parents", "author_name", "author_email", "author_date",
    "committer_name", "committer_email", "committer_date", "subject", "body",
)  # fmt: skip
_PLACEHOLDERS = ("%H", "%P", "%an", "%ae", "%ad", "%cn", "%ce", "%cd", "%s", "%b")
#: The ``--format=tformat:`` string (with ``-z`` git ends each header with a NUL).
LOG_FORMAT = "tformat:%x1e" + "%x00".join(_PLACEHOLDERS)

#: Flags shared by the loader and the benchmark's bare baseline run.
LOG_FLAGS = ("-z", "--numstat", "-M", "--date=raw", "--encoding=UTF-8", "--no-color")

_N_HEADER = len(HEADER_FIELDS)


@dataclass(frozen=True)
class FileChange:
    """One numstat entry. ``added``/``deleted`` are None for binary files."""

    path: str
    old_path: str | None
    added: int | None
    deleted: int | None
    binary: bool


@dataclass(frozen=True)
class ParsedCommit:
    """One commit as ``git log`` printed it (text decoded, time zones kept)."""

    sha: str
    parents: tuple[str, ...]
    author_name: str
    author_email: str
    author_epoch: int
    author_tz_minutes: int
    committer_name: str
    committer_email: str
    committer_epoch: int
    committer_tz_minutes: int
    subject: str
    body: str
    files: tuple[FileChange, ...]


class MalformedLogOutput(ValueError):
    """The stream did not follow :data:`LOG_FORMAT` (a NUL inside a message, or not git)."""


def _text(raw: bytes) -> str:
    # git re-encodes messages that declare an encoding (--encoding=UTF-8); anything else that
    # is not UTF-8 (old Latin-1 commits without an encoding header) is decoded with U+FFFD.
    return raw.decode("utf-8", errors="replace")


def parse_date(raw: bytes) -> tuple[int, int]:
    """``b"1700000000 +0130"`` -> (epoch seconds, minutes east of UTC)."""
    epoch, _, tz = raw.strip().partition(b" ")
    minutes = 0
    if len(tz) == 5 and tz[:1] in b"+-":
        minutes = int(tz[1:3]) * 60 + int(tz[3:5])
        if tz[:1] == b"-":
            minutes = -minutes
    return int(epoch), minutes


def _header(fields: Sequence[bytes]) -> dict[str, object]:
    sha = fields[0][1:].decode("ascii", errors="replace")
    if len(sha) not in (40, 64) or MARKER.encode() != fields[0][:1]:
        raise MalformedLogOutput(f"expected a commit header, got {fields[0][:80]!r}")
    author_epoch, author_tz = parse_date(fields[4])
    committer_epoch, committer_tz = parse_date(fields[7])
    return {
        "sha": sha,
        "parents": tuple(fields[1].decode("ascii").split()),
        "author_name": _text(fields[2]),
        "author_email": _text(fields[3]),
        "author_epoch": author_epoch,
        "author_tz_minutes": author_tz,
        "committer_name": _text(fields[5]),
        "committer_email": _text(fields[6]),
        "committer_epoch": committer_epoch,
        "committer_tz_minutes": committer_tz,
        "subject": _text(fields[8]),
        "body": _text(fields[9]),
    }


class LogParser:
    """Incremental parser: :meth:`feed` bytes, get the commits completed so far.

    A commit is complete when the next header starts or at :meth:`finish`. After git failed
    part-way, :meth:`pending_sha` names the commit whose file list may be cut short.
    """

    def __init__(self) -> None:
        self._rest = b""
        self._header: list[bytes] = []
        self._current: dict[str, object] | None = None
        self._files: list[FileChange] = []
        self._rename: list[bytes] | None = None  # numstat entry awaiting old/new paths
        self._rename_paths: list[bytes] = []

    def feed(self, chunk: bytes) -> list[ParsedCommit]:
        tokens = (self._rest + chunk).split(b"\0")
        self._rest = tokens.pop()
        done: list[ParsedCommit] = []
        for token in tokens:
            self._token(token, done)
        return done

    def finish(self) -> list[ParsedCommit]:
        """End of a clean stream: the last commit (a trailing partial token is an error)."""
        if self._rest.strip(b"\n"):
            raise MalformedLogOutput(f"stream ended inside a record: {self._rest[:80]!r}")
        if self._header or self._rename is not None:
            raise MalformedLogOutput("stream ended inside a commit header or a rename entry")
        done: list[ParsedCommit] = []
        self._close(done)
        return done

    def pending_sha(self) -> str | None:
        return str(self._current["sha"]) if self._current is not None else None

    def _token(self, token: bytes, done: list[ParsedCommit]) -> None:
        if self._header:
            self._header.append(token)
            if len(self._header) == _N_HEADER:
                self._current = _header(self._header)
                self._header = []
            return
        if self._rename is not None:
            self._rename_paths.append(token)
            if len(self._rename_paths) == 2:
                self._add_file(self._rename, self._rename_paths[1], self._rename_paths[0])
                self._rename = None
                self._rename_paths = []
            return
        if token[:1] == b"\n":
            token = token[1:]
        if not token:
            return  # the header terminator of a commit without numstat
        if token[:1] == b"\x1e":
            self._close(done)
            self._header = [token]
            return
        if self._current is None:
            raise MalformedLogOutput(f"file entry before any commit header: {token[:80]!r}")
        parts = token.split(b"\t", 2)
        if len(parts) != 3:
            raise MalformedLogOutput(f"malformed numstat entry {token[:80]!r}")
        if parts[2]:
            self._add_file(parts, parts[2], None)
        else:
            self._rename = parts

    def _add_file(self, parts: list[bytes], path: bytes, old_path: bytes | None) -> None:
        self._files.append(_file_change(parts, path, old_path))

    def _close(self, done: list[ParsedCommit]) -> None:
        if self._current is not None:
            done.append(ParsedCommit(**self._current, files=tuple(self._files)))  # type: ignore[arg-type]
        self._current = None
        self._files = []


def _file_change(parts: list[bytes], path: bytes, old_path: bytes | None) -> FileChange:
    binary = parts[0] == b"-"
    return FileChange(
        path=_text(path),
        old_path=_text(old_path) if old_path is not None else None,
        added=None if binary else int(parts[0]),
        deleted=None if binary else int(parts[1]),
        binary=binary,
    )
