"""The task matcher: task keys in commit messages and sidecar task_refs."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from agent_reflection.load.board.loader import load_board
from agent_reflection.load.task_matcher import MatchContext, find_task_refs, match_task_commits
from agent_reflection.store.db import connect

CTX = MatchContext.build(
    jira_projects=["KAFKA", "MATH"],
    github_projects=["pallets/flask", "pallets/werkzeug", "other/werkzeug"],
    other_refs=["tasks/login.md", "T-7", "42", "ab", "Login page"],
)


@pytest.mark.parametrize(
    ("text", "repo", "expected"),
    [
        ("KAFKA-1234: fix NPE", None, {("KAFKA-1234", "jira-key")}),
        (
            "MATH-12 and KAFKA-3, again KAFKA-3",
            None,
            {("MATH-12", "jira-key"), ("KAFKA-3", "jira-key")},
        ),
        ("use UTF-8 and SHA-1 (FOO-12)", None, set()),
        ("xKAFKA-1 KAFKA-1x KAFKA-1_2", None, set()),
        ("kafka@fix/KAFKA-4-npe", None, {("KAFKA-4", "jira-key")}),
        ("Fixes pallets/flask#12", None, {("pallets/flask#12", "github-ref")}),
        ("Fixes Pallets/Flask#12", None, {("pallets/flask#12", "github-ref")}),
        ("see unknown/repo#3", "flask", set()),
        ("Merge pull request #5 from a/b", "flask", {("pallets/flask#5", "github-ref")}),
        ("fix (#77)", "flask", {("pallets/flask#77", "github-ref")}),
        ("closes GH-9", "flask", {("pallets/flask#9", "github-ref")}),
        ("fix #5", None, set()),
        ("fix #5", "werkzeug", set()),  # two projects named werkzeug: ambiguous
        ("fix #5", "pallets/werkzeug", {("pallets/werkzeug#5", "github-ref")}),
        ("html &#123; entity", "flask", set()),
        ("Done: tasks/login.md.", None, {("tasks/login.md", "task-ref")}),
        ("tasks/login.md.bak and old/tasks/login.md", None, set()),
        ("Task: T-7", None, {("T-7", "task-ref")}),
        ("version 42 of ab", None, set()),
        (
            "Finished Login page, see tasks/login.md",
            None,
            {("Login page", "task-ref"), ("tasks/login.md", "task-ref")},
        ),
        ("Login pages", None, set()),
    ],
)
def test_find_task_refs(text: str, repo: str | None, expected: set[tuple[str, str]]) -> None:
    assert {(m.task_ref, m.rule) for m in find_task_refs(text, CTX, repo)} == expected


COMMIT_SQL = """
INSERT INTO commits (repo, sha, parents, author_time, committer_time, subject, body, is_merge,
                     signals_version, is_revert, is_reapply, cc_breaking, is_fix_like,
                     files_available, load_id)
VALUES (?, ?, [], TIMESTAMPTZ '2024-01-01 00:00:00+00', TIMESTAMPTZ '2024-01-01 00:00:00+00',
        ?, ?, false, 1, false, false, false, false, true, 99)
"""

REFLECTION_SQL = """
INSERT INTO reflections (content_hash, schema_version, task_ref, agent, session_id, "timestamp",
    repo, risk_needs_review, risk_score, risk_surface, risk_reason, files_changed, source,
    reflection_attempt, degraded, reflection_mode, source_file, raw, load_id)
VALUES (?, 'reflection.v1', ?, 'a', 's', TIMESTAMPTZ '2024-01-01 00:00:00+00', 'kafka', false,
        0.0, 'none', '', [], 'stop-hook', 1, false, 'full', 'x.json', '{}', 99)
"""


@pytest.fixture
def db(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    con = connect(tmp_path / "match.duckdb")
    board = tmp_path / "board.csv"
    board.write_text("Key;Status;CreationDate\nKAFKA-4;Open;2024-01-01\nKAFKA-5;Open;2024-01-01\n")
    load_board(con, board, "jira")
    issues = tmp_path / "issues.jsonl"
    issues.write_text('{"number": 1, "html_url": "https://github.com/pallets/flask/issues/1"}\n')
    load_board(con, issues, "github")
    tasks = tmp_path / "tasks.csv"
    tasks.write_text("task_ref\ntasks/login.md\n")
    load_board(con, tasks, "csv")
    yield con
    con.close()


def test_match_task_commits_into_tables(db: duckdb.DuckDBPyConnection) -> None:
    commits = [
        ("kafka", "a1", "KAFKA-4: fix the NPE", "Also touches KAFKA-99.\nNot UTF-8 or ZZZ-1."),
        ("kafka", "a2", "MINOR: tidy", ""),
        ("flask", "b1", "Merge pull request #1 from x/y", "see pallets/flask#2"),
        ("flask", "b2", "done with tasks/login.md", ""),
    ]
    for row in commits:
        db.execute(COMMIT_SQL, list(row))
    for content_hash, ref in (
        ("h1", "KAFKA-5"),
        ("h2", "kafka@fix/KAFKA-4-npe"),
        ("h3", "kafka@main"),
    ):
        db.execute(REFLECTION_SQL, [content_hash, ref])
    first = match_task_commits(db)
    assert first.commits_scanned == 4 and first.sidecars_scanned == 3
    assert first.load.reconciles and first.load.rejected == 0
    rows = db.execute("SELECT task_ref, repo, sha, matched_by FROM task_commits ORDER BY ALL")
    assert rows.fetchall() == [
        ("KAFKA-4", "kafka", "a1", "jira-key"),
        ("KAFKA-99", "kafka", "a1", "jira-key"),
        ("pallets/flask#1", "flask", "b1", "github-ref"),
        ("pallets/flask#2", "flask", "b1", "github-ref"),
        ("tasks/login.md", "flask", "b2", "task-ref"),
    ]
    sidecars = db.execute(
        "SELECT content_hash, task_ref, matched_by FROM reflection_tasks ORDER BY ALL"
    ).fetchall()
    assert sidecars == [("h1", "KAFKA-5", "exact"), ("h2", "KAFKA-4", "jira-key")]
    assert (first.load.read, first.load.loaded) == (7, 7)
    assert first.by_rule == {"jira-key": 3, "github-ref": 2, "task-ref": 1, "exact": 1}

    before = db.execute("SELECT * FROM task_commits ORDER BY ALL").fetchall()
    second = match_task_commits(db)
    assert (second.load.read, second.load.loaded, second.load.already_present) == (7, 0, 7)
    assert db.execute("SELECT * FROM task_commits ORDER BY ALL").fetchall() == before


def test_no_boards_means_no_scan(tmp_path: Path) -> None:
    con = connect(tmp_path / "empty.duckdb")
    con.execute(COMMIT_SQL, ["r", "s", "KAFKA-1", ""])
    summary = match_task_commits(con)
    assert (summary.commits_scanned, summary.load.read) == (0, 0)
    con.close()
