"""Reading export files: transparent gzip, byte progress, JSON arrays/JSONL with line numbers.

A truncated or corrupt JSON array still yields every complete element before the damage; the
damaged rest becomes one :class:`Rejected` naming the line. JSONL yields each line on its own,
so one bad line never hides the others.
"""

from __future__ import annotations

import csv
import gzip
import io
import itertools
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

from agent_reflection.errors import ReflectionError, json_error_text
from agent_reflection.load.board.model import Notice, RecordError, Rejected, Task
from agent_reflection.load.text import (
    READ_ERRORS,
    SNIFF_BYTES,
    LongLine,
    TextSource,
    csv_lines,
    detect,
    is_binary,
    read_error,
    text_kind,
)

ProgressFn = Callable[[int], None]
#: Builds a task from one CSV row and its ``file:line``; raises :class:`RecordError` for a row
#: that does not fit.
RecordParser = Callable[[Any, str], Task]
T = TypeVar("T")


class BoardSourceNotFound(ReflectionError, FileNotFoundError):
    """The export file (or repository) given does not exist."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"{path}: no such file or directory; check the path (cwd is relative)")


class BoardFormatError(ReflectionError, ValueError):
    """The export as a whole cannot be read in the requested format (e.g. a changed header)."""


class _CountingReader(io.RawIOBase):
    """Reports bytes read from the underlying (possibly compressed) file to ``progress``."""

    def __init__(self, raw: IO[bytes], progress: ProgressFn | None) -> None:
        self._raw = raw
        self._progress = progress

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._raw.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        if self._progress is not None and n:
            self._progress(n)
        return n

    def close(self) -> None:
        self._raw.close()
        super().close()


def check_exists(path: Path) -> None:
    if not path.exists():
        raise BoardSourceNotFound(path)


def open_binary(path: Path, progress: ProgressFn | None = None) -> io.BufferedIOBase:
    """The file's (decompressed when it ends in .gz) bytes, counting on-disk bytes read."""
    check_exists(path)
    counted = io.BufferedReader(_CountingReader(path.open("rb"), progress), 1 << 16)
    if path.suffix == ".gz":
        return gzip.GzipFile(fileobj=counted, mode="rb")
    return counted


def sniff(path: Path, encoding: str | None = None) -> tuple[bytes, Rejected | None]:
    """The first (decompressed) bytes, or a :class:`Rejected` for binary/unreadable files."""
    head = b""
    try:
        with open_binary(path) as fh:
            while len(head) < SNIFF_BYTES and (more := fh.read1(SNIFF_BYTES - len(head))):
                head += more
    except READ_ERRORS as exc:  # a corrupt or truncated .gz: judge the bytes before the damage
        if not head:
            return b"", Rejected(str(path), None, read_error(exc, 0), file_error=True)
    if is_binary(head, detect(head, encoding)):
        return head, Rejected(
            str(path),
            head[:200],
            "binary data (NUL bytes), not a text export; check the file",
            file_error=True,
        )
    return head, None


def looks_like_json(head: bytes) -> bool:
    """The (possibly UTF-16/32, possibly BOM-marked) text starts with ``[`` or ``{``."""
    enc = detect(head)
    text = head[enc.bom_bytes : enc.bom_bytes + 4096].decode(enc.codec, errors="ignore")
    return text.lstrip(" \t\r\n")[:1] in ("[", "{")


#: What the first bytes of an export look like, for the hint of a load that rejected every
#: record: (format, words). Jira JSON names its issues by key; GitHub's JSON by URL / node id.
_JIRA_JSON = re.compile(r'"key"\s*:\s*"[A-Z][A-Z0-9_]*-\d+"')
_GITHUB_JSON = re.compile(r'github\.com|"html_url"|"node_id"|"(?:issue_)?number"\s*:')
#: Jira CSV header names of the issue key (``jira.CSV_COLUMNS["key"]``).
_JIRA_KEY_COLUMNS = {"key", "issue key"}


def guess_format(head: bytes) -> tuple[str, str] | None:
    """(``--format``, what it looks like) for an export whose first (decompressed) bytes are
    ``head``, e.g. ``("jira", "a Jira CSV export")``; None when it cannot tell."""
    kind = text_kind(head)
    if kind is None:
        return None
    enc = detect(head)
    text = head[enc.bom_bytes :].decode(enc.codec, errors="ignore")
    if kind == "json":
        if _JIRA_JSON.search(text) and '"fields"' in text:
            return "jira", "a Jira JSON export"
        if _GITHUB_JSON.search(text):
            return "github", "GitHub JSON"
        return "jsonl", "JSON"
    first = text.lstrip("\r\n").split("\n", 1)[0]
    delimiter = max((",", ";", "\t"), key=first.count)
    cells = {cell.strip().strip('"').lower() for cell in first.split(delimiter)}
    if cells & _JIRA_KEY_COLUMNS:
        return "jira", "a Jira CSV export"
    return "csv", "CSV"


def format_hint(path: Path, fmt: str) -> str | None:
    """A likely right ``--format`` for an export of which ``--format fmt`` rejected every
    record, from what its first bytes look like; None when they fit ``fmt`` (or say nothing)."""
    head, _ = sniff(path)
    guess = guess_format(head)
    if guess is None or guess[0] == fmt:
        return None
    right, looks = guess
    return f"{path.name} looks like {looks}: is it --format {right}?"


@dataclass(frozen=True)
class CsvHeader:
    """The first item :func:`iter_csv` yields."""

    delimiter: str
    cells: list[str]


#: Largest CSV field accepted (Python's default, 128 KiB, is too small for long descriptions).
CSV_FIELD_LIMIT = 1 << 26


def iter_csv(
    path: Path, progress: ProgressFn | None = None, encoding: str | None = None
) -> Iterator[CsvHeader | tuple[str, list[str]] | Rejected | Notice]:
    """Stream a CSV export: a :class:`CsvHeader`, then (``file:line``, cells) per record.

    Blank lines are skipped; a record whose field count differs from the header's is a
    :class:`Rejected`, so every record yielded has exactly one cell per header column.

    The separator (``,`` ``;`` or tab) is sniffed from the header line. Text is decoded by
    :mod:`agent_reflection.load.text` (BOM, UTF-16/32, Latin-1 read as such, ``encoding``).
    A binary file is one :class:`Rejected`, so is a line over the length limit; a file that
    cannot be read past some line (corrupt gzip) ends with a :class:`Rejected` at that line.
    Bytes that do not decode under an explicit ``encoding`` raise :class:`UndecodableText`.
    """
    _, problem = sniff(path, encoding)
    if problem is not None:
        yield problem
        return
    csv.field_size_limit(max(csv.field_size_limit(), CSV_FIELD_LIMIT))
    previous_end = 0
    long_lines: list[tuple[int, LongLine]] = []

    try:
        with TextSource(path, encoding, raw=open_binary(path, progress)) as source:
            stream = csv_lines(source, long_lines)
            first = next(stream, "")
            if not first.strip():  # no header: nothing to read (but say why a line was cut)
                for number, long in long_lines:
                    yield Rejected(f"{path}:{number}", long.head, long.reason())
                return
            delimiter = max((",", ";", "\t"), key=first.count)
            reader = csv.reader(itertools.chain([first], stream), delimiter=delimiter)
            header = CsvHeader(delimiter, [c.strip() for c in next(reader)])
            yield header
            previous_end = reader.line_num
            for row in reader:
                where = f"{path}:{previous_end + 1}"
                previous_end = reader.line_num
                while long_lines:
                    number, long = long_lines.pop(0)
                    yield Rejected(f"{path}:{number}", long.head, long.reason())
                if not any(cell.strip() for cell in row):
                    continue  # a blank line is no record
                elif len(row) != len(header.cells):
                    yield Rejected(
                        where,
                        delimiter.join(row),
                        f"row has {len(row)} fields, the header has {len(header.cells)}",
                    )
                else:
                    yield where, row
            while long_lines:
                number, long = long_lines.pop(0)
                yield Rejected(f"{path}:{number}", long.head, long.reason())
            if source.fallback is not None:
                yield Notice(source.fallback.note(path))
    except (*READ_ERRORS, csv.Error) as exc:
        yield Rejected(
            f"{path}:{previous_end + 1}", None, read_error(exc, previous_end), file_error=True
        )


def read_text(
    path: Path, progress: ProgressFn | None = None, encoding: str | None = None
) -> tuple[str | None, Rejected | None, Notice | None]:
    """(text, problem, notice) of the whole file.

    ``text`` is None when the file is binary or unreadable (``problem`` says why). A file
    damaged part-way (a truncated ``.gz``) gives the text before the damage *and* a
    ``problem``. ``notice`` says when bytes that were not UTF-8 were read as Windows-1252.
    Decoded by :mod:`agent_reflection.load.text`; bytes that do not decode under an explicit
    ``encoding`` raise :class:`UndecodableText`.
    """
    with TextSource(path, encoding, raw=open_binary(path, progress)) as source:
        if is_binary(source.head, source.encoding):
            return (
                None,
                Rejected(
                    str(path),
                    source.head[:200],
                    "binary data (NUL bytes), not a text export; check the file",
                    file_error=True,
                ),
                None,
            )
        text = source.read()
    fallback = source.fallback
    notice = None if fallback is None else Notice(fallback.note(path))
    if source.damage is None:
        return text, None, notice
    line = text.count("\n") + 1
    problem = Rejected(f"{path}:{line}", None, read_error(source.damage, line - 1), file_error=True)
    return (text if text.strip() else None), problem, notice


def iter_json_records(path: Path, text: str) -> Iterator[tuple[str, Any] | Rejected]:
    """(``file:line``, element) per record of a JSON array, a JSON object or JSONL text.

    An object with an ``issues``/``items`` list (Jira REST search results) yields that list.
    Arrays one after another (``gh api --paginate`` output: ``[...][...]``) yield every
    element of each.
    """
    stripped = text.lstrip()
    if not stripped:
        return
    if stripped[0] == "[" or (stripped[0] == "{" and _is_single_document(stripped)):
        yield from _iter_document(path, text)
    else:
        yield from _iter_jsonl(path, text)


def _is_single_document(text: str) -> bool:
    try:
        _, end = json.JSONDecoder().raw_decode(text)
    except json.JSONDecodeError:
        return "\n{" not in text  # one broken object, not JSONL
    return not text[end:].strip()


def _iter_jsonl(path: Path, text: str) -> Iterator[tuple[str, Any] | Rejected]:
    """JSONL, or JSON documents one after another (Perceval's pretty-printed output).

    A document that does not parse is rejected up to the end of its line and reading goes on
    at the next line, so one bad line never hides the others.
    """
    decoder = json.JSONDecoder()
    pos, line, counted = 0, 1, 0
    while True:
        pos = _skip_ws(text, pos)
        if pos >= len(text):
            return
        line += text.count("\n", counted, pos)
        counted = pos
        where = f"{path}:{line}"
        try:
            obj, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            eol = text.find("\n", pos)
            eol = len(text) if eol < 0 else eol
            yield Rejected(where, text[pos:eol], f"invalid JSON: {json_error_text(exc)}")
            pos = eol
            continue
        yield where, obj
        pos = end


def _iter_document(path: Path, text: str) -> Iterator[tuple[str, Any] | Rejected]:
    decoder = json.JSONDecoder()
    start = len(text) - len(text.lstrip())
    if text[start] == "{":
        try:
            obj, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            yield Rejected(
                f"{path}:{exc.lineno}",
                text[exc.pos : exc.pos + 200],
                f"invalid JSON: {json_error_text(exc)} (a truncated or corrupt file?); nothing "
                "in it could be read",
                file_error=True,
            )
            return
        items = next((obj[k] for k in ("issues", "items") if isinstance(obj.get(k), list)), None)
        line = text.count("\n", 0, start) + 1
        if items is None:
            yield f"{path}:{line}", obj
        else:
            for item in items:
                yield f"{path}:{line}", item
        return
    # A JSON array, element by element, so a truncated file keeps its complete elements.
    # Arrays written one after another (``gh api --paginate``: one per page) are read in turn.
    pos = start + 1
    line = text.count("\n", 0, pos) + 1
    last = pos
    while True:
        pos = _skip_ws(text, pos)
        if pos < len(text) and text[pos] == "]":
            pos = _skip_ws(text, pos + 1)
            if pos >= len(text):
                return
            if text[pos] != "[":
                here = line + text.count("\n", last, pos)
                yield Rejected(
                    f"{path}:{here}",
                    text[pos : pos + 200],
                    "text after the JSON array (expected another '[' page or the end of the file)",
                    file_error=True,
                )
                return
            pos += 1
            continue
        line += text.count("\n", last, pos)
        last = pos
        try:
            obj, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            yield Rejected(
                f"{path}:{line}",
                text[pos : pos + 2000],
                f"invalid JSON (truncated or corrupt): {json_error_text(exc)}; "
                "every complete element before this line was read",
                file_error=True,
            )
            return
        yield f"{path}:{line}", obj
        pos = _skip_ws(text, end)
        if pos < len(text) and text[pos] == ",":
            pos += 1
        elif pos >= len(text) or text[pos] != "]":
            here = line + text.count("\n", last, pos)
            yield Rejected(
                f"{path}:{here}",
                text[pos : pos + 200],
                "invalid JSON array: expected ',' or ']' (truncated file?)",
                file_error=True,
            )
            return


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _json_text(record: Any) -> str:
    return json.dumps(record, ensure_ascii=False, default=str)


def cut_json_text(record: Any) -> str:
    """A rejected GitHub or Jira record's raw text: its JSON, cut at 4,096 characters."""
    return _json_text(record)[:4096]


def json_items(
    path: Path,
    progress: ProgressFn | None,
    encoding: str | None,
    parse_items: Callable[[Any, str], Iterable[T]],
    raw_text: Callable[[Any], str] = _json_text,
) -> Iterator[T | Rejected | Notice]:
    """Every item ``parse_items(element, where)`` gives for the records of a JSON/JSONL export
    (see :func:`read_text`, :func:`iter_json_records`); a :class:`RecordError` rejects the
    record, its raw text being ``raw_text(element)`` (default: the element as JSON)."""
    text, problem, notice = read_text(path, progress, encoding)
    if problem is not None:
        yield problem
    if text is None:
        return
    if notice is not None:
        yield notice
    for item in iter_json_records(path, text):
        if isinstance(item, Rejected):
            yield item
            continue
        where, record = item
        try:
            yield from parse_items(record, where)
        except RecordError as exc:
            yield Rejected(where, raw_text(record), str(exc))


def csv_tasks(
    path: Path,
    progress: ProgressFn | None,
    encoding: str | None,
    row_parser: Callable[[list[str]], Callable[[list[str], str], T]],
) -> Iterator[T | Rejected | Notice]:
    """Every row of a CSV export (see :func:`iter_csv`) as ``parse_row(cells, where)``, where
    ``parse_row = row_parser(header)``; a :class:`RecordError` rejects the row (its raw text:
    the cells joined by the file's separator)."""
    parse_row: Callable[[list[str], str], T] | None = None
    delimiter = ","
    for item in iter_csv(path, progress, encoding):
        if isinstance(item, Rejected | Notice):
            yield item
            continue
        if isinstance(item, CsvHeader):
            parse_row, delimiter = row_parser(item.cells), item.delimiter
            continue
        where, row = item
        if parse_row is None:  # iter_csv yields the header before any row
            raise BoardFormatError(f"{where}: a CSV row before the header")
        try:
            yield parse_row(row, where)
        except RecordError as exc:
            yield Rejected(where, delimiter.join(row), str(exc))
