"""Everything ``reflect load git`` loads from one repository: :func:`load_repo`.

In order: the history (:mod:`.history`); with ``szz``, the commits each fix fixes
(:mod:`.szz`); the git-ai and whogitit notes (:mod:`.ai_notes`); the reflection sidecars in the
repository's notes and the sessions they link to its commits
(:mod:`agent_reflection.load.sessions`). Each step is its own load, with its own summary.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent_reflection.load.git.ai_notes import load_ai_notes
from agent_reflection.load.git.history import count_new_commits, load_git_history
from agent_reflection.load.git.repo import GitSource, open_repo
from agent_reflection.load.sessions import load_git_sessions
from agent_reflection.progress import progress_bar, progress_enabled

if TYPE_CHECKING:
    import duckdb

    from agent_reflection.store.db import LoadSummary


@dataclass(frozen=True)
class RepoLoad:
    """The summary of each load :func:`load_repo` made (None: the step did not run or found
    nothing of its kind)."""

    #: ``commits`` and ``commit_files``.
    history: LoadSummary
    #: ``fix_inducing`` and ``fix_changes`` (only with ``szz``).
    szz: LoadSummary | None
    #: One per notes ref the repository has (git-ai, whogitit).
    ai_notes: tuple[LoadSummary, ...]
    #: The sidecars in ``refs/notes/reflection`` (None: the repository has none).
    notes: LoadSummary | None
    #: ``session_commits`` and ``session_outcomes`` (None: no sidecar of the repository).
    sessions: LoadSummary | None


def load_repo(
    con: duckdb.DuckDBPyConnection,
    repo: str | os.PathLike[str] | GitSource,
    *,
    rev: str | None = None,
    since: str | None = None,
    name: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    szz: bool = False,
    full: bool = False,
    progress: bool = False,
) -> RepoLoad:
    """Load the git repository ``repo`` (a clone, a bare repository, a ``.bundle`` file, or a
    :class:`GitSource` already opened) into ``con``: its history, with ``szz`` the commits
    each fix fixes, its notes and its sessions.

    ``rev``, ``since``, ``name``, ``cache_dir`` and ``full`` are those of
    :func:`.history.load_git_history`. ``progress``: draw progress bars on stderr (only when
    it is a terminal and ``CI`` is not set).
    """
    source = open_repo(repo, name=name, cache_dir=cache_dir)
    bars = progress and progress_enabled()
    total = count_new_commits(con, source, rev=rev, since=since, full=full) if bars else None
    with progress_bar(total=total, unit="commit", desc="git log", silent=not bars) as bar:
        history = load_git_history(
            con, source, rev=rev, since=since, progress=bar.update if bars else None, full=full
        )
    fixes = None
    if szz:
        from agent_reflection.load.git.szz import load_fix_inducing

        with progress_bar(total=None, unit="fix", desc="szz", silent=not bars) as bar:
            fixes = load_fix_inducing(con, source, progress=bar.update)
    notes_tips = history.detail["notes_tips"]
    ai_notes = load_ai_notes(con, source, tips=notes_tips)
    sessions = load_git_sessions(con, source, notes_tips=notes_tips)
    return RepoLoad(history, fixes, tuple(ai_notes), sessions.notes, sessions.sessions)
