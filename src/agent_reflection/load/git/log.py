"""The ``git log`` format this package reads, and an incremental parser of its output.

One ``git log -z --numstat -M`` pass writes, per commit, a header of NUL-separated fields
(:data:`LOG_FORMAT`), then — when the commit changes files — a newline and one NUL-terminated
numstat entry per file: ``added<TAB>deleted<TAB>path``, ``-<TAB>-<TAB>path`` for binary files,
and ``added<TAB>deleted<TAB>`` followed by ``old<NUL>new`` for renames. :class:`LogParser` is fed
the pipe's chunks as they arrive and hands back each commit once the next one starts, so memory
stays bounded however long the history is.

Pure: no processes here (see :mod:`agent_reflection.load.git.history` for running git).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

#: Marks the start of a commit header. Never a digit or ``-``, so it cannot be confused with a
#: numstat entry (which always starts with one) — paths and messages are consumed by position.
MARKER = "\x1e"

#: Header fields, in order (``--date=raw`` makes %ad/%cd ``<epoch> <+hhmm>``).
HEADER_FIELDS = (
    "sha",
    "parents",
    "author_name",
    "author_email",
    "author_date",
    "committer_name",
    "committer_email",
    "committer_date",
    "subject",
    "body",
)
_PLACEHOLDERS = ("%H", "%P", "%an", "%ae", "%ad", "%cn", "%ce", "%cd", "%s", "%b")
#: The ``--format=tformat:`` string (with ``-z`` git ends each header with a NUL).
LOG_FORMAT = "tformat:%x1e" + "%x00".join(_PLACEHOLDERS)

#: Flags shared by the loader and the benchmark's bare baseline run.
#: The ``--no-*`` flags keep user config (log.showSignature, diff drivers, textconv) from
#: changing the stream.
LOG_FLAGS = (
    "-z",
    "--numstat",
    "-M",
    "--date=raw",
    "--encoding=UTF-8",
    "--no-color",
    "--no-show-signature",
    "--no-textconv",
    "--no-ext-diff",
)

_N_HEADER = len(HEADER_FIELDS)


class FileChange(NamedTuple):
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


def lossy_text(raw: bytes) -> str:
    # git re-encodes messages that declare an encoding (--encoding=UTF-8); anything else that
    # is not UTF-8 (old Latin-1 commits without an encoding header) is decoded with U+FFFD.
    return raw.decode("utf-8", errors="replace")


def parse_date(raw: bytes) -> tuple[int, int]:
    """``b"1700000000 +0130"`` -> (epoch seconds, minutes east of UTC)."""
    raw = raw.strip()
    sign = raw[-5:-4]
    if raw[-6:-5] == b" " and sign in (b"+", b"-"):
        minutes = int(raw[-4:-2]) * 60 + int(raw[-2:])
        return int(raw[:-6]), -minutes if sign == b"-" else minutes
    return int(raw.partition(b" ")[0]), 0


def _commit(fields: list[bytes], files: list[FileChange]) -> ParsedCommit:
    sha = fields[0][1:].decode("ascii", errors="replace")
    if len(sha) not in (40, 64):
        raise MalformedLogOutput(f"expected a commit header, got {fields[0][:80]!r}")
    author_epoch, author_tz = parse_date(fields[4])
    committer_epoch, committer_tz = parse_date(fields[7])
    # git re-encodes messages that declare an encoding (--encoding=UTF-8); anything else that
    # is not UTF-8 (old Latin-1 commits without an encoding header) gets U+FFFD replacements.
    (_, parents, an, ae, _, cn, ce, _, subject, body) = (
        f.decode("utf-8", "replace") for f in fields
    )
    return ParsedCommit(
        sha,
        tuple(parents.split()),
        an,
        ae,
        author_epoch,
        author_tz,
        cn,
        ce,
        committer_epoch,
        committer_tz,
        subject,
        body,
        tuple(files),
    )


class LogParser:
    """Incremental parser: :meth:`feed` bytes, get the commits completed so far.

    A commit is complete when the next header starts or at :meth:`finish` (so after git
    failed part-way, the commit it was on is never handed out with a cut file list).
    """

    def __init__(self) -> None:
        self._rest = b""  # bytes after the last NUL
        self._carry: list[bytes] = []  # tokens of a header or rename entry not yet complete
        self._header: list[bytes] | None = None
        self._files: list[FileChange] = []

    def feed(self, chunk: bytes) -> list[ParsedCommit]:
        tokens = (self._rest + chunk).split(b"\0")
        self._rest = tokens.pop()
        if self._carry:
            tokens = self._carry + tokens
            self._carry = []
        done: list[ParsedCommit] = []
        i, n = 0, len(tokens)
        files = self._files
        while i < n:
            token = tokens[i]
            first = token[:1]
            if first == b"\x1e":
                if i + _N_HEADER > n:
                    self._carry = tokens[i:]
                    break
                if self._header is not None:
                    done.append(_commit(self._header, files))
                    files = self._files = []
                self._header = tokens[i : i + _N_HEADER]
                i += _N_HEADER
                continue
            if first == b"\n":
                token = token[1:]
            if not token:
                i += 1  # the terminator of a header without file entries
                continue
            if self._header is None:
                raise MalformedLogOutput(f"file entry before any commit header: {token[:80]!r}")
            parts = token.split(b"\t", 2)
            if len(parts) != 3:
                raise MalformedLogOutput(f"malformed numstat entry {token[:80]!r}")
            if parts[2]:
                files.append(_file_change(parts, parts[2], None))
                i += 1
            elif i + 3 > n:
                self._carry = tokens[i:]
                break
            else:  # a rename: old and new path follow as their own tokens
                files.append(_file_change(parts, tokens[i + 2], tokens[i + 1]))
                i += 3
        return done

    def finish(self) -> list[ParsedCommit]:
        """End of a clean stream: the last commit (a trailing partial record is an error)."""
        if self._rest.strip(b"\n") or self._carry:
            raise MalformedLogOutput(f"stream ended inside a record: {self._rest[:80]!r}")
        done = [_commit(self._header, self._files)] if self._header is not None else []
        self._header = None
        self._files = []
        return done


def _file_change(parts: list[bytes], path: bytes, old_path: bytes | None) -> FileChange:
    if parts[0] == b"-":
        return FileChange(
            lossy_text(path), None if old_path is None else lossy_text(old_path), None, None, True
        )
    return FileChange(
        lossy_text(path),
        None if old_path is None else lossy_text(old_path),
        int(parts[0]),
        int(parts[1]),
        False,
    )
