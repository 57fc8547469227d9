"""Shared fixtures. ``shared_dir`` is ../shared/ beside the repo; tests that need it skip
with a clear reason when it is absent (a fresh machine without the data)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from agent_reflection.experiments.preregistration import Preregistration, load_preregistration

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DIR = Path(os.environ.get("AGENT_REFLECTION_SHARED", REPO_ROOT.parent / "shared"))


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not (SHARED_DIR / "README.md").is_file():
        pytest.skip(
            f"../shared/ real data not present at {SHARED_DIR} (set AGENT_REFLECTION_SHARED)"
        )
    return SHARED_DIR


def run_git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Run real git in ``repo`` with a fixed identity and clock-free config."""
    base = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Test Author",
        "GIT_AUTHOR_EMAIL": "author@example.com",
        "GIT_COMMITTER_NAME": "Test Committer",
        "GIT_COMMITTER_EMAIL": "committer@example.com",
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(repo),
    }
    out = subprocess.run(
        ["git", *args], cwd=repo, env={**base, **(env or {})}, check=True,
        capture_output=True, text=True,
    )  # fmt: skip
    return out.stdout


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """An empty real git repository with one initial commit on branch ``main``."""
    repo = tmp_path / "repo"
    repo.mkdir()
    run_git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("hello\n")
    run_git(repo, "add", "README.md")
    run_git(repo, "commit", "-q", "-m", "initial commit")
    return repo


@pytest.fixture(scope="session")
def p1_small_prereg() -> Preregistration:
    """The registered file with a smallest useful AUC of 0.6 (130 rows per class) instead of the
    registered 0.55 (522): P1's decision machinery is the same, the samples four times smaller."""
    registered = load_preregistration()
    return replace(registered, p1=replace(registered.p1, smallest_useful_auc=0.6))
