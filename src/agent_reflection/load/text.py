"""Decoding text inputs: byte-order marks, UTF-16/32, CRLF, and files that are not UTF-8.

Every loader that reads text decodes it here, so all of them follow one rule:

1. a byte-order mark decides (UTF-8, UTF-16 LE/BE, UTF-32 LE/BE) and is dropped;
2. else ``--encoding NAME`` when given, strictly: a byte that does not decode is one
   :class:`UndecodableText` naming the file, line and byte offset, and what to pass;
3. else NUL bytes in the pattern of UTF-16/32 text without a mark (``a\\0b\\0``) decide;
4. else UTF-8 (also after a UTF-8 mark), where each byte that is not UTF-8 is read as
   Windows-1252 (Latin-1 for the five bytes cp1252 leaves undefined), so Latin-1 and
   Windows-1252 exports load as they are. How many bytes, and the first place, are kept
   (:class:`Fallback`) for the load to report.

UTF-16/32 text that does not decode (a lone surrogate, a cut code unit) is damage: one
:class:`UndecodableText` naming the line.

Line ends: lines keep their ``\\r\\n`` (the ``csv`` module wants them); JSON parsing ignores
a trailing ``\\r``. A line over :data:`MAX_LINE_BYTES` is no record: it is read through in
chunks, never held whole, and comes back as a :class:`LongLine` for the loader to reject.
"""

from __future__ import annotations

import codecs
import gzip
import io
import re
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, cast

from agent_reflection.errors import ReflectionError

#: Longest line read as a record (a transcript line holding an image is a few MB).
MAX_LINE_BYTES = 32 << 20
#: Bytes looked at to tell UTF-16/32 without a mark from binary data.
SNIFF_BYTES = 8192
#: What bytes that are not UTF-8 are read as when no ``--encoding`` is given.
FALLBACK = "cp1252"
#: Exceptions meaning the bytes stop being readable (a corrupt or truncated ``.gz``).
READ_ERRORS = (OSError, EOFError, zlib.error)

_BOMS = (  # longest first: the UTF-32 LE mark starts with the UTF-16 LE one
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_CHUNK = 1 << 16
_ESCAPED = re.compile("[\udc80-\udcff]")


def _byte_as_text(byte: int) -> str:
    one = bytes([byte])
    try:
        return one.decode(FALLBACK)
    except UnicodeDecodeError:
        return one.decode("latin-1")


#: surrogateescape's lone surrogate for a byte -> that byte read as Windows-1252/Latin-1.
_UNESCAPE = {0xDC00 + b: _byte_as_text(b) for b in range(0x80, 0x100)}


class UndecodableText(ReflectionError, ValueError):
    """A file's bytes are not text in the encoding it was read with."""


class UnknownEncoding(ReflectionError, ValueError):
    """``--encoding`` names no codec Python knows."""


@dataclass(frozen=True)
class Encoding:
    """How a file is decoded: the codec, the mark's length, and what decided it."""

    codec: str
    bom_bytes: int
    decided_by: str  # byte-order mark | NUL pattern | --encoding | default

    @property
    def is_wide(self) -> bool:
        """UTF-16/32: lines cannot be split on the byte ``\\n``."""
        return self.codec.startswith(("utf-16", "utf-32"))

    @property
    def strict(self) -> bool:
        """Undecodable bytes are an error (else: read as Windows-1252)."""
        return self.decided_by == "--encoding" or self.is_wide


@dataclass(frozen=True)
class Fallback:
    """Bytes that were not UTF-8 and were read as :data:`FALLBACK`."""

    bytes: int
    lines: int
    first_line: int
    first_offset: int

    def note(self, path: Path | str) -> str:
        """One line for the user: what was done and how to choose otherwise."""
        return (
            f"{path}: {self.bytes:,} byte(s) on {self.lines:,} line(s) are not UTF-8 (first at "
            f"line {self.first_line}, byte offset {self.first_offset}); read them as "
            "Windows-1252/Latin-1. If the file is in another encoding, pass --encoding NAME"
        )


@dataclass(frozen=True)
class LongLine:
    """A line longer than :data:`MAX_LINE_BYTES`: read through, not kept."""

    bytes: int
    head: str

    def reason(self) -> str:
        return (
            f"line of {self.bytes:,} bytes is over the {MAX_LINE_BYTES >> 20} MiB limit for one "
            "record (a file without line breaks, or binary data?); skipped"
        )


def csv_lines(
    source: Iterable[tuple[int, str | LongLine]], long_lines: list[tuple[int, LongLine]]
) -> Iterator[str]:
    """The lines of ``source`` as :mod:`csv` reads them. A line too long to hold becomes a blank
    line, which keeps csv's line numbers right, and is appended to ``long_lines`` (its number
    and head) for the caller to reject."""
    for number, line in source:
        if isinstance(line, LongLine):
            long_lines.append((number, line))
            yield "\n"
        else:
            yield line


def check_encoding(name: str | None) -> str | None:
    """``name`` as Python's codec name (``latin1`` -> ``iso8859-1``); None for auto/absent."""
    if name is None or name.strip().lower() in ("", "auto"):
        return None
    try:
        return codecs.lookup(name.strip()).name
    except LookupError:
        raise UnknownEncoding(
            f"--encoding {name!r}: not an encoding Python knows; e.g. utf-8, utf-16, latin-1, "
            "cp1252 (or leave it out to detect)"
        ) from None


def detect(head: bytes, requested: str | None = None) -> Encoding:
    """The encoding of a file whose first bytes are ``head`` (the module docstring's rule)."""
    for bom, codec in _BOMS:
        if head.startswith(bom):
            return Encoding(codec, len(bom), "byte-order mark")
    chosen = check_encoding(requested)
    if chosen is not None:
        return Encoding(chosen, 0, "--encoding")
    wide = _nul_pattern(head[:SNIFF_BYTES])
    if wide is not None:
        return Encoding(wide, 0, "NUL pattern")
    return Encoding("utf-8", 0, "default")


def _nul_pattern(head: bytes) -> str | None:
    """UTF-16/32 without a mark: mostly-ASCII text has its NULs at fixed places in each unit."""
    n = len(head) - len(head) % 4
    if n < 8 or b"\x00" not in head:
        return None
    share = [head[i:n:4].count(0) / (n // 4) for i in range(4)]
    if min(share[1:]) > 0.9 and share[0] < 0.5:
        return "utf-32-le"
    if min(share[:3]) > 0.9 and share[3] < 0.5:
        return "utf-32-be"
    even, odd = (share[0] + share[2]) / 2, (share[1] + share[3]) / 2
    if odd > 0.9 and even < 0.5:
        return "utf-16-le"
    if even > 0.9 and odd < 0.5:
        return "utf-16-be"
    return None


def is_binary(head: bytes, encoding: Encoding) -> bool:
    """NUL bytes in text that is not UTF-16/32: a binary file, not an export."""
    return not encoding.is_wide and b"\x00" in head[:SNIFF_BYTES]


def open_bytes(path: Path) -> io.BufferedIOBase:
    """The file's bytes, decompressed when its name ends in ``.gz``."""
    if path.name.endswith(".gz"):
        return gzip.GzipFile(path, "rb")
    return path.open("rb")


def undecodable(
    path: Path | str, enc: Encoding, exc: UnicodeDecodeError, line: int, offset: int
) -> UndecodableText:
    """The one error for bytes that are not ``enc``: file, line, byte offset, what to do."""
    bad = exc.object[exc.start : exc.end]
    where = f"{path}: line {line}, byte offset {offset + exc.start}: {bytes(bad)!r} is not "
    return UndecodableText(where + f"{enc.codec} ({exc.reason}). " + _fix(enc))


def _fix(enc: Encoding) -> str:
    if enc.decided_by == "--encoding":
        return (
            "Pass the file's real encoding, e.g. --encoding cp1252 (Windows/Excel exports) or "
            "--encoding latin-1, or leave --encoding out to detect it"
        )
    return (
        f"The file reads as {enc.codec} ({enc.decided_by}) up to there: it is damaged; "
        "re-export it (or pass --encoding NAME if it is not that encoding)"
    )


def _fallback_decode(raw: bytes) -> tuple[str, int]:
    """(text, bytes that were not UTF-8): those bytes read as Windows-1252/Latin-1."""
    text = raw.decode("utf-8", errors="surrogateescape")
    bad = len(_ESCAPED.findall(text))
    return text.translate(_UNESCAPE), bad


class TextSource:
    """One text file (``.gz`` decompressed), decoded by :func:`detect`'s rule.

    A context manager. Iterating yields ``(line number, text)`` with line ends kept, or
    ``(line number, LongLine)``; :meth:`read` returns the whole text. Undecodable bytes under
    a strict encoding raise :class:`UndecodableText`; a damaged ``.gz`` raises one of
    :data:`READ_ERRORS` where the damage is, after every line before it.
    """

    def __init__(
        self, path: Path, encoding: str | None = None, raw: io.BufferedIOBase | None = None
    ) -> None:
        """``raw``: the file's (decompressed) bytes when the caller opened them (to count)."""
        self.path = path
        requested = check_encoding(encoding)
        self._raw = raw if raw is not None else open_bytes(path)
        try:
            self.head = self._raw.peek(SNIFF_BYTES)[:SNIFF_BYTES]  # type: ignore[attr-defined]
        except READ_ERRORS:
            self.head = b""  # the first read raises again, at line 1, for the caller
        self.encoding = detect(self.head, requested)
        self.lines_read = 0
        #: Why :meth:`read` stopped before the end of the file (None: it did not).
        self.damage: BaseException | None = None
        self._bad_bytes = 0
        self._bad_lines = 0
        self._first_bad: tuple[int, int] | None = None

    def __enter__(self) -> TextSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self._raw.close()

    @property
    def fallback(self) -> Fallback | None:
        """Bytes read as :data:`FALLBACK`; None when every byte was UTF-8 (or declared)."""
        if self._first_bad is None:
            return None
        return Fallback(self._bad_bytes, self._bad_lines, *self._first_bad)

    def __iter__(self) -> Iterator[tuple[int, str | LongLine]]:
        if self.encoding.is_wide:
            yield from self._wide_lines()
            return
        enc = self.encoding
        offset = len(self._raw.read(enc.bom_bytes))
        # Line by line from the gzip reader itself: a bigger buffer on top of it would lose
        # the lines decompressed in the same chunk as a damaged .gz's break.
        readline = self._raw.readline
        lineno = 0
        while raw := readline(MAX_LINE_BYTES):
            lineno += 1
            self.lines_read = lineno
            if len(raw) == MAX_LINE_BYTES and not raw.endswith(b"\n"):
                long = self._read_through(raw)
                offset += long.bytes
                yield lineno, long
                continue
            try:
                text = raw.decode(enc.codec)
            except UnicodeDecodeError as exc:
                if enc.strict:
                    raise undecodable(self.path, enc, exc, lineno, offset) from None
                text = self._fall_back(raw, lineno, offset + exc.start)
            offset += len(raw)
            yield lineno, text

    def _read_through(self, first: bytes) -> LongLine:
        total, chunk = len(first), first
        while not chunk.endswith(b"\n"):
            chunk = self._raw.readline(_CHUNK)
            if not chunk:
                break
            total += len(chunk)
        return LongLine(total, _fallback_decode(first[:200])[0])

    def _fall_back(self, raw: bytes, lineno: int, offset: int) -> str:
        text, bad = _fallback_decode(raw)
        self._bad_bytes += bad
        self._bad_lines += 1
        if self._first_bad is None:
            self._first_bad = (lineno, offset)
        return text

    def _wide_lines(self) -> Iterator[tuple[int, str | LongLine]]:
        self._raw.read(self.encoding.bom_bytes)
        stream = io.TextIOWrapper(
            cast(IO[bytes], self._raw), encoding=self.encoding.codec, newline=""
        )
        try:
            for line in stream:
                self.lines_read += 1
                yield self.lines_read, line
        except UnicodeDecodeError as exc:
            enc = self.encoding
            raise UndecodableText(
                f"{self.path}: line {self.lines_read + 1}: not {enc.codec} text "
                f"({exc.reason}). {_fix(enc)}"
            ) from None
        finally:
            stream.detach()

    def read(self) -> str:
        """The whole file as text by the same rule (no line-length limit).

        A file that cannot be read to its end (a truncated ``.gz``) gives the text before the
        damage, with the error in :attr:`damage`.
        """
        enc = self.encoding
        chunks: list[bytes] = []
        try:
            while chunk := self._raw.read1(_CHUNK):  # read1: keeps what comes before damage
                chunks.append(chunk)
        except READ_ERRORS as exc:
            self.damage = exc
        data = b"".join(chunks)
        if self.damage is not None and enc.is_wide:  # whole code units only
            data = data[: len(data) - len(data) % (2 if enc.codec.startswith("utf-16") else 4)]
        body = data[enc.bom_bytes :]
        try:
            return body.decode(enc.codec)
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, enc.bom_bytes + exc.start) + 1
            if enc.strict:
                raise undecodable(self.path, enc, exc, line, enc.bom_bytes) from None
            escaped = body.decode("utf-8", errors="surrogateescape")
            self._bad_bytes = len(_ESCAPED.findall(escaped))
            self._bad_lines = sum(1 for ln in escaped.split("\n") if _ESCAPED.search(ln))
            self._first_bad = (line, enc.bom_bytes + exc.start)
            return escaped.translate(_UNESCAPE)


def read_error(exc: BaseException, lines_read: int, unit: str = "record") -> str:
    """Why a file could not be read past its first ``lines_read`` lines (one of
    :data:`READ_ERRORS`), and the fix: the reason a loader rejects the unread rest with."""
    cause = str(exc) or type(exc).__name__
    if lines_read == 0 and isinstance(exc, gzip.BadGzipFile):
        return (
            f"cannot read the file: its name ends in .gz but it is not gzip-compressed "
            f"({cause}); rename it without .gz, or compress it with gzip"
        )
    if isinstance(exc, EOFError):
        fix = "the file is cut short (an interrupted download or copy?): fetch or copy it again"
    elif isinstance(exc, gzip.BadGzipFile | zlib.error):
        fix = "its compressed data is corrupt: fetch or copy it again"
    else:
        fix = "check the file"
    if lines_read == 0:
        return f"cannot read the file ({cause}); {fix}"
    return (
        f"cannot read the file past line {lines_read} ({cause}); every {unit} before it was "
        f"read; {fix}"
    )


def text_kind(head: bytes) -> str | None:
    """``json`` or ``csv``: what the (decompressed) first bytes of a text file look like;
    None for anything else (binary data, plain text, nothing)."""
    enc = detect(head)
    if is_binary(head, enc):
        return None
    text = head[enc.bom_bytes :].decode(enc.codec, errors="ignore").lstrip(" \t\r\n")
    if text[:1] in ("[", "{"):
        return "json"
    first = text.split("\n", 1)[0]
    if any(sep in first for sep in (",", ";", "\t")):
        return "csv"
    return None


def decode_line(raw: bytes, encoding: str | None = None) -> str:
    """One line of a stream that cannot fail as a whole (``git log -p`` output): ``encoding``
    with U+FFFD for what does not decode, else UTF-8 with other bytes as Windows-1252."""
    if encoding is not None:
        return raw.decode(encoding, errors="replace")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return _fallback_decode(raw)[0]
