"""``load_board``: parse one export in a given format and store it, recording the load;
``load_board_export``: that, then the task <-> commit matcher, as ``reflect load board`` does."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from agent_reflection.load.board.model import EventRecord, Notice, ParseOptions, Rejected, Task
from agent_reflection.load.board.source import (
    BoardFormatError,
    ProgressFn,
    check_exists,
    format_hint,
)
from agent_reflection.load.board.writer import TaskWriter
from agent_reflection.load.text import UndecodableText, check_encoding
from agent_reflection.progress import progress_bar
from agent_reflection.store.db import LoadSummary, begin_load

if TYPE_CHECKING:
    from agent_reflection.load.task_matcher import MatchSummary

Parser = Callable[
    [Path, ParseOptions, ProgressFn | None], Iterator[Task | EventRecord | Rejected | Notice]
]


def _parsers() -> dict[str, Parser]:
    from agent_reflection.load.board.github import parse_github
    from agent_reflection.load.board.jira import parse_jira
    from agent_reflection.load.board.tabular import parse_csv, parse_jsonl
    from agent_reflection.load.board.task_files import parse_git_files

    return {
        "github": parse_github,
        "jira": parse_jira,
        "csv": parse_csv,
        "jsonl": parse_jsonl,
        "git-files": parse_git_files,
    }


FORMATS = ("github", "jira", "csv", "jsonl", "git-files")


def load_board(
    con: duckdb.DuckDBPyConnection,
    path: str | Path,
    fmt: str,
    options: ParseOptions | None = None,
    progress: ProgressFn | None = None,
) -> LoadSummary:
    """Load one board export ``path`` in format ``fmt`` (one of :data:`FORMATS`).

    Each record becomes a task (plus its events and links) or a ``rejected`` row naming
    ``file:line`` and the reason; the rest loads. Re-loading the same export changes nothing.
    ``progress`` is called with the number of bytes read as reading goes on.
    Raises :class:`BoardFormatError` when the export as a whole does not fit the format (e.g. a
    CSV header without the mapped columns), :class:`UndecodableText` when its bytes do not
    decode under an explicit ``options.encoding``: the load is recorded as failed, with the
    reason in ``rejected``.
    """
    path = Path(path)
    options = options or ParseOptions()
    if fmt not in FORMATS:
        raise BoardFormatError(f"unknown board format {fmt!r}; use one of {', '.join(FORMATS)}")
    check_exists(path)
    if fmt != "git-files" and path.is_dir():
        raise BoardFormatError(
            f"{path} is a folder; --format {fmt} reads one export file "
            "(tasks kept as files in a git repo: --format git-files)"
        )
    check_encoding(options.encoding)  # an unknown name fails before a load is recorded
    parser = _parsers()[fmt]
    with begin_load(con, "board", str(path), fail_if_all_rejected=True) as run:
        run.detail["format"] = fmt
        writer = TaskWriter(con, run.load_id)
        try:
            for item in parser(path, options, progress):
                if isinstance(item, Notice):  # about the file, not a record
                    run.warn(item.text)
                    continue
                run.read += 1
                if isinstance(item, Rejected):
                    run.reject(item.location, item.raw, item.reason, file_error=item.file_error)
                elif isinstance(item, EventRecord):
                    writer.add_event(item)
                else:
                    writer.add(item)
        except BoardFormatError as exc:  # e.g. a CSV header without the mapped columns
            hint = format_hint(path, fmt) if path.is_file() else None
            message = f"{hint} If not: {exc}" if hint else str(exc)
            run.read += 1
            run.reject(str(path), None, message)
            if hint:
                raise BoardFormatError(message) from None
            raise
        except UndecodableText as exc:
            run.read += 1
            run.reject(str(path), None, str(exc))
            raise
        run.warn_if_empty(path)
        if run.read and run.rejected == run.read and path.is_file():
            run.hint = format_hint(path, fmt)
        result = writer.result()
        run.loaded += result.loaded
        run.already_present += result.already_present
        run.detail.update(asdict(result))
    return run.summary()


@dataclass(frozen=True)
class BoardLoad:
    """What :func:`load_board_export` did: the export's load and the matcher's run (None
    without ``match``)."""

    board: LoadSummary
    match: MatchSummary | None


def load_board_export(
    con: duckdb.DuckDBPyConnection,
    path: str | Path,
    fmt: str,
    options: ParseOptions | None = None,
    *,
    match: bool = True,
    progress: bool = False,
) -> BoardLoad:
    """Load the board export ``path`` (:func:`load_board`), then, with ``match`` and when the
    board load did not fail, find the task keys of the whole database in commit messages and
    sidecars (:func:`agent_reflection.load.task_matcher.match_task_commits`). ``progress``: a bar of
    the bytes read on stderr (only on a terminal, not under ``CI``)."""
    path = Path(path)
    total = path.stat().st_size if path.is_file() else None
    with progress_bar(total=total, unit="B", desc=f"board {path.name}", silent=not progress) as bar:
        board = load_board(con, path, fmt, options, progress=bar.update)
    if not match or board.status != "ok":
        # a failed board load may have loaded only part of the export: matching its tasks
        # would record links to a board that is not there (load the export again first)
        return BoardLoad(board, None)
    from agent_reflection.load.task_matcher import match_task_commits

    return BoardLoad(board, match_task_commits(con))
