"""A run log loaded twice (a copy, a moved file) or reported by two files (a run log and its
trajectory) must not make the cycle count a session twice: a session counted twice lengthens a
failure streak, and ``--apply`` pauses the task. Real DuckDB files, the real CLI in process."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import duckdb
import pytest

from _runlog import History, T, add_outcome, add_task, make_platform_db
from agent_reflection.load.runs.store import (
    EarlierCopy,
    SessionOverlap,
    merge_copies,
    session_overlap,
)
from cli_inprocess import reflect

NOW = T.isoformat()


def load(db_path: Path, *files: Path) -> tuple[list[dict[str, Any]], str]:
    """``reflect load runs FILES --json``: the summaries (each reconciles) and stderr."""
    done = reflect("load", "runs", *map(str, files), "--db", str(db_path), "--json")
    assert done.returncode == 0, done.stderr
    loads: list[dict[str, Any]] = json.loads(done.stdout)["loads"]
    for s in loads:
        assert s["read"] == s["loaded"] + s["rejected"] + s["already_present"], s
    return loads, done.stderr


def findings(db_path: Path, *, now: str = NOW) -> list[tuple[str, str, str]]:
    """``reflect cycle run --now NOW``: the stored findings of that pass (rule, task, detail)."""
    done = reflect("cycle", "run", "--now", now, "--db", str(db_path))
    assert done.returncode == 0, done.stderr
    with duckdb.connect(str(db_path), read_only=True) as con:
        rows = con.execute(
            "SELECT rule, subject_id, detail FROM findings"
            " WHERE cycle_run_id = (SELECT max(cycle_run_id) FROM cycle_runs) ORDER BY seq"
        ).fetchall()
    return [(str(r), str(s), str(d)) for r, s, d in rows]


def count(db_path: Path, sql: str) -> int:
    with duckdb.connect(str(db_path), read_only=True) as con:
        row = con.execute(sql).fetchone()
    assert row is not None
    return int(row[0])


def two_task_history() -> History:
    """Task A: three failures (a pause at the default limit 3). Task B: two failures, which a
    second copy of the file would turn into a streak of four."""
    history = History().task("A").task("B")
    sessions = history.outcomes(["failed"] * 3, task_id="A")
    history.outcomes(["failed", "timeout"], task_id="B")
    history.step(sessions[0], {"tool": "skill", "arguments": {"action": "read", "skill_name": "x"}})
    return history


def test_a_copy_at_another_path_is_already_present_and_changes_no_finding(
    tmp_path: Path,
) -> None:
    db_path = tmp_path / "runs.duckdb"
    original = two_task_history().write(tmp_path / "runs.jsonl")
    (first,), _ = load(db_path, original)
    assert (first["read"], first["loaded"], first["already_present"]) == (8, 8, 0)
    before = findings(db_path)
    assert [(rule, task) for rule, task, _ in before] == [("consecutive_failures", "A")]

    copy = tmp_path / "copy" / "runs.jsonl"
    copy.parent.mkdir()
    shutil.copy(original, copy)
    (again,), stderr = load(db_path, copy)
    assert (again["read"], again["loaded"], again["already_present"]) == (8, 0, 8)
    # tasks are keyed by id alone (already present as before); outcomes and steps by content
    assert again["detail"]["copies_of"] == [
        {"load_id": first["load_id"], "origin": str(original.resolve()), "records": 6}
    ]
    assert f"6 in load {first['load_id']} ({original.resolve()})" in stderr
    assert "not loaded again" in stderr
    assert count(db_path, "SELECT count(*) FROM run_outcomes") == 5
    assert count(db_path, "SELECT count(*) FROM run_steps") == 1
    assert findings(db_path) == before


def test_the_cli_line_and_a_moved_file(tmp_path: Path) -> None:
    """Text mode: the reconcile line on stdout, the earlier load on stderr; a moved file (the
    original gone) is recognised the same way."""
    db_path = tmp_path / "runs.duckdb"
    original = two_task_history().write(tmp_path / "runs.jsonl")
    assert reflect("load", "runs", str(original), "--db", str(db_path)).returncode == 0
    moved = original.rename(tmp_path / "archive.jsonl")
    done = reflect("load", "runs", str(moved), "--db", str(db_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("read 8 = loaded 0 + rejected 0 + already present 8")
    assert f"Warning: {moved}: 6 record(s) already loaded from another file" in done.stderr
    assert f"in load 1 ({original})" in done.stderr


def test_a_grown_copy_loads_only_its_new_lines(tmp_path: Path) -> None:
    """As a re-load of the same path that grew: the old lines are already present, the new ones
    load. Here the new outcome ends task B's streak of two, so nothing changes either."""
    db_path = tmp_path / "runs.duckdb"
    history = two_task_history()
    original = history.write(tmp_path / "runs.jsonl")
    load(db_path, original)
    history.outcome("completed", 0.5, task_id="B")
    grown = history.write(tmp_path / "grown.jsonl")
    (summary,), _ = load(db_path, grown)
    assert (summary["read"], summary["loaded"], summary["already_present"]) == (9, 1, 8)
    assert count(db_path, "SELECT count(*) FROM run_outcomes") == 6
    # the same path, grown: today's behaviour, which the copy follows
    history.outcome("completed", 0.25, task_id="A")
    history.write(original)
    (same_path,), _ = load(db_path, original)
    assert (same_path["read"], same_path["loaded"], same_path["already_present"]) == (10, 1, 9)
    assert [(r, t) for r, t, _ in findings(db_path)] == []


def test_a_copied_platform_database_is_already_present(tmp_path: Path) -> None:
    """SQLite step keys name their file: steps are matched on their content, not their key."""
    src = make_platform_db(tmp_path / "platform.db")
    add_task(src, "t1", "Summarise the inbox every morning")
    for k in range(2):
        add_outcome(src, f"s{k}", "failed", T.timestamp() - 600 * (k + 1), task_id="t1")
    with sqlite3.connect(src) as sq:
        sq.execute(
            "INSERT INTO interaction_log (timestamp, action, session, input) VALUES (?,?,?,?)",
            [T.timestamp() - 900, "tool_call", "s1", "read_file data/skills/deploy.md"],
        )
    copy = tmp_path / "elsewhere" / "platform.db"
    copy.parent.mkdir()
    shutil.copy(src, copy)
    db_path = tmp_path / "runs.duckdb"
    (first, second), _ = load(db_path, src, copy)
    assert (first["loaded"], first["already_present"]) == (4, 0)
    assert (second["read"], second["loaded"], second["already_present"]) == (4, 0, 4)
    assert count(db_path, "SELECT count(*) FROM run_steps") == 1
    assert findings(db_path) == []  # two failures, not four


def overlapping_files(tmp_path: Path) -> tuple[Path, Path]:
    """A run log and a second file (say, the trajectories) that reports some of its sessions
    again with other content: B's two failures again (same verdict), and for A, a session the
    run log says failed that the other file says completed."""
    runs = History().task("A").task("B")
    a = runs.outcomes(["failed"] * 3, task_id="A")
    b = runs.outcomes(["failed", "failed"], task_id="B")
    other = History()
    other.outcome("completed", 2.0, task_id="A", session_id=a[1], result_length=900)
    other.outcome("failed", 1.0, task_id="B", session_id=b[0], result_length=7)
    other.outcome("failed", 2.0, task_id="B", session_id=b[1], result_length=7)
    other.outcome("failed", 5.0, task_id="C", session_id=a[0])  # a reused id, another task
    return runs.write(tmp_path / "runs.jsonl"), other.write(tmp_path / "trajectories.jsonl")


def test_two_files_reporting_one_session_warn_and_count_it_once(tmp_path: Path) -> None:
    runs, other = overlapping_files(tmp_path)
    db_path = tmp_path / "runs.duckdb"
    (_, second), stderr = load(db_path, runs, other)
    assert second["loaded"] == 4  # other content: kept, both rows stay in run_outcomes
    assert second["detail"]["overlaps"] == {
        "sessions": 4,
        "same_task": 3,
        "files": {str(runs.resolve()): 4},
    }
    assert (
        f"Warning: {other.resolve()}: 4 session(s) are also reported by other files: "
        f"{runs.resolve()} (4). 3 of them name the same task there" in stderr
    )
    assert count(db_path, "SELECT count(*) FROM run_outcomes") == 9
    # B: two failing sessions, not four; A: one file says a[1] completed, which ends the streak
    assert findings(db_path) == []


def test_without_the_other_file_the_run_log_alone_pauses_a(tmp_path: Path) -> None:
    """The control for the test above: the same run log alone makes exactly A's pause, so the
    empty result there comes from counting each session once."""
    runs, _ = overlapping_files(tmp_path)
    db_path = tmp_path / "runs.duckdb"
    load(db_path, runs)
    assert [(r, t) for r, t, _ in findings(db_path)] == [("consecutive_failures", "A")]


def test_the_same_file_loaded_again_warns_about_nothing(tmp_path: Path) -> None:
    runs, other = overlapping_files(tmp_path)
    db_path = tmp_path / "runs.duckdb"
    load(db_path, runs, other)
    (r, o), stderr = load(db_path, runs, other)
    assert r["loaded"] == o["loaded"] == 0 and stderr == ""


def test_pure_helpers() -> None:
    assert merge_copies([(2, "/b", 3), (1, "/a", 4), (2, "/b", 5)]) == (
        EarlierCopy(1, "/a", 4),
        EarlierCopy(2, "/b", 8),
    )
    assert session_overlap([]) is None
    assert session_overlap([("/a", "s1", True), ("/b", "s1", False), ("/b", "s2", False)]) == (
        SessionOverlap(2, 1, (("/a", 1), ("/b", 2)))
    )


@pytest.mark.shared
def test_the_users_scenario_on_the_real_run_log(shared_dir: Path, tmp_path: Path) -> None:
    """runs.jsonl, then a copy of it, then the three sample trajectories (which report three of
    its sessions again, astropy__astropy-13033 as completed where runs.jsonl says failed)."""
    runs_dir = shared_dir / "data" / "agent-runs"
    db_path = tmp_path / "dup.duckdb"
    (first,), _ = load(db_path, runs_dir / "runs.jsonl")
    before = findings(db_path, now="latest")
    assert [(r, t) for r, t, _ in before] == [("consecutive_failures", "pylint-dev/pylint")]

    copy = tmp_path / "copy" / "runs.jsonl"
    copy.parent.mkdir()
    shutil.copy(runs_dir / "runs.jsonl", copy)
    (again,), stderr = load(db_path, copy)
    assert (again["read"], again["loaded"], again["already_present"]) == (500, 0, 500)
    assert f"500 in load {first['load_id']}" in stderr
    assert count(db_path, "SELECT count(*) FROM run_outcomes") == 500
    assert findings(db_path, now="latest") == before

    trajectories, stderr = load(db_path, runs_dir / "sample-trajectories")
    assert [t["detail"]["overlaps"]["same_task"] for t in trajectories] == [1, 1, 1]
    assert stderr.count("1 session(s) are also reported by other files") == 3
    assert count(db_path, "SELECT count(DISTINCT session_id) FROM run_outcomes") == 500
    assert findings(db_path, now="latest") == before


def test_a_database_loaded_before_the_fix_is_counted_once(tmp_path: Path) -> None:
    """Copies an older version loaded (the same rows under a second origin) are found when the
    schema is brought up to date, so the next pass counts each session once."""
    db_path = tmp_path / "runs.duckdb"
    original = two_task_history().write(tmp_path / "runs.jsonl")
    load(db_path, original)
    before = findings(db_path)
    with duckdb.connect(str(db_path)) as con:
        con.execute(
            "INSERT INTO run_outcomes BY NAME SELECT * REPLACE ('/old/copy.jsonl' AS origin)"
            " FROM run_outcomes"
        )
        con.execute("DROP TABLE run_overlapping_origins")  # as a database of the older version
        con.execute("DELETE FROM schema_version")
    assert findings(db_path) == before
    assert count(db_path, "SELECT count(*) FROM run_overlapping_origins") == 2
