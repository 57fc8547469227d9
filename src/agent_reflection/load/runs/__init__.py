"""``reflect load runs``: agent run logs (outcomes, steps, tasks) into DuckDB.

Formats: ``jsonl`` (the documented shape, see :mod:`.jsonl`), ``sqlite`` (an agent platform's
database with ``sub_session_outcomes`` / ``interaction_log`` / ``tasks``, see :mod:`.sqlite`) and
``swe-agent`` (mini-swe-agent / SWE-bench exports and trajectories, see :mod:`.swe`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb

from agent_reflection.errors import ReflectionError
from agent_reflection.load.files import FoundFiles, find_files
from agent_reflection.load.runs.jsonl import parse_jsonl
from agent_reflection.load.runs.records import Parsed, Reject
from agent_reflection.load.runs.sqlite import is_sqlite, parse_sqlite
from agent_reflection.load.runs.store import NewOutcome, store_records
from agent_reflection.load.runs.swe import parse_swe
from agent_reflection.load.runs.textio import text_lines
from agent_reflection.load.text import check_encoding
from agent_reflection.names import name_text
from agent_reflection.redact import database_redactor
from agent_reflection.store.db import LoadSummary, begin_load

FORMATS = ("jsonl", "sqlite", "swe-agent")
#: File names read from a folder given to ``reflect load runs`` (files named explicitly are
#: always read): the JSONL shapes, SQLite databases and SWE-agent trajectories.
RUN_LOG_SUFFIXES = (
    ".jsonl",
    ".jsonl.gz",
    ".ndjson",
    ".ndjson.gz",
    ".traj.json",
    ".traj.json.gz",
    ".db",
    ".sqlite",
    ".sqlite3",
)


class UnknownRunFormat(ReflectionError, ValueError):
    """The format of a run-log file could not be told from its content."""


@dataclass(frozen=True)
class RunsLoad:
    """What ``load_runs`` did: the reconcile summary and the outcomes that were new."""

    summary: LoadSummary
    new_outcomes: tuple[NewOutcome, ...]


def detect_format(path: Path, encoding: str | None = None) -> str:
    """``sqlite`` by header, ``swe-agent`` for trajectories and SWE-bench runs, else ``jsonl``.

    A file whose first record does not parse is read as ``jsonl``, so its lines are
    rejected one by one with their reasons (the rest still loads).
    """
    if is_sqlite(path):
        return "sqlite"
    if path.name.endswith((".traj.json", ".traj.json.gz")):
        return "swe-agent"
    for item in text_lines(path, encoding):
        if isinstance(item, Reject):
            return "jsonl"
        try:
            obj = json.loads(item[1])
        except ValueError:
            return "jsonl"
        return "swe-agent" if isinstance(obj, dict) and "instance_id" in obj else "jsonl"
    return "jsonl"


def run_log_files(paths: Sequence[str | Path]) -> FoundFiles:
    """The run-log files named by ``paths``: files as given, folders searched recursively for
    :data:`RUN_LOG_SUFFIXES` (sorted, hidden folders skipped; see
    :mod:`agent_reflection.load.files`), and the paths refused."""

    def wanted(top: Path, path: Path) -> bool:
        hidden = any(part.startswith(".") for part in path.relative_to(top).parts)
        return path.name.endswith(RUN_LOG_SUFFIXES) and not hidden

    return find_files(
        paths,
        wanted,
        lambda path: ReflectionError(
            f"{path}: no such file or folder; pass run-log files (jsonl, sqlite, swe-agent) "
            "or folders holding them"
        ),
    )


def refuse_run_log(con: duckdb.DuckDBPyConnection, path: Path, reason: str) -> LoadSummary:
    """Record a run-log path that is not read (:func:`run_log_files` refused it): one load
    with the path in ``rejected`` and the reason."""
    with begin_load(con, "runs", str(path)) as run:
        run.read += 1
        run.reject(str(path), None, reason)
    return run.summary()


def _parse(path: Path, fmt: str, encoding: str | None, notes: list[str]) -> Iterator[Parsed]:
    if fmt == "sqlite":
        return parse_sqlite(path)
    if fmt == "swe-agent":
        return parse_swe(path, encoding, notes)
    return parse_jsonl(path, encoding, notes)


def load_runs(
    con: duckdb.DuckDBPyConnection,
    path: str | Path,
    fmt: str | None = None,
    encoding: str | None = None,
    redact: bool = True,
) -> RunsLoad:
    """Load one run-log file (idempotent; read = loaded + rejected + already present).

    ``encoding`` of a text run log: None detects (see :mod:`agent_reflection.load.text`).
    Secrets in every text field are redacted (:mod:`agent_reflection.redact`) unless
    ``redact`` is False.
    """
    file = Path(path)
    if not file.exists():
        raise ReflectionError(
            f"{file}: no such file; pass a run-log file (jsonl, sqlite, swe-agent)"
        )
    if fmt is not None and fmt not in FORMATS:
        raise UnknownRunFormat(f"--format {fmt!r}: use one of {', '.join(FORMATS)}")
    check_encoding(encoding)  # an unknown name fails before a load is recorded
    chosen = fmt or detect_format(file, encoding)
    notes: list[str] = []
    with begin_load(con, "runs", str(file), fail_if_all_rejected=True) as run:
        run.detail["format"] = chosen
        run.redactor = database_redactor(con, enabled=redact)
        parsed = _parse(file, chosen, encoding, notes)
        new = store_records(
            con,
            run,
            parsed,
            source_format=chosen,
            origin=name_text(file.resolve()),
            redactor=run.redactor,
        )
        run.detail["new_outcomes"] = len(new)
        if notes:  # the file's own notes first, then the store's (copies, overlaps)
            run.detail["warnings"] = [*notes, *run.detail.get("warnings", ())]
        run.warn_if_empty(file)
    return RunsLoad(run.summary(), tuple(new))
