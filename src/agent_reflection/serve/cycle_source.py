"""The reflection cycle's telemetry source: the database ``reflect serve`` fills.

``reflect serve`` already turns each Claude Code tool result into a run outcome of its session
(``origin = 'otlp'``, see ``sql/otlp/run_outcomes.sql``), so ``reflect cycle run --db LIVE``
runs the rules over telemetry directly. ``reflect cycle watch LIVE --format otlp`` keeps its
own database (``--db``) and, on each change of the live file, attaches it read-only and copies
the telemetry outcomes, steps and tasks it has not seen (their origin becomes the live file's
path): the new outcomes are what the watch triggers react to (a failed tool call runs the
rules on its session at once). The live file is held only for that copy; while the server is
writing it the copy fails as a whole and the watcher retries it.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from agent_reflection.errors import ReflectionError
from agent_reflection.load.runs import RunsLoad
from agent_reflection.load.runs.store import NewOutcome, mark_overlapping_origins
from agent_reflection.names import name_text
from agent_reflection.store.db import DatabaseLocked, begin_load, lock_holder, read_sql

#: ``loads.source`` of the watcher's copies.
SOURCE = "otlp"
_DUCKDB_MAGIC = b"DUCK"


def is_duckdb(path: Path) -> bool:
    """Whether ``path`` is a DuckDB database file (its header's magic bytes)."""
    try:
        with path.open("rb") as fh:
            return fh.read(12)[8:12] == _DUCKDB_MAGIC
    except OSError:
        return False


def load_telemetry(con: duckdb.DuckDBPyConnection, live: Path) -> RunsLoad:
    """Copy the telemetry outcomes of the ``reflect serve`` database ``live`` not copied yet."""
    origin = str(live.resolve())
    if name_text(origin) != origin:
        raise ReflectionError(
            f"{name_text(origin)}: DuckDB opens files by UTF-8 names, and this path holds "
            "bytes that are not UTF-8: rename the folder (or the file) and run again"
        )
    literal = "'" + origin.replace("'", "''") + "'"
    try:
        con.execute(read_sql("otlp/attach_live.sql").format(path=literal))
    except duckdb.Error as exc:
        holder = lock_holder(str(exc))
        if holder is not None:
            raise DatabaseLocked(origin, holder, 0.0) from None
        raise ReflectionError(f"{live}: not a database reflect serve wrote ({exc})") from None
    try:
        with begin_load(con, SOURCE, origin) as run:
            params = {"origin": origin, "load_id": run.load_id}
            new = con.execute(read_sql("otlp/copy_outcomes.sql"), params).fetchall()
            if new:
                mark_overlapping_origins(con, origin, run.load_id)
            con.execute(read_sql("otlp/copy_steps.sql"), params)
            con.execute(read_sql("otlp/copy_tasks.sql"), params)
            con.execute(read_sql("otlp/copied_run_counts.sql"), {"origin": origin})
            run.read = run.loaded = len(new)
            summary = run.summary()
    except duckdb.CatalogException as exc:
        raise ReflectionError(f"{live}: not a database reflect serve wrote ({exc})") from None
    finally:
        con.execute(read_sql("otlp/detach_live.sql"))
    outcomes = tuple(NewOutcome(str(s), None if t is None else str(t), str(st)) for s, t, st in new)
    return RunsLoad(summary, outcomes)
