"""`reflect run` speaks like the loads: `--json` is one document on stdout, `--silent` nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agent_reflection.store.db import connect
from sim_rows import insert_event, insert_task

ROOT = Path(__file__).resolve().parents[1]


def board_db(path: Path) -> Path:
    con = connect(path)
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    for i in range(12):
        insert_task(con, f"T-{i}", created_at=t0, completed_at=t0)
    insert_event(con, "T-0", t0 + timedelta(days=45), "reopened")
    con.close()
    return path


def reflect(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_reflection", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "CI": "1"},
    )


@pytest.mark.slow
def test_run_json_is_one_document_and_silent_prints_nothing(tmp_path: Path) -> None:
    db = board_db(tmp_path / "board.duckdb")
    out = tmp_path / "reports"
    done = reflect(
        "run", "p3", "--db", str(db), "--out", str(out), "--run-id", "j", "--json", cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)  # the whole of stdout is one JSON document
    p3 = doc["experiments"]["p3"]
    assert doc["run_id"] == "j" and Path(doc["report"]).is_file()
    assert (
        p3["verdict"] == "insufficient-data"
        and p3["n"] == json.loads(Path(p3["results"]).read_text())["n"]
    )
    assert p3["question"] and p3["facts"] and doc["gate"]["decision"] == "undecided"
    quiet = reflect(
        "run", "p3", "--db", str(db), "--out", str(out), "--run-id", "s", "--silent", cwd=ROOT
    )
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout == ""
    assert (out / "s" / "index.html").is_file()  # the report is still written
