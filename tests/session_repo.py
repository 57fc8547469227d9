"""A tiny real git repository with dated commits and reflection notes, for the session tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import run_git
from sidecar_samples import sidecar


def new_repo(path: Path) -> Path:
    """An empty repository on branch ``main`` (no commit yet: every commit gets its own date)."""
    path.mkdir(parents=True)
    run_git(path, "init", "-q", "-b", "main")
    return path


def commit(repo: Path, message: str, when: str, files: dict[str, str] | None = None) -> str:
    """Write ``files`` (path -> text), commit everything at ``when`` (ISO, UTC); its sha."""
    for name, text in (files or {}).items():
        target = repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    run_git(repo, "add", "-A")
    env = {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    run_git(repo, "commit", "-q", "--allow-empty", "-m", message, env=env)
    return run_git(repo, "rev-parse", "HEAD").strip()


def revert(repo: Path, sha: str, when: str) -> str:
    env = {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    run_git(repo, "revert", "--no-edit", sha, env=env)
    return run_git(repo, "rev-parse", "HEAD").strip()


def session_sidecar(session: str, repo: str, when: str, **changes: Any) -> dict[str, Any]:
    """A valid reflection.v1 record of ``session`` in ``repo`` stopped at ``when``."""
    return sidecar(
        0, session_id=session, repo=repo, task_ref=f"{repo}@main", timestamp=when, **changes
    )


def add_note(repo: Path, sha: str, *records: dict[str, Any], body: Any = None) -> None:
    """Attach a reflection note to ``sha`` (``body`` replaces the well-formed note)."""
    doc = {"notes_version": 1, "sidecars": list(records)} if body is None else body
    text = doc if isinstance(doc, str) else json.dumps(doc)
    run_git(repo, "notes", "--ref", "reflection", "add", "-f", "-m", text, sha)
