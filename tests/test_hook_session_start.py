"""The SessionStart hook as Claude Code runs it (JSON on stdin, a real subprocess), and what the
Stop hook makes of its record: ``git.head_start`` and the session's commits."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_reflection.hooks.paths import session_key
from agent_reflection.reflection.checks import is_oid
from agent_reflection.reflection.fields import OID_PATTERN
from hook_harness import SESSION_START_COMMAND, GitLab, run_hook

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture
def lab(tmp_path: Path) -> GitLab:
    return GitLab(tmp_path)


def _start_file(lab: GitLab, session: str) -> Path:
    return lab.state / f"{session_key(session)}.start.json"


def _event(repo: Path, session: str = "s-1", source: str = "startup") -> dict[str, str]:
    return {
        "session_id": session,
        "source": source,
        "cwd": str(repo),
        "hook_event_name": "SessionStart",
    }


def test_the_start_record_names_head_branch_and_work_tree(lab: GitLab) -> None:
    repo = lab.init_repo(lab.tmp / "repo", hooks=False)
    run = lab.start(repo, "s-1")
    assert run.stderr == ""
    record = json.loads(_start_file(lab, "s-1").read_text())
    assert record["head"] == lab.git(repo, "rev-parse", "HEAD").strip()
    assert record["branch"] == "main"
    assert record["root"] == str(repo)
    assert record["source"] == "startup" and record["session_id"] == "s-1"
    # Only the state file was written: the work tree is untouched.
    assert lab.git(repo, "status", "--porcelain", "--ignored") == ""
    assert sorted(p.name for p in lab.state.iterdir()) == [f"{session_key('s-1')}.start.json"]


def test_a_resumed_session_keeps_the_head_it_first_started_from(lab: GitLab) -> None:
    repo = lab.init_repo(lab.tmp / "repo", hooks=False)
    first = lab.git(repo, "rev-parse", "HEAD").strip()
    lab.start(repo, "s-1")
    (repo / "a.py").write_text("a\n")
    made = lab.commit(repo, "during the session", "a.py")
    lab.start(repo, "s-1", source="compact")
    lab.start(repo, "s-1", source="resume")
    assert json.loads(_start_file(lab, "s-1").read_text())["head"] == first
    git = lab.stop(repo, "s-1")["git"]
    assert (git["head_start"], git["head_stop"], git["commits"]) == (first, made, [made])


def test_detached_head_and_a_repository_without_commits(lab: GitLab) -> None:
    repo = lab.init_repo(lab.tmp / "repo", hooks=False)
    head = lab.git(repo, "rev-parse", "HEAD").strip()
    lab.git(repo, "checkout", "-q", "--detach")
    lab.start(repo, "s-detached")
    assert json.loads(_start_file(lab, "s-detached").read_text())["branch"] is None
    git = lab.stop(repo, "s-detached")["git"]
    assert (git["branch"], git["head_start"], git["head_stop"]) == (None, head, head)

    empty = lab.tmp / "empty"
    empty.mkdir()
    lab.git(empty, "init", "-q", "-b", "trunk")
    lab.start(empty, "s-empty")
    record = json.loads(_start_file(lab, "s-empty").read_text())
    assert (record["head"], record["branch"]) == (None, "trunk")
    (empty / "first.py").write_text("1\n")
    git = lab.stop(empty, "s-empty")["git"]
    assert (git["branch"], git["head_start"], git["head_stop"], git["commits"]) == (
        "trunk",
        None,
        None,
        [],
    )
    blob = lab.git(empty, "hash-object", "first.py").strip()
    assert git["uncommitted"] == [{"path": "first.py", "blob": blob}]


def test_names_that_are_not_utf_8_through_start_stop_and_commit(lab: GitLab) -> None:
    """A work tree, a branch and a file whose names hold a Latin-1 byte: the start record
    reads back exactly (the stop finds its HEAD), the sidecar records each name's text (U+FFFD
    for the byte, as the git loader reads it) with the file's real blob (it was recorded as
    deleted), and the post-commit hook notes the session on the commit of that file (it
    compared the text with the raw name). Before, the Stop hook wrote no sidecar at all."""
    repo = lab.init_repo(lab.tmp / os.fsdecode(b"caf\xe9-work"))
    lab.git(repo, "checkout", "-q", "-b", os.fsdecode(b"br\xe9"))
    head = lab.git(repo, "rev-parse", "HEAD").strip()
    lab.start(repo, "s-latin")
    name = os.fsdecode(b"caf\xe9.py")
    (repo / name).write_text("1\n")
    (repo / "plain.py").write_text("2\n")
    record = lab.stop(repo, "s-latin")
    git = record["git"]
    assert (record["repo"], git["branch"], git["head_start"]) == (
        "caf\ufffd-work",
        "br\ufffd",
        head,
    )
    blobs = {f: lab.git(repo, "hash-object", "--", f).strip() for f in (name, "plain.py")}
    assert git["uncommitted"] == [
        {"path": "caf\ufffd.py", "blob": blobs[name]},
        {"path": "plain.py", "blob": blobs["plain.py"]},
    ]
    lab.commit(repo, "the Latin-1 file only", name)
    assert lab.noted_sessions(repo) == ["s-latin"]


def test_outside_a_repository_or_without_git_nothing_is_recorded(lab: GitLab) -> None:
    plain = lab.tmp / "plain"
    plain.mkdir()
    run = run_hook(_event(plain), lab.env, plain, command=SESSION_START_COMMAND)
    assert (run.returncode, run.stdout) == (0, b"")
    assert "not a git work tree" in run.stderr and not lab.state.exists()
    repo = lab.init_repo(lab.tmp / "repo", hooks=False)
    no_git = {**lab.env, "PATH": str(lab.tmp / "empty-bin")}
    run = run_hook(_event(repo), no_git, repo, command=SESSION_START_COMMAND)
    assert (run.returncode, run.stdout) == (0, b"")
    assert "git is not installed or not on PATH" in run.stderr and not lab.state.exists()
    # The Stop hook without git still writes its sidecar, without the git object (degraded).
    from hook_harness import load, payload, sidecars

    (repo / ".reflection").mkdir()
    stop = run_hook(payload(repo, "s-1"), no_git, repo)
    assert (stop.returncode, stop.stdout) == (0, b"")
    (written,) = sidecars(repo / ".reflection" / "sidecars")
    record = load(written)
    assert "git" not in record and record["provenance"]["degraded"] is True


@pytest.mark.parametrize(
    "stdin", [b"", b"not json", b"[1, 2]", b'{"source": "startup"}', b'{"session_id": ""}']
)
def test_bad_events_exit_zero_and_record_nothing(lab: GitLab, stdin: bytes) -> None:
    repo = lab.init_repo(lab.tmp / "repo", hooks=False)
    run = run_hook(stdin, lab.env, repo, command=SESSION_START_COMMAND)
    assert (run.returncode, run.stdout) == (0, b"")
    assert run.stderr.startswith("reflect-session-start-hook: ")
    assert not lab.state.exists()


def test_mode_off_records_nothing_and_mode_flag_applies_when_unset(lab: GitLab) -> None:
    repo = lab.init_repo(lab.tmp / "repo", hooks=False)
    off = {**lab.env, "REFLECTION_MODE": "off"}
    run_hook(_event(repo), off, repo, command=SESSION_START_COMMAND)
    unset = {k: v for k, v in lab.env.items() if k != "REFLECTION_MODE"}
    run_hook(_event(repo), unset, repo, command=SESSION_START_COMMAND)
    assert not lab.state.exists()
    run_hook(_event(repo), unset, repo, command=[*SESSION_START_COMMAND, "--mode", "solo"])
    assert _start_file(lab, "s-1").exists()


def test_a_corrupt_state_file_is_replaced_and_never_fails_the_stop(lab: GitLab) -> None:
    repo = lab.init_repo(lab.tmp / "repo", hooks=False)
    lab.state.mkdir()
    _start_file(lab, "s-1").write_text('{"version": 1, "session_id": "s-1", "root": ')
    (repo / "x.py").write_text("x\n")
    record = lab.stop(repo, "s-1")  # unreadable start record: head_start unknown
    assert record["git"]["head_start"] is None
    assert record["git"]["head_stop"] == lab.git(repo, "rev-parse", "HEAD").strip()
    lab.start(repo, "s-1")  # replaced by a good one
    assert json.loads(_start_file(lab, "s-1").read_text())["head"] == record["git"]["head_stop"]
    # A folder where the state file goes: the hook warns, exits 0, writes nothing else.
    _start_file(lab, "s-2").mkdir()
    run = run_hook(_event(repo, "s-2"), lab.env, repo, command=SESSION_START_COMMAND)
    assert (run.returncode, run.stdout) == (0, b"")
    assert "reflect-session-start-hook: internal error, nothing recorded" in run.stderr


def test_the_hook_imports_only_light_standard_library_modules(lab: GitLab) -> None:
    repo = lab.init_repo(lab.tmp / "repo", hooks=False)
    env = {**lab.env, "PYTHONPROFILEIMPORTTIME": "1"}
    # Imported by name (as the console script does), so the profile lists the module.
    script = "import sys; from agent_reflection.hooks.session_start import main; sys.exit(main())"
    run = run_hook(_event(repo), env, repo, command=[sys.executable, "-c", script])
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in run.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "agent_reflection.hooks.session_start" in imported
    # json (and with it re) parses the event, as in every hook: the console script that the pip
    # bundled with Python 3.11's venv writes imports re before the hook runs anyway
    assert "json" in imported
    # git runs through subprocess.run, as in the Stop hook (+4 to 6 ms, under the 10 ms bar)
    heavy = {"typing", "dataclasses", "pathlib", "tomllib", "duckdb"}
    assert not heavy & imported
    assert _start_file(lab, "s-1").exists()


@given(
    st.text("0123456789abcdefABCDEFg\n", max_size=70)
    | st.sampled_from(["a" * 40, "a" * 64, "a" * 40 + "\n", "a" * 41, "a" * 63, "A" * 40])
)
def test_the_oid_check_without_re_matches_the_schema_pattern(text: str) -> None:
    assert is_oid(text) == bool(re.search(OID_PATTERN, text))


def test_state_files_of_other_sessions_are_not_read(lab: GitLab) -> None:
    repo = lab.init_repo(lab.tmp / "repo", hooks=False)
    lab.start(repo, "s-a")
    path = _start_file(lab, "s-a")
    os.replace(path, _start_file(lab, "s-b"))  # s-b's file holds s-a's record
    (repo / "y.py").write_text("y\n")
    assert lab.stop(repo, "s-b")["git"]["head_start"] is None
