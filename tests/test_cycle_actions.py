"""Pausing tasks: dry run vs --apply on a real SQLite platform database, and resume."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from _runlog import History, T, add_outcome, add_task, make_platform_db
from agent_reflection.cli._groups import cli, register_all_commands
from agent_reflection.cycle.actions import pause_tasks
from agent_reflection.store import db as dbmod

NOW = 1_750_000_000.0


def platform(tmp_path: Path) -> Path:
    src = make_platform_db(tmp_path / "platform.db")
    add_task(src, "nightly", "Write the nightly status report for the team")
    add_task(src, "healthy", "Check the backups and report their sizes")
    for i in range(3):
        add_outcome(src, f"n{i}", "failed", NOW - 3600 * (i + 1), task_id="nightly")
        add_outcome(src, f"h{i}", "completed", NOW - 3600 * (i + 1), task_id="healthy")
    return src


def source_status(src: Path, task_id: str) -> str:
    with sqlite3.connect(src) as con:
        row = con.execute("SELECT status FROM tasks WHERE id = ?", [task_id]).fetchone()
    return str(row[0])


def reflect(*args: str) -> str:
    register_all_commands()
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_dry_run_changes_nothing(tmp_path: Path) -> None:
    src = platform(tmp_path)
    db = str(tmp_path / "db.duckdb")
    out = reflect("cycle", "run", str(src), "--now", str(NOW), "--db", db)
    assert "consecutive_failures       task nightly [paused_task]" in out
    assert "DRY RUN: would pause nightly" in out
    assert source_status(src, "nightly") == "active"
    with duckdb.connect(db) as con:
        assert con.execute("SELECT status FROM run_tasks WHERE task_id = 'nightly'").fetchone() == (
            "active",
        )
        assert con.execute("SELECT applied FROM findings").fetchall() == [(False,)]


def test_apply_pauses_in_both_databases_and_resume_undoes_it(tmp_path: Path) -> None:
    src = platform(tmp_path)
    db = str(tmp_path / "db.duckdb")
    out = reflect("cycle", "run", str(src), "--now", str(NOW), "--apply", "--db", db)
    assert f"paused nightly in {src.resolve()}" in out
    assert source_status(src, "nightly") == "paused"
    assert source_status(src, "healthy") == "active"
    again = reflect("cycle", "run", str(src), "--now", str(NOW), "--apply", "--db", db)
    assert "0 finding(s)" in again  # paused tasks do not act again (C2.R4)
    out = reflect("cycle", "resume", "nightly", "--db", db)
    assert "resumed nightly (status active)" in out
    assert source_status(src, "nightly") == "active"
    with duckdb.connect(db) as con:
        assert con.execute("SELECT status FROM run_tasks WHERE task_id = 'nightly'").fetchone() == (
            "active",
        )
        assert con.execute('SELECT action FROM task_actions ORDER BY "at"').fetchall() == [
            ("pause",),
            ("resume",),
        ]


def test_reload_keeps_our_pause_of_a_jsonl_task(tmp_path: Path) -> None:
    history = History().task("A")
    history.outcomes(["failed"] * 3)
    path = history.write(tmp_path / "h.jsonl")
    db = str(tmp_path / "db.duckdb")
    reflect("cycle", "run", str(path), "--now", T.isoformat(), "--apply", "--db", db)
    out = reflect("cycle", "run", str(path), "--now", T.isoformat(), "--db", db)
    assert "0 finding(s)" in out


def test_resume_of_a_task_never_paused_is_a_clear_error(tmp_path: Path) -> None:
    register_all_commands()
    result = CliRunner().invoke(
        cli, ["cycle", "resume", "nope", "--db", str(tmp_path / "d.duckdb")]
    )
    assert result.exit_code != 0
    assert "not paused by the reflection cycle" in str(result.exception)


def test_apply_rolls_back_the_source_when_our_database_fails(tmp_path: Path) -> None:
    src = platform(tmp_path)
    con = dbmod.connect(":memory:")
    con.execute("DROP TABLE task_actions")  # our side fails half-way
    with pytest.raises(Exception, match="task_actions"):
        pause_tasks(con, ["nightly"], apply=True, sqlite_sources=[src])
    assert source_status(src, "nightly") == "active"
