"""``reflect load git`` run as a real subprocess."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import duckdb

from conftest import run_git, run_reflect


def reflect(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_reflect(*args, cwd=cwd)


def test_load_git_prints_the_reconcile_line_and_json(git_repo: Path, tmp_path: Path) -> None:
    db = tmp_path / "out.duckdb"
    first = reflect("load", "git", str(git_repo), "--db", str(db), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip().endswith("read 1 = loaded 1 + rejected 0 + already present 0"), (
        first.stdout
    )
    second = reflect(
        "load", "git", str(git_repo), "--db", str(db), "--json", "--silent", cwd=tmp_path
    )
    got = json.loads(second.stdout)
    # Nothing new: git lists no commit behind the tip the first load recorded.
    assert (got["read"], got["loaded"], got["already_present"]) == (0, 0, 0)
    # the voice of every load command: the database and each load's summary
    assert got["db"] == str(db) and [load["load_id"] for load in got["loads"]] == [2]
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM commits").fetchone() == (1,)


def test_load_git_with_rev_and_name(git_repo: Path, tmp_path: Path) -> None:
    (git_repo / "b.txt").write_text("b\n")
    run_git(git_repo, "add", "b.txt")
    run_git(git_repo, "commit", "-q", "-m", "second")
    db = tmp_path / "out.duckdb"
    done = reflect(
        "load",
        "git",
        str(git_repo),
        "--rev",
        "HEAD~1..HEAD",
        "--name",
        "mine",
        "--db",
        str(db),
        "--json",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["loaded"] == 1
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT repo, subject FROM commits").fetchall() == [("mine", "second")]


def test_load_git_errors_say_the_fix(tmp_path: Path) -> None:
    missing = reflect(
        "load", "git", str(tmp_path / "nope"), "--db", str(tmp_path / "x.duckdb"), cwd=tmp_path
    )
    assert missing.returncode == 1
    assert "no such file or folder" in missing.stderr and "git clone" in missing.stderr
    plain = reflect("load", "git", str(tmp_path), "--db", str(tmp_path / "x.duckdb"), cwd=tmp_path)
    assert plain.returncode == 1 and "is not a git repository" in plain.stderr
    assert "Traceback" not in plain.stderr


def test_a_since_git_reads_as_now_is_refused(git_repo: Path, tmp_path: Path) -> None:
    """git takes any date it cannot read for the present, silently: the load would list no
    commit and say so as if the history were empty."""
    db = tmp_path / "x.duckdb"
    nonsense = reflect(
        "load", "git", str(git_repo), "--since", "yesterdayish", "--db", str(db), cwd=tmp_path
    )
    assert nonsense.returncode == 1 and "Traceback" not in nonsense.stderr
    assert "--since 'yesterdayish': git reads it as now or later" in nonsense.stderr
    assert "2024-01-01" in nonsense.stderr  # the fix
    if db.exists():  # nothing was recorded as a load
        with duckdb.connect(str(db), read_only=True) as con:
            assert con.execute("SELECT count(*) FROM commits").fetchone() == (0,)
    dated = reflect(
        "load", "git", str(git_repo), "--since", "2000-01-01", "--db", str(db), cwd=tmp_path
    )
    assert dated.returncode == 0, dated.stderr


def test_help_teaches(tmp_path: Path) -> None:
    done = reflect("load", "git", "--help", cwd=tmp_path)
    assert done.returncode == 0
    for needle in ("--rev", "--since", "--name", "--db", "--silent", "--json", "Examples"):
        assert needle in done.stdout
