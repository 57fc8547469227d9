"""Clean repositories (issue 33, item 3): the workspace's generated files stay out of commits.

In a fresh clone of a real repository (sqlite-utils, from ``../shared/``; its ``.gitignore``
ignores ``.claude/``), ``reflect hook install``, sessions through the real hook subprocesses,
loads and a run leave ``git status --porcelain`` showing only what is meant to be committed:
``CLAUDE.md`` (the self-report block) and ``.agent-reflection.toml`` (the workspace marker);
``.claude/settings.json`` too where git does not ignore it, and the installer warns, with the
``--local`` alternative, where it does. With ``--local`` nothing at all is new.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from agent_reflection.simulate.installed import count_degraded, simulate_installed_session
from conftest import run_git, run_reflect
from hook_harness import hook_env

VENV_BIN = Path(sys.executable).parent


def session_env(home: Path) -> dict[str, str]:
    env = hook_env(home, XDG_STATE_HOME=str(home / "state"), XDG_CACHE_HOME=str(home / "cache"))
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env['PATH']}"
    for name in ("REFLECT_WORKSPACE", "REFLECT_DB", "REFLECT_REPORTS"):
        env.pop(name, None)
    return env


def reflect(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = run_reflect(*args, cwd=cwd, env=env, timeout=600)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done


def status(repo: Path) -> set[str]:
    out = run_git(repo, "status", "--porcelain", "--untracked-files=all")
    return {line[3:] for line in out.splitlines()}


@pytest.fixture
def clone(shared_dir: Path, tmp_path: Path) -> Path:
    bundle = shared_dir / "data" / "git" / "sqlite-utils.bundle"
    if not bundle.is_file():
        pytest.skip(f"{bundle} not present")
    repo = tmp_path / "sqlite-utils"
    run_git(tmp_path, "clone", "-q", "--branch", "main", str(bundle), str(repo))
    return repo


def _sessions(repo: Path, env: dict[str, str], n: int) -> tuple[list[Path], set[str]]:
    rng = random.Random(7)
    sidecars: list[Path] = []
    edits: set[str] = set()
    for i in range(n):
        edit = {f"sqlite_utils/agent_change_{i}.py": f"CHANGE = {i}\n"}
        edits.update(edit)
        done = simulate_installed_session(repo, f"week-{i}", edits=edit, env=env, rng=rng)
        sidecars.extend(done.sidecars)
    return sidecars, edits


@pytest.mark.slow
def test_install_sessions_loads_and_a_run_leave_only_files_to_commit(
    clone: Path, tmp_path: Path
) -> None:
    env = session_env(tmp_path / "home")
    before = status(clone)
    installed = reflect("hook", "install", cwd=clone, env=env).stdout
    assert "/.reflection/" in installed and "info/exclude" in installed
    # sqlite-utils' .gitignore has `.claude/`: the shared settings file would not be shared
    assert "warning: .claude/settings.json is ignored by git here (.gitignore:" in installed
    assert "--local" in installed
    sidecars, edits = _sessions(clone, env, 3)
    assert count_degraded(sidecars) == (0, 3)
    docs = clone / "docs"  # commands from a subfolder find the same workspace
    loaded = json.loads(
        reflect("load", "sidecars", "../.reflection/sidecars", "--json", cwd=docs, env=env).stdout
    )
    assert loaded["db"] == str(clone / ".reflection" / "reflection.duckdb")
    assert loaded["loaded"] == 3
    reflect("load", "git", str(clone), cwd=docs, env=env)
    reflect("run", "p1", "--run-id", "week", cwd=docs, env=env)
    assert (clone / ".reflection" / "reports" / "week" / "p1" / "results.json").is_file()
    new = status(clone) - before - edits
    assert new == {".agent-reflection.toml", "CLAUDE.md"}, new


def test_local_install_leaves_nothing_new(git_repo: Path, tmp_path: Path) -> None:
    env = session_env(tmp_path / "home")
    reflect("hook", "install", "--local", cwd=git_repo, env=env)
    sidecars, edits = _sessions(git_repo, env, 1)
    assert count_degraded(sidecars) == (0, 1)
    assert status(git_repo) - edits == set()


def test_project_install_lists_what_to_commit_and_nothing_else(
    git_repo: Path, tmp_path: Path
) -> None:
    env = session_env(tmp_path / "home")
    out = reflect("hook", "install", cwd=git_repo, env=env).stdout
    assert "To commit (shared with the team): .claude/settings.json, CLAUDE.md, " in out
    assert "warning" not in out
    _, edits = _sessions(git_repo, env, 1)
    assert status(git_repo) - edits == {
        ".claude/settings.json",
        "CLAUDE.md",
        ".agent-reflection.toml",
    }
    again = reflect("hook", "install", cwd=git_repo, env=env).stdout
    assert "Kept generated files out of commits" not in again  # already there: added once
    exclude = (git_repo / ".git" / "info" / "exclude").read_text()
    assert exclude.count("/.reflection/") == 1


def test_outside_a_repository_nothing_is_marked(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    out = reflect("hook", "install", cwd=folder, env=session_env(tmp_path / "home")).stdout
    assert "is not a git repository: no workspace marked, nothing excluded" in out
    assert not (folder / ".agent-reflection.toml").exists()
