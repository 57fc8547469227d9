"""Reading export files: transparent gzip, byte progress, JSON arrays/JSONL with line numbers.

A truncated or corrupt JSON array still yields every complete element before the damage; the
damaged rest becomes one :class:`Rejected` naming the line. JSONL yields each line on its own,
so one bad line never hides the others.
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from agent_reflection.errors import ReflectionError
from agent_reflection.load.board.model import Rejected

ProgressFn = Callable[[int], None]
#: Bytes sniffed to tell binary garbage from text.
SNIFF_BYTES = 8192


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


def open_binary(path: Path, progress: ProgressFn | None = None) -> IO[bytes]:
    """The file's (decompressed when it ends in .gz) bytes, counting on-disk bytes read."""
    check_exists(path)
    counted = io.BufferedReader(_CountingReader(path.open("rb"), progress), 1 << 16)
    if path.suffix == ".gz":
        return gzip.GzipFile(fileobj=counted, mode="rb")  # type: ignore[return-value]
    return counted


def read_text(path: Path, progress: ProgressFn | None = None) -> tuple[str | None, Rejected | None]:
    """The whole file as text, or a :class:`Rejected` when it is binary or not UTF-8."""
    try:
        with open_binary(path, progress) as fh:
            data = fh.read()
    except (OSError, EOFError) as exc:  # e.g. a corrupt or truncated .gz
        return None, Rejected(str(path), None, f"cannot read the file: {exc}")
    return decode_text(path, data)


def decode_text(path: Path, data: bytes) -> tuple[str | None, Rejected | None]:
    if b"\x00" in data[:SNIFF_BYTES]:
        return None, Rejected(
            str(path), data[:200], "binary data (NUL bytes), not a text export; check the file"
        )
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return None, Rejected(
            f"{path}:{line}", data[max(0, exc.start - 80) : exc.start + 80],
            f"not UTF-8 at byte {exc.start}; re-export as UTF-8",
        )  # fmt: skip


def iter_json_records(path: Path, text: str) -> Iterator[tuple[str, Any] | Rejected]:
    """(``file:line``, element) per record of a JSON array, a JSON object or JSONL text.

    An object with an ``issues``/``items`` list (Jira REST search results) yields that list.
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
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            yield where, json.loads(line)
        except json.JSONDecodeError as exc:
            yield Rejected(where, line, f"invalid JSON: {exc.msg} at column {exc.colno}")


def _iter_document(path: Path, text: str) -> Iterator[tuple[str, Any] | Rejected]:
    decoder = json.JSONDecoder()
    start = len(text) - len(text.lstrip())
    if text[start] == "{":
        try:
            obj, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            yield Rejected(f"{path}:{exc.lineno}", text[exc.pos : exc.pos + 200],
                           f"invalid JSON: {exc.msg} at column {exc.colno}")  # fmt: skip
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
    pos = start + 1
    line = text.count("\n", 0, pos) + 1
    last = pos
    while True:
        pos = _skip_ws(text, pos)
        if pos < len(text) and text[pos] == "]":
            return
        line += text.count("\n", last, pos)
        last = pos
        try:
            obj, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            yield Rejected(f"{path}:{line}", text[pos : pos + 2000],
                           f"invalid JSON (truncated or corrupt): {exc.msg}; "
                           "every complete element before this line was read")  # fmt: skip
            return
        yield f"{path}:{line}", obj
        pos = _skip_ws(text, end)
        if pos < len(text) and text[pos] == ",":
            pos += 1
        elif pos >= len(text) or text[pos] != "]":
            here = line + text.count("\n", last, pos)
            yield Rejected(f"{path}:{here}", text[pos : pos + 200],
                           "invalid JSON array: expected ',' or ']' (truncated file?)")  # fmt: skip
            return


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos
