"""hooks/gitstate.py: the porcelain v2 parser, the bounded git runner, the base choice."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from agent_reflection.hooks import gitstate
from agent_reflection.hooks.gitstate import GitFailed, git, parse_status_v2, read_git_state
from agent_reflection.names import name_text
from conftest import run_git

SAMPLE = (
    b"# branch.oid 3baf9c4005cf1e02edd7c1eed2c4d7e3879600bb\0# branch.head feature\0"
    b"# branch.upstream origin/feature\0# branch.ab +2 -1\0"
    b"2 R. N... 100644 100644 100644 587be6b 587be6b R100 new dir/g h\0a/b/f\0"
    b"1 .M N... 100644 100644 100644 975fbec 975fbec top file\0"
    b"u UU N... 100644 100644 100644 100644 aaa bbb ccc conflict.txt\0"
    b"? untracked/x y.txt\0"
)


def test_parse_status_v2() -> None:
    status = parse_status_v2(SAMPLE)
    assert status.branch == "feature"
    assert status.oid == "3baf9c4005cf1e02edd7c1eed2c4d7e3879600bb"
    assert (status.upstream, status.ahead) == ("origin/feature", 2)
    assert status.files == ("new dir/g h", "a/b/f", "top file", "conflict.txt", "untracked/x y.txt")


def test_parse_status_v2_initial_and_detached() -> None:
    status = parse_status_v2(b"# branch.oid (initial)\0# branch.head (detached)\0")
    assert (status.oid, status.branch, status.upstream, status.files) == (None, None, None, ())


def test_parse_status_v2_tolerates_truncation_and_junk() -> None:
    status = parse_status_v2(b"2 R. N... 100644 100644 100644 a b R100 only-new\0\xff\xfe\0zzz\0")
    # names as the file system takes them; their text for a record reads U+FFFD
    assert status.files == ("only-new", os.fsdecode(b"\xff\xfe"))
    assert [name_text(name) for name in status.files] == ["only-new", "\ufffd\ufffd"]


def test_runner_timeout_kills_the_child(tmp_path: Path) -> None:
    """The child would touch the marker 2 s in and then sleep 300 s; killed at 0.2 s, it does
    neither. The margins are wide so that a loaded machine cannot make a right runner fail:
    ``_run`` reaps the child, so had it not killed it the call would take 300 s, not under 60."""
    marker = tmp_path / "alive"
    start = time.monotonic()
    with pytest.raises(TimeoutError):
        gitstate._run(["sh", "-c", f"sleep 2; touch {marker}; sleep 300"], dict(os.environ), 0.2)
    assert time.monotonic() - start < 60
    time.sleep(max(0.0, start + 2.5 - time.monotonic()))  # past the moment the marker was due
    assert not marker.exists(), "the child was killed at the deadline"


def test_runner_reports_exit_code_and_streams() -> None:
    code, out, err = gitstate._run(
        ["sh", "-c", "echo out; echo err >&2; exit 3"], dict(os.environ), 5
    )
    assert (code, out, err) == (3, b"out\n", b"err\n")
    with pytest.raises(TimeoutError):
        gitstate._run(["sleep", "5"], dict(os.environ), 0.2)


def test_large_output_does_not_deadlock(tmp_path: Path) -> None:
    code, out, err = gitstate._run(
        ["sh", "-c", "head -c 300000 /dev/zero; head -c 300000 /dev/zero >&2"], dict(os.environ), 10
    )
    assert (code, len(out), len(err)) == (0, 300000, 300000)


def test_git_failure_names_the_command(tmp_path: Path) -> None:
    with pytest.raises(GitFailed, match="`git rev-parse` failed"):
        git(["rev-parse", "--show-toplevel"], str(tmp_path / "missing"))


def test_feature_branch_without_upstream_diffs_against_main(git_repo: Path) -> None:
    run_git(git_repo, "checkout", "-q", "-b", "topic")
    (git_repo / "a.py").write_text("a\n")
    run_git(git_repo, "add", "a.py")
    run_git(git_repo, "commit", "-q", "-m", "a")
    state = read_git_state(str(git_repo))
    assert (state.branch, state.files, state.problems) == ("topic", ("a.py",), ())
    run_git(git_repo, "checkout", "-q", "main")  # on the base branch itself: nothing committed
    assert read_git_state(str(git_repo)).files == ()


def test_master_is_a_base_too(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    run_git(repo, "init", "-q", "-b", "master")
    (repo / "x").write_text("x")
    run_git(repo, "add", "x")
    run_git(repo, "commit", "-q", "-m", "x")
    run_git(repo, "checkout", "-q", "-b", "work")
    (repo / "y").write_text("y")
    run_git(repo, "add", "y")
    run_git(repo, "commit", "-q", "-m", "y")
    assert read_git_state(str(repo)).files == ("y",)
