"""Read a run-log text file (maybe gzip-compressed) by the one decoding rule of
:mod:`agent_reflection.load.text`: BOM, UTF-16/32, CRLF, Latin-1 read as such, ``--encoding``.

A damaged file keeps every line before the damage: binary data, a line over the length
limit and a truncated ``.gz`` become a :class:`Reject` naming the place.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from agent_reflection.load.runs.records import Parsed, Reject
from agent_reflection.load.text import READ_ERRORS, LongLine, TextSource, is_binary, read_error

BINARY = "binary data (NUL bytes), not a text run log; check the file (or pass --format sqlite)"


def text_lines(
    path: Path, encoding: str | None = None, notes: list[str] | None = None
) -> Iterator[tuple[int, str] | Reject]:
    """(line number, text) per non-blank line of ``path``, or a :class:`Reject`.

    ``notes`` gets a line when bytes that were not UTF-8 were read as Windows-1252.
    """
    with TextSource(path, encoding) as source:
        if is_binary(source.head, source.encoding):
            yield Reject(str(path), source.head[:200].decode("latin-1"), BINARY, file_error=True)
            return
        try:
            for number, line in source:
                if isinstance(line, LongLine):
                    yield Reject(f"{path}:{number}", line.head, line.reason())
                elif line.strip():
                    yield number, line
        except READ_ERRORS as exc:
            yield Reject(
                f"{path}:{source.lines_read + 1}",
                None,
                read_error(exc, source.lines_read, "line"),
                file_error=True,
            )
        if notes is not None and source.fallback is not None:
            notes.append(source.fallback.note(path))


def parse_lines(
    path: Path,
    parse_line: Callable[[str, str], Parsed],
    encoding: str | None = None,
    notes: list[str] | None = None,
) -> Iterator[Parsed]:
    """``parse_line(where, line)`` of every non-blank line of ``path`` (``where`` =
    ``file:line``); a ``ValueError`` it raises becomes a :class:`Reject` naming the line.

    ``encoding`` and ``notes``: see :func:`text_lines`.
    """
    for item in text_lines(path, encoding, notes):
        if isinstance(item, Reject):
            yield item
            continue
        lineno, line = item
        where = f"{path}:{lineno}"
        try:
            yield parse_line(where, line)
        except ValueError as exc:
            yield Reject(where, line, f"{exc}; fix the field or drop the line")


def read_whole(path: Path, encoding: str | None = None) -> str:
    """The whole file as text (a trajectory JSON document); a damaged file raises."""
    with TextSource(path, encoding) as source:
        text = source.read()
    if source.damage is not None:
        raise source.damage
    return text
