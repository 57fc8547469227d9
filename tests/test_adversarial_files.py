"""Loaders read only what they were pointed at (issue 34, item 4): inside a folder given, a link
out of it (``leak.jsonl -> /etc/passwd``) is not followed and a FIFO is not opened; each is kept
in ``rejected`` with the reason, and the folder's own files load. A link inside the folder, and
a link named on the command line, are read."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import duckdb
import pytest

from _runlog import History
from conftest import run_reflect
from sidecar_samples import sidecar

pytestmark = pytest.mark.adversarial

TARGET = Path("/etc/passwd")
#: What the target holds that must not reach the database.
LEAK = "root:"


def reflect(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_reflect(*args, cwd=cwd, timeout=120)  # a FIFO opened for reading would wait forever


def everything(db_path: Path) -> str:
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        tables = [t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
        return " ".join(
            json.dumps(con.execute(f'SELECT * FROM "{t}"').fetchall(), default=str) for t in tables
        )
    finally:
        con.close()


def rejected(db_path: Path) -> dict[str, str]:
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        return {
            Path(location).name: reason
            for location, reason in con.execute("SELECT location, reason FROM rejected").fetchall()
        }
    finally:
        con.close()


def hostile_folder(folder: Path, name: str, good: str) -> None:
    """``folder`` with a good file, a link out (and a dangling one), a FIFO, a link inside."""
    folder.mkdir(parents=True)
    (folder / f"good{name}").write_text(good)
    (folder / f"leak{name}").symlink_to(TARGET)
    (folder / f"gone{name}").symlink_to(folder.parent / "nowhere")
    os.mkfifo(folder / f"fifo{name}")
    (folder / f"inside{name}").symlink_to(folder / f"good{name}")
    outside = folder.parent / "outside"
    outside.mkdir(exist_ok=True)
    (outside / f"other{name}").write_text(good)
    (folder / "linked-folder").symlink_to(outside, target_is_directory=True)


def assert_refused(db_path: Path, name: str) -> None:
    reasons = rejected(db_path)
    assert "outside the folder given" in reasons[f"leak{name}"]
    assert "leads nowhere (No such file or directory)" in reasons[f"gone{name}"]
    assert "not a regular file" in reasons[f"fifo{name}"]
    assert f"good{name}" not in reasons and f"inside{name}" not in reasons
    assert LEAK not in everything(db_path)


def transcript_line(session: str) -> str:
    return json.dumps(
        {
            "type": "user",
            "uuid": f"u-{session}",
            "parentUuid": None,
            "sessionId": session,
            "timestamp": "2026-01-21T06:20:00.000Z",
            "message": {"role": "user", "content": "hello"},
        }
    )


@pytest.mark.skipif(not TARGET.exists(), reason="needs /etc/passwd as the link's target")
def test_transcripts_load_only_the_folder(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    hostile_folder(proj, ".jsonl", transcript_line("s-good") + "\n")
    db_path = tmp_path / "db.duckdb"
    done = reflect("load", "transcripts", str(proj), "--db", str(db_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert_refused(db_path, ".jsonl")
    assert "s-good" in everything(db_path)
    # a link named on the command line is what the user chose: read
    named = tmp_path / "named.jsonl"
    (tmp_path / "real.jsonl").write_text(transcript_line("s-named") + "\n")
    named.symlink_to(tmp_path / "real.jsonl")
    done = reflect("load", "transcripts", str(named), "--db", str(db_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "s-named" in everything(db_path)


@pytest.mark.skipif(not TARGET.exists(), reason="needs /etc/passwd as the link's target")
def test_run_logs_load_only_the_folder(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    history = History().task()
    history.outcome("failed", 1.0, session_id="s-run")
    hostile_folder(runs, ".jsonl", "".join(json.dumps(line) + "\n" for line in history.lines))
    db_path = tmp_path / "db.duckdb"
    done = reflect("load", "runs", str(runs), "--db", str(db_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert_refused(db_path, ".jsonl")
    assert "s-run" in everything(db_path)


@pytest.mark.skipif(not TARGET.exists(), reason="needs /etc/passwd as the link's target")
def test_sidecars_load_only_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "sidecars"
    name = ".reflection.json"
    hostile_folder(folder, name, json.dumps(sidecar(1, session_id="s-side")))
    (tmp_path / "outside" / f"other{name}").write_text(json.dumps(sidecar(2, session_id="s-out")))
    db_path = tmp_path / "db.duckdb"
    done = reflect("load", "sidecars", str(folder), "--db", str(db_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert_refused(db_path, name)
    assert "outside the folder given" in rejected(db_path)["linked-folder"]
    text = everything(db_path)
    assert "s-side" in text and "s-out" not in text
