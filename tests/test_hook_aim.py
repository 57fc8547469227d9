"""The Stop hook cannot be aimed (issue 13, item 8): where it writes is not the event's choice.

It writes only inside the git work tree that contains ``cwd`` (never inside ``.git``, even when
``cwd`` is inside ``.git``) or into an explicit ``REFLECTION_DIR``; outside a repository it does
nothing unless ``REFLECTION_DIR`` is an absolute folder; a symlink committed in the repository
cannot redirect its writes; a 10 MB ``session_id`` costs no more than a short one.
"""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest

from agent_reflection.hooks.paths import MAX_SESSION_CHARS, sanitise_session_id
from conftest import run_git
from hook_harness import HookRun, hook_env, load, payload, run_hook, sidecars


def ok(run: HookRun) -> HookRun:
    assert run.returncode == 0, run.stderr
    assert run.stdout == b"", run.stdout
    return run


def tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``root`` (symlinks not followed) with its (size, mtime_ns)."""
    found: dict[str, tuple[int, int]] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            st = os.lstat(path)
            found[os.path.relpath(path, root)] = (st.st_size, st.st_mtime_ns)
    return found


@pytest.fixture
def solo(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return hook_env(home, REFLECTION_MODE="solo", GIT_CEILING_DIRECTORIES=str(tmp_path))


def test_outside_a_repository_nothing_is_written(tmp_path: Path, solo: dict[str, str]) -> None:
    """As root, the old hook made `<cwd>/.reflection/sidecars` in whatever folder it was sent."""
    plain = tmp_path / "etc"
    plain.mkdir()
    (plain / "passwd").write_text("root:x:0:0\n")
    before = tree(tmp_path)
    for relative_dir in (None, "out", "../out"):  # a relative REFLECTION_DIR has no anchor here
        env = dict(solo)
        if relative_dir is not None:
            env["REFLECTION_DIR"] = relative_dir
        run = ok(run_hook(payload(plain), env, tmp_path / "home"))
        assert "not inside a git work tree: nothing written" in run.stderr
    assert tree(tmp_path) == before


@pytest.mark.parametrize("inside", [".git", ".git/objects", ".git/refs/heads"])
def test_cwd_inside_dot_git_writes_to_the_work_tree_not_into_git(
    git_repo: Path, solo: dict[str, str], inside: str
) -> None:
    git_before = set(tree(git_repo / ".git"))
    ok(run_hook(payload(git_repo / inside), solo, git_repo / inside))
    assert set(tree(git_repo / ".git")) == git_before, "the hook wrote inside .git"
    [sidecar] = sidecars(git_repo / ".reflection" / "sidecars")
    assert load(sidecar)["repo"] == "repo"


def test_reflection_dir_into_dot_git_is_refused(git_repo: Path, solo: dict[str, str]) -> None:
    git_before = set(tree(git_repo / ".git"))
    solo["REFLECTION_DIR"] = ".git/reflections"
    run = ok(run_hook(payload(git_repo), solo, git_repo))
    assert "inside .git, refused" in run.stderr
    assert set(tree(git_repo / ".git")) == git_before


@pytest.mark.parametrize("link_at", [".reflection", ".reflection/sidecars"])
def test_a_committed_symlink_cannot_redirect_the_writes(
    git_repo: Path, solo: dict[str, str], tmp_path: Path, link_at: str
) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious\n")
    link = git_repo / link_at
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(victim, target_is_directory=True)
    run_git(git_repo, "add", "-A")
    run_git(git_repo, "commit", "-qm", "a symlinked output folder")
    before = tree(victim)
    run = ok(run_hook(payload(git_repo), solo, git_repo))
    assert tree(victim) == before
    assert "not followed" in run.stderr and "nothing written" in run.stderr
    assert link.is_symlink()


def test_a_symlinked_self_report_is_not_read(
    git_repo: Path, solo: dict[str, str], tmp_path: Path
) -> None:
    """Reads inside the work tree do not follow symlinks either (no file is read through one)."""
    secret = tmp_path / "secret.json"
    secret.write_text('{"confidence": 0.9}')
    (git_repo / ".reflection").mkdir()
    (git_repo / ".reflection" / "input.json").symlink_to(secret)
    run = ok(run_hook(payload(git_repo), solo, git_repo))
    assert "not followed" in run.stderr
    [sidecar] = sidecars(git_repo / ".reflection" / "sidecars")
    assert load(sidecar)["confidence"] is None


def test_absolute_reflection_dir_inside_the_repo_is_checked_too(
    git_repo: Path, solo: dict[str, str], tmp_path: Path
) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (git_repo / "notes").symlink_to(victim, target_is_directory=True)
    solo["REFLECTION_DIR"] = str(git_repo / "notes" / "reflections")
    ok(run_hook(payload(git_repo), solo, git_repo))
    assert list(victim.iterdir()) == []


def test_sanitising_a_10_mb_session_id_looks_at_a_bounded_prefix() -> None:
    """The old sanitiser walked all 10 MB character by character (> 10 s, ~1 GB of lists)."""
    huge = "a/" * 5_000_000
    tracemalloc.start()
    try:
        name = sanitise_session_id(huge)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert name == sanitise_session_id(huge[:1000])
    assert len(name) == MAX_SESSION_CHARS
    assert peak < 100_000, f"peak {peak} bytes: the whole id was processed"


def test_a_10_mb_session_id_still_gives_one_sidecar(git_repo: Path, solo: dict[str, str]) -> None:
    huge = "s" * 10_000_000
    ok(run_hook(payload(git_repo, session=huge), solo, git_repo))
    [sidecar] = sidecars(git_repo / ".reflection" / "sidecars")
    assert sidecar.name.startswith("s" * MAX_SESSION_CHARS + "-")
    assert len(load(sidecar)["session_id"]) == 256
