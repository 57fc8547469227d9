"""Sessions joined to their commits (``session_commits``) and outcomes (``session_outcomes``).

Run by ``reflect load git`` after the history (and ``--szz``) and the notes are loaded:
:func:`load_git_sessions` reads ``refs/notes/reflection``
(:func:`agent_reflection.load.git.notes.load_notes`), then derives the repo's session links and
outcomes again from what the database holds, with the pre-registered windows (``[p1]``
``loop_*`` keys). The rules are SQL (``sql/sessions/insert_links.sql``, ``outcomes.sql``) and
documented in docs/loading.md. Both tables are derived: recomputing them is cheap and makes a
re-load see new sidecars, notes, reverts and fixes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_reflection.load.git.notes import load_notes
from agent_reflection.load.git.repo import GitSource, open_repo
from agent_reflection.store.db import (
    LoadSummary,
    begin_load,
    pandas_deferred,
    read_sql,
    registered,
    transaction,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    import duckdb

    from agent_reflection.experiments.registration import Preregistration

SOURCE = "sessions"


@dataclass(frozen=True)
class SessionsResult:
    """What one pass did: the notes load (None: the repo has no reflection notes) and the
    derived rows (the ``sessions`` load's summary: read = loaded = outcome rows; None when
    there is no sidecar at all and nothing of the repo's to clear)."""

    notes: LoadSummary | None
    sessions: LoadSummary | None


def load_git_sessions(
    con: duckdb.DuckDBPyConnection,
    repo_path: str | os.PathLike[str] | GitSource,
    prereg: Preregistration | None = None,
    *,
    name: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    notes_tips: Mapping[str, str] | None = None,
) -> SessionsResult:
    """Load the repo's reflection notes, then derive its ``session_commits`` and
    ``session_outcomes`` again (its history must be loaded under the same ``name``).

    ``prereg``: the windows to use; None reads the effective ``preregistration.toml`` (the
    file ``reflect run`` would use), and only when there are sessions to derive, so a plain
    git load never depends on it. ``notes_tips``: the notes refs' commits as the git load read
    them (the git load's ``detail["notes_tips"]``), instead of asking git."""
    source = open_repo(repo_path, name=name, cache_dir=cache_dir)
    notes = load_notes(con, source, tips=notes_tips)
    with pandas_deferred():  # DuckDB's parameter binding would import pandas (0.3 s)
        row = con.execute(
            read_sql("sessions/anything_to_derive.sql"), {"repo": source.name}
        ).fetchone()
    if not (row and row[0]):  # no sidecar anywhere: a plain git load stays one load
        return SessionsResult(notes, None)
    if prereg is None:
        from agent_reflection.experiments.registration import load_preregistration

        prereg = load_preregistration()
    return SessionsResult(notes, derive_sessions(con, source.name, prereg, source.origin))


def derive_sessions(
    con: duckdb.DuckDBPyConnection, repo: str, prereg: Preregistration, origin: str = ""
) -> LoadSummary:
    """Replace ``repo``'s rows in ``session_commits`` and ``session_outcomes``."""
    p = prereg.p1
    with begin_load(con, SOURCE, origin or repo) as run, transaction(con):
        con.execute(read_sql("sessions/delete_links.sql"), {"repo": repo})
        con.execute(
            read_sql("sessions/insert_links.sql"),
            {
                "repo": repo,
                "hours_before": p.loop_link_hours_before,
                "hours_after": p.loop_link_hours_after,
                "min_jaccard": p.loop_link_min_jaccard,
                "load_id": run.load_id,
            },
        )
        links = dict(con.execute(read_sql("sessions/count_links.sql"), {"repo": repo}).fetchall())
        con.execute(read_sql("sessions/delete_outcomes.sql"), {"repo": repo})
        outcomes = session_outcomes(con, prereg, repo=repo)
        with registered(con, outcome_batch=outcomes):
            con.execute(read_sql("sessions/insert_outcomes.sql"), {"load_id": run.load_id})
        counts = dict(
            con.execute(read_sql("sessions/count_outcomes.sql"), {"repo": repo}).fetchall()
        )
        run.read = run.loaded = outcomes.num_rows
        run.detail.update(
            repo=repo,
            links=links,
            outcomes=counts,
            window_days=p.loop_window_days,
            preregistration=prereg.path,
            preregistration_sha256=prereg.sha256,
        )
        run.checkpoint()
    return run.summary()


def session_outcomes(
    con: duckdb.DuckDBPyConnection, prereg: Preregistration, *, repo: str | None = None
) -> Any:
    """The outcome rows (an Arrow table) derived from the links in ``session_commits``, with
    ``prereg``'s window; ``repo`` None: every repo. A SELECT: runs on a read-only database."""
    p = prereg.p1
    return con.execute(
        read_sql("sessions/outcomes.sql"),
        {
            "repo": repo,
            "window_days": p.loop_window_days,
            "reopen_kinds": list(prereg.p3.reopen_event_kinds),
            "cosmetic_fix": prereg.p2.cosmetic_lint_message
            if p.loop_ignore_cosmetic_fixes
            else None,
        },
    ).to_arrow_table()


def session_report(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """One dict per (session, repo): its last sidecar, its commits and their links, its outcome
    and the evidence commit's subject (``sql/sessions/session_report.sql``, the query
    docs/loading.md shows)."""
    cursor = con.execute(read_sql("sessions/session_report.sql"))
    names = [d[0] for d in cursor.description or ()]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
