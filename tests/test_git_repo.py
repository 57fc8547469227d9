"""Resolving what a git load reads (agent_reflection.load.git.repo)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_reflection.load.git.history import count_new_commits
from agent_reflection.load.git.repo import (
    CACHE_ENV,
    DEFAULT_REVS,
    InvalidRevision,
    NotAGitRepository,
    cache_root,
    open_repo,
    pin_revisions,
    repo_name,
    resolve_revisions,
    revisions,
)
from agent_reflection.store.db import connect
from conftest import run_git


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/x/flask", "flask"),
        ("/x/flask.git", "flask"),
        ("/x/flask.bundle", "flask"),
        ("/x/.git", ".git"),
        ("/x/my.repo.git", "my.repo"),
    ],
)
def test_repo_name(path: str, name: str) -> None:
    assert repo_name(Path(path)) == name


def test_sub_folder_of_a_clone_is_named_after_the_clone(git_repo: Path) -> None:
    sub = git_repo / "docs"
    sub.mkdir()
    source = open_repo(sub)
    assert (source.name, source.bundle) == ("repo", None)
    assert open_repo(sub, name="custom").name == "custom"


def test_cache_root_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "env"))
    assert cache_root(tmp_path / "arg") == tmp_path / "arg"
    assert cache_root() == tmp_path / "env"
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "agent-reflection"


def test_bundle_is_cloned_once(git_repo: Path, tmp_path: Path) -> None:
    bundle = tmp_path / "b.bundle"
    run_git(git_repo, "bundle", "create", str(bundle), "--all")
    first = open_repo(bundle, cache_dir=tmp_path / "cache")
    marker = first.path / "marker"
    marker.write_text("kept")
    second = open_repo(bundle, cache_dir=tmp_path / "cache")
    assert second.path == first.path and marker.exists()
    assert (second.name, second.bundle, second.origin) == ("b", bundle, str(bundle))
    with connect(":memory:") as con:
        assert count_new_commits(con, second, full=True) == 1


def test_bundle_is_cloned_under_a_relative_cache_folder(
    git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--cache-dir cache`` names a folder of the current one: the clone lands there, not in
    a folder git made relative to where it ran (it did: every load cloned again, and failed)."""
    bundle = tmp_path / "b.bundle"
    run_git(git_repo, "bundle", "create", str(bundle), "--all")
    monkeypatch.chdir(tmp_path)
    source = open_repo(bundle, cache_dir="cache")
    assert source.path.is_absolute() and source.path.parent == tmp_path / "cache" / "git-bundles"
    assert (source.path / "HEAD").is_file()
    assert [p.name for p in (tmp_path / "cache" / "git-bundles").iterdir()] == [source.path.name]
    monkeypatch.setenv(CACHE_ENV, "env-cache")
    assert cache_root() == tmp_path / "env-cache"
    with connect(":memory:") as con:
        assert count_new_commits(con, source, full=True) == 1


def test_bundle_without_its_prerequisites(git_repo: Path, tmp_path: Path) -> None:
    (git_repo / "x").write_text("x\n")
    run_git(git_repo, "add", "x")
    run_git(git_repo, "commit", "-q", "-m", "second")
    bundle = tmp_path / "incremental.bundle"
    run_git(git_repo, "bundle", "create", str(bundle), "HEAD~1..main")
    with pytest.raises(NotAGitRepository, match="prerequisites"):
        open_repo(bundle, cache_dir=tmp_path / "cache")


def test_default_revisions(git_repo: Path, tmp_path: Path) -> None:
    assert revisions(open_repo(git_repo), None) == [*DEFAULT_REVS, "HEAD"]
    bare = tmp_path / "bare.git"
    run_git(tmp_path, "init", "-q", "--bare", str(bare))
    assert revisions(open_repo(bare), None) == list(DEFAULT_REVS)  # unborn HEAD left out
    with connect(":memory:") as con:
        assert count_new_commits(con, open_repo(bare), full=True) == 0


def test_revisions_are_checked(git_repo: Path) -> None:
    source = open_repo(git_repo)
    assert revisions(source, "main") == ["main"]
    assert revisions(source, "main ^main~0") == ["main", "^main~0"]
    with pytest.raises(InvalidRevision, match="is empty"):
        revisions(source, "  ")
    with pytest.raises(InvalidRevision, match="options are not revisions"):
        revisions(source, ["main", "--all"])


def test_pin_revisions_is_revisions_then_resolve_in_fewer_processes(
    git_repo: Path, tmp_path: Path
) -> None:
    """One git process pins the default revisions (HEAD a commit) or a checked ``--rev``; the
    answer is the two steps' own, also for a detached HEAD, a tag and an unborn HEAD."""
    run_git(git_repo, "tag", "v1")
    (git_repo / "x").write_text("x\n")
    run_git(git_repo, "add", "x")
    run_git(git_repo, "commit", "-q", "-m", "second")
    run_git(git_repo, "checkout", "-q", "--detach", "HEAD~1")
    bare = tmp_path / "unborn.git"
    run_git(tmp_path, "init", "-q", "--bare", str(bare))
    for folder, rev in [(git_repo, None), (git_repo, "v1..main"), (git_repo, "main"), (bare, None)]:
        source = open_repo(folder)
        revs = revisions(source, rev)
        assert pin_revisions(source, rev) == (revs, resolve_revisions(source, revs))
    with pytest.raises(InvalidRevision, match="is not a revision"):
        pin_revisions(open_repo(git_repo), "no-such-branch")
