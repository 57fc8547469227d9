"""The simulator's row writers: production signal definitions, inserts by column name."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

from agent_reflection.load.git.history import load_git_history
from agent_reflection.simulate.phase0 import (
    commit_row,
    insert_commit,
    insert_event,
    insert_labels,
    insert_link,
    insert_reflection,
    insert_task,
    insert_task_commit,
)
from agent_reflection.store.db import connect
from conftest import run_git

T0 = datetime(2024, 1, 1, tzinfo=UTC)

# (subject, body). The first four are messages on which the simulator's former stand-in for
# derive_signals disagreed with the git loader's definitions.
MESSAGES = [
    ("Fixes the thing (#12)", ""),
    ("Update parser", "Fixes #3"),
    ("fix-up whitespace", ""),
    ("fixture: add data", ""),
    ("feat(cli)!: drop --old", ""),
    ("fix: wrong totals", ""),
    ("hotfix renderer crash", ""),
    ("Merge pull request #42 from x/render", "Fix the renderer"),
    ("docs: typo", "BREAKING CHANGE: none really"),
]
SIGNAL_COLUMNS = (
    "subject",
    "body",
    "is_merge",
    "signals_version",
    "is_revert",
    "reverts_sha",
    "is_reapply",
    "pr_number",
    "cc_type",
    "cc_scope",
    "cc_breaking",
    "is_fix_like",
    "files_available",
)


def table_rows(con: duckdb.DuckDBPyConnection, table: str) -> list[dict[str, Any]]:
    cur = con.execute(f"SELECT * FROM {table} ORDER BY ALL")
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def test_commit_rows_carry_the_git_loaders_signals(tmp_path: Path) -> None:
    # A real repository with the sample messages, loaded by the git loader; the simulator's
    # rows for the same commits must have the same message-derived columns.
    repo = tmp_path / "repo"
    repo.mkdir()
    run_git(repo, "init", "-q", "-b", "main")
    for i, (subject, body) in enumerate(MESSAGES):
        (repo / f"f{i}.txt").write_text(f"{i}\n")
        run_git(repo, "add", f"f{i}.txt")
        message = f"{subject}\n\n{body}" if body else subject
        run_git(repo, "commit", "-q", "-m", message)
    loaded = connect(":memory:")
    load_git_history(loaded, repo, name="sim")
    by_loader = {r["sha"]: r for r in table_rows(loaded, "commits")}
    assert len(by_loader) == len(MESSAGES)

    simulated = connect(":memory:")
    for sha, row in by_loader.items():
        insert_commit(
            simulated,
            "sim",
            sha,
            row["author_time"],
            row["subject"],
            row["body"],
            parents=row["parents"],
            files=["x"],
        )
    by_simulator = {r["sha"]: r for r in table_rows(simulated, "commits")}
    assert set(by_simulator) == set(by_loader)
    for sha, row in by_loader.items():
        loader_view = {c: row[c] for c in SIGNAL_COLUMNS}
        assert {c: by_simulator[sha][c] for c in SIGNAL_COLUMNS} == loader_view, row["subject"]
    # and the four former disagreements read as the production definitions say
    fix_like = {r["subject"]: r["is_fix_like"] for r in by_simulator.values()}
    cc_type = {r["subject"]: r["cc_type"] for r in by_simulator.values()}
    assert fix_like["Fixes the thing (#12)"] is True  # fix wording, PR suffix
    assert fix_like["Update parser"] is True  # "Fixes #3" in the body
    assert fix_like["fix-up whitespace"] is False  # a compound, not a fix
    assert cc_type["fixture: add data"] is None  # not a conventional-commit type


def test_commit_row_names_every_commits_column() -> None:
    con = connect(":memory:")
    columns = [r[0] for r in con.execute("DESCRIBE commits").fetchall()]
    assert set(commit_row("r", "a" * 40, T0, "feat: x")) == set(columns)


def test_inserts_are_by_column_name() -> None:
    # A table with one more (nullable) column than the writers know: an insert by position
    # would fail; by name, the extra column is left NULL.
    con = connect(":memory:")
    tables = (
        "commits",
        "commit_files",
        "tasks",
        "task_events",
        "task_links",
        "task_commits",
        "labels",
        "reflections",
    )
    for table in tables:
        con.execute(f"ALTER TABLE {table} ADD COLUMN added_later VARCHAR")
    insert_commit(con, "r", "a" * 40, T0, "feat: a", files=["src/a.py"])
    insert_task(con, "T-1", created_at=T0, completed_at=T0 + timedelta(days=1))
    insert_event(con, "T-1", T0, "reopened", "again")
    insert_link(con, "T-1", "BUG-1", "Regression", "outward")
    insert_task_commit(con, "T-1", "r", "a" * 40)
    insert_labels(con, "c", [0.9, 0.2], [True, False], [{"model": "m"}, {"model": "n"}])
    insert_reflection(con, "T-1", 0.7, when=T0, files=["src/auth/jwt.ts"])
    for table in tables:
        rows = table_rows(con, table)
        assert rows, table
        assert all(r["added_later"] is None for r in rows), table
    [label] = [r for r in table_rows(con, "labels") if r["record_key"] == "sim-0"]
    assert (label["confidence"], label["correct"], label["line"]) == (0.9, True, 1)
    [reflection] = table_rows(con, "reflections")
    # the simulated sidecar carries the production risk floor of its files
    assert (reflection["risk_surface"], reflection["risk_needs_review"]) == ("auth", True)
    assert reflection["files_changed"] == ["src/auth/jwt.ts"]


def test_insert_labels_of_nothing_is_a_no_op() -> None:
    con = connect(":memory:")
    insert_labels(con, "c", [], [])
    assert con.execute("SELECT count(*) FROM labels").fetchone() == (0,)


@pytest.mark.parametrize("confidence", [None, 0.5])
def test_reflection_degraded_follows_confidence(confidence: float | None) -> None:
    con = connect(":memory:")
    insert_reflection(con, "T-2", confidence, when=T0)
    [row] = table_rows(con, "reflections")
    assert row["degraded"] is (confidence is None)
    assert (row["risk_surface"], row["risk_reason"]) == ("none", "no files changed")
