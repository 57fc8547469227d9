"""Session -> commits, exactly: the SessionStart, Stop and post-commit hooks as real
subprocesses on real repositories (JSON on stdin, git running the installed hooks)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hook_harness import NOTES_REF, POST_COMMIT_COMMAND, GitLab, run_hook

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture
def lab(tmp_path: Path) -> GitLab:
    return GitLab(tmp_path)


def test_a_session_with_commits_records_exactly_the_commits_it_made(lab: GitLab) -> None:
    repo = lab.init_repo(lab.tmp / "repo")
    start = lab.git(repo, "rev-parse", "HEAD").strip()
    lab.start(repo, "sess-a")
    (repo / "src").mkdir()
    (repo / "src" / "one.py").write_text("ONE = 1\n")
    first = lab.commit(repo, "agent: one")
    (repo / "src" / "two.py").write_text("TWO = 2\n")
    second = lab.commit(repo, "agent: two")
    (repo / "src" / "one.py").write_text("ONE = 11\n")  # left uncommitted
    (repo / "README.md").unlink()  # deleted, uncommitted
    record = lab.stop(repo, "sess-a")
    git = record["git"]
    assert git["branch"] == "main"
    assert git["head_start"] == start
    assert git["head_stop"] == second
    assert git["commits"] == [first, second]  # oldest first
    blob = lab.git(repo, "hash-object", "src/one.py").strip()
    assert git["uncommitted"] == [
        {"path": "README.md", "blob": None},
        {"path": "src/one.py", "blob": blob},
    ]
    # The session's own commits carry no note: nothing of theirs was uncommitted at a stop.
    assert lab.note(repo, first) is None and lab.note(repo, second) is None


def test_uncommitted_work_committed_later_by_a_human_gets_the_note(lab: GitLab) -> None:
    repo = lab.init_repo(lab.tmp / "repo")
    lab.start(repo, "sess-b")
    (repo / "app.py").write_text("print('agent')\n")
    (repo / "notes.txt").write_text("scratch\n")
    record = lab.stop(repo, "sess-b")
    assert record["git"]["commits"] == []
    # Later a human commits one of the files (as the agent left it) and another of their own.
    (repo / "human.py").write_text("x = 1\n")
    sha = lab.commit(repo, "human: ship it", "app.py", "human.py")
    note = lab.note(repo, sha)
    assert note is not None and note["notes_version"] == 1
    assert [s["session_id"] for s in note["sidecars"]] == ["sess-b"]
    assert note["sidecars"][0] == record  # the sidecar itself travels in the note
    # A commit holding none of the session's blobs gets no note.
    (repo / "notes.txt").write_text("edited by the human first\n")
    other = lab.commit(repo, "human: notes", "notes.txt")
    assert lab.note(repo, other) is None


def test_only_matching_blobs_count_and_the_newest_matching_sidecar_is_kept(lab: GitLab) -> None:
    repo = lab.init_repo(lab.tmp / "repo")
    lab.start(repo, "sess-c")
    (repo / "a.py").write_text("v1\n")
    lab.stop(repo, "sess-c")
    (repo / "a.py").write_text("v2\n")
    (repo / "b.py").write_text("b\n")
    second = lab.stop(repo, "sess-c")
    lab.commit(repo, "human", "a.py")  # a.py at v2: only the second stop saw that blob
    note = lab.note(repo)
    assert note is not None and note["sidecars"] == [second]


def test_two_sessions_in_two_worktrees_each_note_names_its_own_session(lab: GitLab) -> None:
    repo = lab.init_repo(lab.tmp / "repo")
    other = lab.tmp / "other-tree"
    lab.git(repo, "worktree", "add", "-q", "-b", "feature", str(other))
    (other / ".reflection").mkdir()  # excluded through the shared info/exclude already
    lab.start(repo, "sess-main")
    lab.start(other, "sess-feature")
    (repo / "shared.py").write_text("main version\n")
    (other / "shared.py").write_text("feature version\n")
    (other / "feature.py").write_text("f\n")
    main_record = lab.stop(repo, "sess-main")
    feature_record = lab.stop(other, "sess-feature")
    assert main_record["git"]["branch"] == "main"
    assert feature_record["git"]["branch"] == "feature"
    main_sha = lab.commit(repo, "main work", "shared.py")
    feature_sha = lab.commit(other, "feature work", "shared.py", "feature.py")
    assert lab.noted_sessions(repo, main_sha) == ["sess-main"]
    assert lab.noted_sessions(repo, feature_sha) == ["sess-feature"]
    # The same session id started in one tree and stopped in the other has no head_start.
    lab.start(repo, "sess-roaming")
    (other / "roam.py").write_text("r\n")
    assert lab.stop(other, "sess-roaming")["git"]["head_start"] is None


def test_a_second_session_merges_into_the_commits_note(lab: GitLab) -> None:
    repo = lab.init_repo(lab.tmp / "repo")
    lab.start(repo, "sess-1")
    (repo / "one.py").write_text("1\n")
    lab.stop(repo, "sess-1")
    lab.start(repo, "sess-2")
    (repo / "two.py").write_text("2\n")
    lab.stop(repo, "sess-2")
    lab.commit(repo, "both", "one.py", "two.py")
    assert lab.noted_sessions(repo) == ["sess-1", "sess-2"]


def test_a_note_larger_than_one_command_line_argument_arrives_whole(lab: GitLab) -> None:
    """500 files with long names: the session's sidecar, and so the note, is larger than the
    128 KiB Linux allows a single argument and than a pipe's buffer; git reads it on stdin."""
    repo = lab.init_repo(lab.tmp / "repo")
    lab.start(repo, "sess-big")
    folder = repo / ("d" * 100)
    folder.mkdir()
    for i in range(500):
        (folder / f"{'f' * 120}{i:03d}.py").write_text(f"{i}\n")
    sidecar = lab.stop(repo, "sess-big")
    assert len(sidecar["git"]["uncommitted"]) == 500
    lab.commit(repo, "many files", folder.name)
    note = lab.note(repo)
    assert note is not None and len(json.dumps(note)) > 128 * 1024
    (noted,) = note["sidecars"]
    assert noted["session_id"] == "sess-big"
    assert noted["git"]["uncommitted"] == sidecar["git"]["uncommitted"]


def _amend_and_rebase(lab: GitLab, repo: Path) -> tuple[str, str, str]:
    """A noted commit, amended (message only), then rebased onto a new main commit; the three
    shas (noted, amended, rebased)."""
    lab.git(repo, "checkout", "-q", "-b", "topic")
    lab.start(repo, "sess-r")
    (repo / "work.py").write_text("w\n")
    lab.stop(repo, "sess-r")
    noted = lab.commit(repo, "topic work", "work.py")
    assert lab.noted_sessions(repo, noted) == ["sess-r"]
    # The sidecar folder is cleaned (a fresh clone, say): only the note carries the session.
    shutil.rmtree(repo / ".reflection")
    lab.git(repo, "commit", "-q", "--amend", "-m", "topic work, reworded")
    amended = lab.git(repo, "rev-parse", "HEAD").strip()
    lab.git(repo, "checkout", "-q", "main")
    (repo / "main.txt").write_text("m\n")
    lab.commit(repo, "main moves on", "main.txt")
    lab.git(repo, "checkout", "-q", "topic")
    lab.git(repo, "rebase", "-q", "main")
    rebased = lab.git(repo, "rev-parse", "HEAD").strip()
    assert len({noted, amended, rebased}) == 3
    return noted, amended, rebased


@pytest.mark.slow
def test_amend_and_rebase_lose_the_note_without_notes_rewrite_ref(lab: GitLab) -> None:
    repo = lab.init_repo(lab.tmp / "repo")
    noted, amended, rebased = _amend_and_rebase(lab, repo)
    assert lab.noted_sessions(repo, noted) == ["sess-r"]  # still on the old commit
    assert lab.note(repo, amended) is None
    assert lab.note(repo, rebased) is None


@pytest.mark.slow
def test_amend_and_rebase_keep_the_note_with_notes_rewrite_ref(lab: GitLab) -> None:
    repo = lab.init_repo(lab.tmp / "repo")
    lab.git(repo, "config", "notes.rewriteRef", NOTES_REF)
    noted, amended, rebased = _amend_and_rebase(lab, repo)
    assert lab.noted_sessions(repo, noted) == ["sess-r"]
    assert lab.noted_sessions(repo, amended) == ["sess-r"]
    assert lab.noted_sessions(repo, rebased) == ["sess-r"]


@pytest.mark.slow
def test_an_amend_that_also_matches_a_session_leaves_one_merged_json_note(lab: GitLab) -> None:
    # git copies the old note and the post-commit hook writes a fresh one: with the default
    # notes.rewriteMode (concatenate) that is two JSON objects; post-rewrite merges them.
    repo = lab.init_repo(lab.tmp / "repo")
    lab.git(repo, "config", "notes.rewriteRef", NOTES_REF)
    lab.start(repo, "sess-old")
    (repo / "a.py").write_text("a\n")
    lab.stop(repo, "sess-old")
    lab.commit(repo, "a", "a.py")
    lab.start(repo, "sess-new")
    (repo / "b.py").write_text("b\n")
    lab.stop(repo, "sess-new")
    lab.git(repo, "add", "b.py")
    lab.git(repo, "commit", "-q", "--amend", "--no-edit")
    text = lab.git(repo, "notes", f"--ref={NOTES_REF}", "show", "HEAD")
    assert text.count('"notes_version"') == 1
    assert lab.noted_sessions(repo) == ["sess-new", "sess-old"]


def test_a_repository_without_notes_or_sidecars_gets_no_notes_ref(lab: GitLab) -> None:
    repo = lab.init_repo(lab.tmp / "repo")
    (repo / "x.py").write_text("x\n")
    lab.commit(repo, "plain commit", "x.py")
    assert lab.git(repo, "for-each-ref", NOTES_REF) == ""
    assert lab.git(repo, "notes", f"--ref={NOTES_REF}", "list") == ""


@pytest.mark.slow
def test_notes_push_to_and_fetch_from_a_bare_remote(lab: GitLab) -> None:
    origin = lab.tmp / "origin.git"
    lab.git(lab.tmp, "init", "-q", "--bare", "-b", "main", str(origin))
    alice = lab.init_repo(lab.tmp / "alice")
    lab.git(alice, "remote", "add", "origin", str(origin))
    lab.start(alice, "sess-alice")
    (alice / "feature.py").write_text("feature\n")
    record = lab.stop(alice, "sess-alice")
    sha = lab.commit(alice, "feature", "feature.py")
    lab.git(alice, "push", "-q", "origin", "main")
    lab.git(alice, "push", "-q", "origin", NOTES_REF)
    bob = lab.tmp / "bob"
    lab.git(lab.tmp, "clone", "-q", str(origin), str(bob))
    assert lab.note(bob, sha) is None  # a clone does not fetch notes by itself
    lab.git(bob, "fetch", "-q", "origin", f"{NOTES_REF}:{NOTES_REF}")
    note = lab.note(bob, sha)
    assert note is not None and note["sidecars"] == [record]


@pytest.mark.slow
def test_install_is_idempotent_chains_an_existing_hook_and_uninstall_restores_it(
    lab: GitLab,
) -> None:
    repo = lab.init_repo(lab.tmp / "repo", hooks=False)
    hooks = repo / ".git" / "hooks"
    theirs = (
        "#!/bin/sh\n"
        'echo "theirs $(git rev-parse HEAD)" >> "$(git rev-parse --git-dir)/theirs.log"\n'
        "exit 3\n"
    )
    (hooks / "post-commit").write_text(theirs)
    (hooks / "post-commit").chmod(0o755)
    lab.install_git_hooks(repo)
    script = (hooks / "post-commit").read_text()
    again = lab.install_git_hooks(repo)
    assert "unchanged" in again.stdout and (hooks / "post-commit").read_text() == script
    assert (hooks / "post-commit.pre-reflection").read_text() == theirs
    lab.start(repo, "sess-h")
    (repo / "h.py").write_text("h\n")
    lab.stop(repo, "sess-h")
    sha = lab.commit(repo, "with both hooks", "h.py")  # their exit 3 does not fail it
    assert (repo / ".git" / "theirs.log").read_text() == f"theirs {sha}\n"
    assert lab.noted_sessions(repo, sha) == ["sess-h"]
    status = subprocess.run(
        [sys.executable, "-m", "agent_reflection", "hook", "status", "--project-dir", str(repo)],
        cwd=repo,
        env=lab.env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert f"git post-commit hook: installed at {hooks / 'post-commit'}" in status.stdout
    lab.git(repo, "config", "core.hooksPath", ".githooks")  # respected: installs there
    lab.install_git_hooks(repo)
    assert (repo / ".githooks" / "post-commit").exists()
    lab.git(repo, "config", "--unset", "core.hooksPath")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent_reflection",
            "hook",
            "uninstall",
            "--git",
            "--project-dir",
            str(repo),
        ],
        cwd=repo,
        env=lab.env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "restored" in done.stdout
    assert (hooks / "post-commit").read_text() == theirs
    assert not (hooks / "post-commit.pre-reflection").exists()
    assert not (hooks / "post-rewrite").exists()


def test_the_hooks_never_fail_a_commit_or_write_outside_their_work_tree(lab: GitLab) -> None:
    repo = lab.init_repo(lab.tmp / "repo")
    lab.start(repo, "sess-f")
    (repo / "f.py").write_text("f\n")
    lab.stop(repo, "sess-f")
    folder = repo / ".reflection" / "sidecars"
    (folder / "broken.reflection.json").write_text('{"schema": "reflection.v1", "uncommitted"')
    (folder / "fifo.reflection.json").unlink(missing_ok=True)
    os.mkfifo(folder / "fifo.reflection.json")  # never waited on
    before = _snapshot(lab.tmp, skip=repo)
    sha = lab.commit(repo, "commit with junk beside the sidecar", "f.py")
    assert lab.noted_sessions(repo, sha) == ["sess-f"]
    # An empty PATH: git still finds itself (it puts its exec-path first for hooks), and the
    # wrapper uses sh built-ins only, so the commit succeeds and is noted.
    (repo / "g.py").write_text("g\n")
    lab.stop(repo, "sess-f")
    git_bin = shutil.which("git")
    assert git_bin is not None
    no_path = {**lab.env, "PATH": str(lab.tmp / "empty-bin")}
    lab.git(repo, "add", "g.py")
    done = subprocess.run(
        [git_bin, "commit", "-q", "-m", "empty PATH"],
        cwd=repo,
        env=no_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert lab.noted_sessions(repo) == ["sess-f"]
    # The hook itself without git on PATH: one line on stderr, exit 0, nothing written.
    run = run_hook(b"", no_path, repo, command=POST_COMMIT_COMMAND)
    assert run.returncode == 0 and run.stdout == b""
    assert "git is not installed or not on PATH" in run.stderr
    assert _snapshot(lab.tmp, skip=repo) == before  # nothing written outside the work tree


def test_the_post_commit_hook_outside_a_repository_exits_zero(lab: GitLab) -> None:
    outside = lab.tmp / "plain"
    outside.mkdir()
    run = run_hook(b"", lab.env, outside, command=POST_COMMIT_COMMAND)
    assert run.returncode == 0 and run.stdout == b""
    assert "no note written" in run.stderr
    run = run_hook(b"junk\n", lab.env, outside, command=[*POST_COMMIT_COMMAND, "--rewrite"])
    assert run.returncode == 0 and run.stdout == b""
    assert list(outside.iterdir()) == []


def _snapshot(root: Path, skip: Path) -> set[str]:
    """Every path under ``root`` except those under ``skip`` and the state folder."""
    out = set()
    for dirpath, dirnames, filenames in os.walk(root):
        if Path(dirpath) == skip:
            dirnames.clear()
            continue
        out.update(os.path.join(dirpath, n) for n in filenames)
    return out
