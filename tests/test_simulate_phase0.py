"""The simulator's row writers: production signal definitions, inserts by column name."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

import agent_reflection.simulate
import sim_rows
from agent_reflection.load.git import signals
from agent_reflection.load.git.history import load_git_history
from agent_reflection.simulate.phase0 import build_demo
from agent_reflection.store.db import connect
from conftest import run_git
from sim_rows import (
    commit_row,
    insert_commit,
    insert_event,
    insert_labels,
    insert_link,
    insert_reflection,
    insert_task,
    insert_task_commit,
)

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
#: The columns the git loader derives from a commit (its message, its parents), and how
#: the simulator must fill them too.
DERIVED_COLUMNS = (
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
)
#: Compared besides: what the simulator is handed must round-trip to the same values.
COMPARED_COLUMNS = (
    "subject",
    "body",
    "parents",
    "author_time",
    "committer_time",
    "files_available",
    *DERIVED_COLUMNS,
)
SIMULATE_PACKAGE = Path(agent_reflection.simulate.__file__).parent


def table_rows(con: duckdb.DuckDBPyConnection, table: str) -> list[dict[str, Any]]:
    cur = con.execute(f"SELECT * FROM {table} ORDER BY ALL")
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def sample_repo(path: Path) -> Path:
    """A real repository: the sample messages, a revert made by git, a real --no-ff PR merge."""
    path.mkdir()
    run_git(path, "init", "-q", "-b", "main")
    for i, (subject, body) in enumerate(MESSAGES):
        (path / f"f{i}.txt").write_text(f"{i}\n")
        run_git(path, "add", f"f{i}.txt")
        message = f"{subject}\n\n{body}" if body else subject
        run_git(path, "commit", "-q", "-m", message)
    run_git(path, "revert", "--no-edit", ":/^hotfix renderer crash")  # git's own revert message
    run_git(path, "checkout", "-q", "-b", "topic")
    (path / "topic.txt").write_text("topic\n")
    run_git(path, "add", "topic.txt")
    run_git(path, "commit", "-q", "-m", "Add topic (#7)")
    run_git(path, "checkout", "-q", "main")
    run_git(path, "merge", "--no-ff", "-q", "-m", "Merge pull request #8 from x/topic", "topic")
    return path


def test_commit_rows_carry_the_git_loaders_signals(tmp_path: Path) -> None:
    # The sample messages in a real repository, loaded by `reflect load git` (a subprocess);
    # the simulator's rows for the same commits must have the same derived columns and files.
    db = tmp_path / "loaded.duckdb"
    repo = sample_repo(tmp_path / "repo")
    args = ["load", "git", str(repo), "--name", "sim", "--db", str(db)]
    env = {k: v for k, v in os.environ.items() if k != "REFLECT_DB"}
    done = subprocess.run(
        [sys.executable, "-m", "agent_reflection", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    with duckdb.connect(str(db), read_only=True) as loaded:
        by_loader = {r["sha"]: r for r in table_rows(loaded, "commits")}
        files_by_loader = table_rows(loaded, "commit_files")
    assert len(by_loader) == len(MESSAGES) + 3

    simulated = connect(":memory:")
    for sha, row in by_loader.items():
        files = [f["path"] for f in files_by_loader if f["sha"] == sha]
        insert_commit(
            simulated,
            "sim",
            sha,
            row["author_time"],
            row["subject"],
            row["body"],
            parents=row["parents"],
            files=files,
        )
    by_simulator = {r["sha"]: r for r in table_rows(simulated, "commits")}
    assert set(by_simulator) == set(by_loader)
    for sha, row in by_loader.items():
        loader_view = {c: row[c] for c in COMPARED_COLUMNS}
        assert {c: by_simulator[sha][c] for c in COMPARED_COLUMNS} == loader_view, row["subject"]
    # the same files (the simulator's line counts are a fixed 1 added, 0 deleted)
    file_columns = ("repo", "sha", "path", "old_path", "binary")
    assert [{c: f[c] for c in file_columns} for f in table_rows(simulated, "commit_files")] == [
        {c: f[c] for c in file_columns} for f in files_by_loader
    ]
    # the four former disagreements read as the production definitions say
    fix_like = {r["subject"]: r["is_fix_like"] for r in by_simulator.values()}
    cc_type = {r["subject"]: r["cc_type"] for r in by_simulator.values()}
    assert fix_like["Fixes the thing (#12)"] is True  # fix wording, PR suffix
    assert fix_like["Update parser"] is True  # "Fixes #3" in the body
    assert fix_like["fix-up whitespace"] is False  # a compound, not a fix
    assert cc_type["fixture: add data"] is None  # not a conventional-commit type
    # and the commits git itself wrote: a revert naming its target, a merge with two parents
    [revert] = [r for r in by_simulator.values() if r["subject"].startswith("Revert ")]
    hotfix = next(s for s, r in by_loader.items() if r["subject"] == "hotfix renderer crash")
    assert (revert["is_revert"], revert["reverts_sha"]) == (True, hotfix)
    [merge] = [r for r in by_simulator.values() if r["is_merge"]]
    assert (len(merge["parents"]), merge["pr_number"]) == (2, 8)


def test_the_simulator_has_no_message_parsing_of_its_own() -> None:
    # The test commit rows get their signals from the git loader's module, and neither they
    # nor any module of the simulator parse text with regular expressions (the former stand-in
    # did).
    assert sim_rows.derive_signals is signals.derive_signals
    assert sim_rows.SIGNALS_VERSION == signals.SIGNALS_VERSION
    modules = [*sorted(SIMULATE_PACKAGE.glob("*.py")), Path(sim_rows.__file__)]
    assert modules
    for module in modules:
        tree = ast.parse(module.read_text("utf-8"))
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert not imported & {"re", "regex"}, f"{module.name} parses text itself"
        defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        assert "derive_signals" not in defined, module.name


@pytest.mark.slow
@pytest.mark.shared
@pytest.mark.parametrize("bundle", ["sqlite-utils", "flask"])
def test_commit_rows_match_the_git_loader_on_a_real_history(
    bundle: str, shared_dir: Path, tmp_path: Path
) -> None:
    # Every commit message of a real project: the simulator's row for it derives what
    # `reflect load git` derived.
    con = connect(":memory:")
    load_git_history(
        con, shared_dir / f"data/git/{bundle}.bundle", name=bundle, cache_dir=tmp_path / "cache"
    )
    loaded = table_rows(con, "commits")
    assert len(loaded) > 1000
    assert sum(r["is_fix_like"] for r in loaded) > 100  # the history exercises the signals
    for row in loaded:
        simulated = commit_row(
            bundle, row["sha"], row["author_time"], row["subject"], row["body"], row["parents"]
        )
        assert {c: simulated[c] for c in DERIVED_COLUMNS} == {c: row[c] for c in DERIVED_COLUMNS}, (
            row["sha"]
        )


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


def test_the_demo_loads_its_board_and_labels_through_the_loaders(tmp_path: Path) -> None:
    # The demo writes the files a team would load (a JSONL board export, a labels file, a git
    # repository) and loads them as `reflect load` does: every table row comes from a load the
    # `loads` table records, and the task matcher links the reverted work to its tasks.
    data = build_demo(tmp_path / "demo")
    with duckdb.connect(str(data.db_path), read_only=True) as con:
        loads = dict(con.execute("SELECT source, origin FROM loads ORDER BY load_id").fetchall())
        tasks = con.execute("SELECT count(*), count(DISTINCT load_id) FROM tasks").fetchone()
        links = con.execute(
            "SELECT tc.task_ref, tc.matched_by, c.subject FROM task_commits tc "
            "JOIN commits c USING (repo, sha) ORDER BY tc.task_ref"
        ).fetchall()
        orphans = con.execute(
            "SELECT count(*) FROM task_events WHERE load_id NOT IN (SELECT load_id FROM loads)"
        ).fetchone()
    assert loads["board"] == str(data.board_path)
    assert loads["labels"] == str(data.labels_path)
    assert set(loads) >= {"git", "board", "match", "labels"}
    assert tasks == (57, 1)  # 50 tasks, 5 right-censored ones, 2 regression bugs
    # every planned task is linked to the commit naming it: the reverted work's two, and one
    # commit of notes for each of the other 48 (so each task carries the commits channel)
    assert {m for _, m, _ in links} == {"task-ref"}
    assert sorted({ref for ref, _, _ in links}) == sorted(f"DEMO-{i}" for i in range(1, 51))
    assert sorted({s.split("\n")[0] for _, _, s in links}) == [
        "Add user index migration",
        "docs: notes",
        "feat: colour output",
    ]
    assert orphans == (0,)
    assert (data.truth.p3_detectable, data.truth.p3_eligible) == (15, 50)
