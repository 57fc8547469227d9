"""``reflect load runs``: agent run logs (outcomes, steps, tasks) into DuckDB.

Formats: ``jsonl`` (the documented shape, see :mod:`.jsonl`), ``sqlite`` (an agent platform's
database with ``sub_session_outcomes`` / ``interaction_log`` / ``tasks``, see :mod:`.sqlite`) and
``swe-agent`` (mini-swe-agent / SWE-bench exports and trajectories, see :mod:`.swe`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb

from agent_reflection.db import LoadSummary, begin_load
from agent_reflection.errors import ReflectionError
from agent_reflection.load.runs.jsonl import parse_jsonl
from agent_reflection.load.runs.records import Parsed
from agent_reflection.load.runs.sqlite import is_sqlite, parse_sqlite
from agent_reflection.load.runs.store import NewOutcome, store_records
from agent_reflection.load.runs.swe import parse_swe
from agent_reflection.load.runs.textio import open_text

FORMATS = ("jsonl", "sqlite", "swe-agent")

__all__ = ["FORMATS", "NewOutcome", "RunsLoad", "detect_format", "load_runs"]


class UnknownRunFormat(ReflectionError, ValueError):
    """The format of a run-log file could not be told from its content."""


@dataclass(frozen=True)
class RunsLoad:
    """What ``load_runs`` did: the reconcile summary and the outcomes that were new."""

    summary: LoadSummary
    new_outcomes: tuple[NewOutcome, ...]


def detect_format(path: Path) -> str:
    """``sqlite`` by header, ``swe-agent`` for trajectories and SWE-bench runs, else ``jsonl``."""
    if is_sqlite(path):
        return "sqlite"
    if path.name.endswith((".traj.json", ".traj.json.gz")):
        return "swe-agent"
    try:
        with open_text(path) as fh:
            for line in fh:
                if line.strip():
                    obj = json.loads(line)
                    return (
                        "swe-agent" if isinstance(obj, dict) and "instance_id" in obj else "jsonl"
                    )
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UnknownRunFormat(
            f"{path}: cannot tell the run-log format ({exc}); pass --format jsonl|sqlite|swe-agent"
        ) from exc
    return "jsonl"


def _parse(path: Path, fmt: str) -> Iterator[Parsed]:
    if fmt == "sqlite":
        return parse_sqlite(path)
    if fmt == "swe-agent":
        return parse_swe(path)
    return parse_jsonl(path)


def load_runs(con: duckdb.DuckDBPyConnection, path: str | Path, fmt: str | None = None) -> RunsLoad:
    """Load one run-log file (idempotent; read = loaded + rejected + already present)."""
    file = Path(path)
    if not file.exists():
        raise ReflectionError(
            f"{file}: no such file; pass a run-log file (jsonl, sqlite, swe-agent)"
        )
    if fmt is not None and fmt not in FORMATS:
        raise UnknownRunFormat(f"--format {fmt!r}: use one of {', '.join(FORMATS)}")
    chosen = fmt or detect_format(file)
    with begin_load(con, "runs", str(file)) as run:
        run.detail["format"] = chosen
        new = store_records(
            con, run, _parse(file, chosen), source_format=chosen, origin=str(file.resolve())
        )
        run.detail["new_outcomes"] = len(new)
    return RunsLoad(run.summary(), tuple(new))
