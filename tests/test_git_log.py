"""The incremental parser of ``git log -z --numstat`` output (agent_reflection.load.git.log)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agent_reflection.load.git.log import (
    LOG_FLAGS,
    LOG_FORMAT,
    FileChange,
    LogParser,
    MalformedLogOutput,
    parse_date,
)
from conftest import run_git


def git_log_bytes(repo: Path) -> bytes:
    return subprocess.run(
        ["git", "log", *LOG_FLAGS, f"--format={LOG_FORMAT}"],
        cwd=repo,
        capture_output=True,
        check=True,
    ).stdout


@pytest.fixture
def history(git_repo: Path) -> Path:
    (git_repo / "a.txt").write_text("".join(f"{i}\n" for i in range(30)))
    run_git(git_repo, "add", "a.txt")
    run_git(git_repo, "commit", "-q", "-m", "Add a\n\nwith a body\nof two lines")
    run_git(git_repo, "mv", "a.txt", "b.txt")
    run_git(git_repo, "commit", "-q", "-m", "Move a")
    (git_repo / "bin").write_bytes(b"\x00\x01\x02")
    run_git(git_repo, "add", "bin")
    run_git(git_repo, "commit", "-q", "-m", "bin")
    run_git(git_repo, "commit", "-q", "--allow-empty", "-m", "empty")
    return git_repo


def test_parses_a_real_log(history: Path) -> None:
    parser = LogParser()
    commits = parser.feed(git_log_bytes(history)) + parser.finish()
    assert [c.subject for c in commits] == ["empty", "bin", "Move a", "Add a", "initial commit"]
    empty, binary, moved, added, initial = commits
    assert empty.files == ()
    assert binary.files == (FileChange("bin", None, None, None, True),)
    assert moved.files == (FileChange("b.txt", "a.txt", 0, 0, False),)
    assert added.files == (FileChange("a.txt", None, 30, 0, False),)
    assert added.body == "with a body\nof two lines\n"
    assert initial.parents == () and moved.parents == (added.sha,)
    assert added.author_email == "author@example.com"


def test_parser_is_chunk_boundary_independent(history: Path) -> None:
    raw = git_log_bytes(history)
    whole = LogParser()
    expected = whole.feed(raw) + whole.finish()
    bytewise = LogParser()
    got = [c for i in range(len(raw)) for c in bytewise.feed(raw[i : i + 1])] + bytewise.finish()
    assert got == expected and len(got) == 5


def test_a_commit_is_handed_out_only_when_the_next_starts(history: Path) -> None:
    raw = git_log_bytes(history)
    second = raw.index(b"\x1e", 1)
    parser = LogParser()
    assert parser.feed(raw[:second]) == []  # the first commit might still get files
    assert len(parser.feed(raw[second:])) == 4  # the last one waits for finish()
    assert len(parser.finish()) == 1


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"1700000000 +0130", (1700000000, 90)),
        (b"1700000000 -0800", (1700000000, -480)),
        (b"0 +0000", (0, 0)),
        (b" 42 +1400 ", (42, 840)),
    ],
)
def test_parse_date(raw: bytes, expected: tuple[int, int]) -> None:
    assert parse_date(raw) == expected


def test_malformed_streams_are_errors() -> None:
    with pytest.raises(MalformedLogOutput, match="before any commit header"):
        LogParser().feed(b"1\t2\tpath\x00")
    with pytest.raises(MalformedLogOutput, match="malformed numstat"):
        LogParser().feed(b"\x1e" + b"a" * 40 + b"\x00" * 10 + b"\nno tabs here\x00")
    cut = LogParser()
    cut.feed(b"\x1e" + b"a" * 40 + b"\x00parent")
    with pytest.raises(MalformedLogOutput, match="ended inside"):
        cut.finish()
    with pytest.raises(MalformedLogOutput, match="expected a commit header"):
        bad = LogParser()
        bad.feed(b"\x1eshort" + b"\x00" * 10)
        bad.finish()
