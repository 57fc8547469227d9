"""Small things that cost a newcomer an hour (issue 33): each as the command does it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.cli_inprocess import reflect

from agent_reflection.load.git.history import load_git_history
from agent_reflection.store.db import connect
from sidecar_samples import sidecar, write

BIN = Path(sys.executable).parent


def test_rejected_on_a_missing_database_says_so_and_creates_nothing(tmp_path: Path) -> None:
    db = tmp_path / "new.duckdb"
    done = reflect("rejected", "--db", str(db))
    assert done.returncode == 1
    assert f"no database at {db}: nothing was loaded there" in done.stderr
    assert "`reflect load ...` creates it" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_match_does_not_run_after_a_failed_board_load(tmp_path: Path) -> None:
    """A board export that could not be read is a failed load: its tasks are not matched."""
    db = tmp_path / "r.duckdb"
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=a", "-c", "user.email=a@b.c"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "a.txt").write_text("a\n")
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "T-1: first"], check=True)
    con = connect(db)
    try:
        load_git_history(con, repo, name="repo")
    finally:
        con.close()
    broken = tmp_path / "board.jsonl.gz"
    broken.write_bytes(b"\x1f\x8b\x08\x00not gzip at all")
    done = reflect("load", "board", str(broken), "--format", "jsonl", "--db", str(db))
    assert done.returncode == 1, done.stdout
    assert "match: not run, the board load failed" in done.stdout
    con = connect(db, read_only=True)
    try:
        rows = con.execute("SELECT source FROM loads ORDER BY load_id").fetchall()
        sources = [r[0] for r in rows]
    finally:
        con.close()
    assert sources == ["git", "board"]  # no match load after the failed board load
    # a board that loads is matched as before
    good = tmp_path / "board.jsonl"
    good.write_text(json.dumps({"task_ref": "T-1", "title": "t"}) + "\n")
    done = reflect("load", "board", str(good), "--format", "jsonl", "--db", str(db))
    assert done.returncode == 0, done.stderr
    assert "match: not run" not in done.stdout


def test_the_export_help_example_reads_the_parquet_back_with_python(tmp_path: Path) -> None:
    """The help shows a way to query the export that needs only what is installed (the
    DuckDB Python API), not a duckdb command-line program."""
    for i in range(4):
        write(tmp_path / "s" / f"{i}.reflection.json", sidecar(i, repo=["flask", "web"][i % 2]))
    db = tmp_path / "r.duckdb"
    assert reflect("load", "sidecars", str(tmp_path / "s"), "--db", str(db)).returncode == 0
    assert (
        reflect("export", "--db", str(db), "--parquet", str(tmp_path / "exports")).returncode == 0
    )
    help_text = reflect("export", "--help").stdout
    assert "duckdb -c" not in help_text
    start = help_text.index("python -c ")
    example = help_text[start : help_text.index("\n\n", start)].split("  # ")[0]
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        ["bash", "-c", example], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    rows = {
        line.split("│")[1].strip(): line.split("│")[2].strip()
        for line in done.stdout.splitlines()
        if line.count("│") == 3
    }
    assert rows.get("flask") == "2" and rows.get("web") == "2", done.stdout
