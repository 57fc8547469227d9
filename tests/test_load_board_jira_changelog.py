"""Jira REST JSON with ``expand=changelog``: status transitions and resolution changes become
task events (a resolution set = a completion, a resolution cleared = a reopen)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from agent_reflection.experiments.p3.analysis import completed_tasks, run_p3, signals
from agent_reflection.experiments.registration import apply_overrides, load_preregistration
from agent_reflection.load.board.loader import load_board
from agent_reflection.store.db import connect

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def db(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    con = connect(tmp_path / "jira.duckdb")
    yield con
    con.close()


def _history(at: str, who: str, *items: tuple[str, str | None, str | None]) -> dict[str, object]:
    return {
        "created": at,
        "author": {"name": who},
        "items": [{"field": f, "fromString": a, "toString": b} for f, a, b in items],
    }


ISSUE = {
    "id": "10042",
    "key": "ABC-42",
    "self": "https://jira.example.org/rest/api/2/issue/10042",
    "fields": {
        "summary": "NPE on save",
        "issuetype": {"name": "Bug"},
        "status": {"name": "Closed"},
        "resolution": {"name": "Fixed"},
        "created": "2024-01-01T00:00:00.000+0000",
        "resolutiondate": "2024-02-20T00:00:00.000+0000",
        "project": {"key": "ABC"},
    },
    "changelog": {
        "histories": [
            _history(
                "2024-01-05T00:00:00.000+0000",
                "ann",
                ("status", "Open", "Resolved"),
                ("resolution", None, "Fixed"),
            ),
            _history(
                "2024-01-12T00:00:00.000+0000",
                "bob",
                ("status", "Resolved", "Reopened"),
                ("resolution", "Fixed", None),
            ),
            _history(
                "2024-02-20T00:00:00.000+0000",
                "ann",
                ("status", "Reopened", "Closed"),
                ("resolution", None, "Fixed"),
                ("assignee", None, "ann"),
            ),
        ]
    },
}


def test_changelog_status_and_resolution_events(
    tmp_path: Path, db: duckdb.DuckDBPyConnection
) -> None:
    path = tmp_path / "search.json"
    path.write_text(json.dumps({"issues": [ISSUE]}))
    summary = load_board(db, path, "jira")
    assert (summary.read, summary.loaded, summary.rejected) == (1, 1, 0)
    events = db.execute(
        'SELECT "at"::DATE::VARCHAR, kind, detail, actor FROM task_events ORDER BY "at", kind'
    ).fetchall()
    assert events == [
        ("2024-01-01", "created", "", None),
        ("2024-01-05", "resolution_changed", " -> Fixed", "ann"),
        ("2024-01-05", "resolved", "Fixed", "ann"),
        ("2024-01-05", "status_changed", "Open -> Resolved", "ann"),
        ("2024-01-12", "reopened", "resolution Fixed cleared", "bob"),
        ("2024-01-12", "resolution_changed", "Fixed -> ", "bob"),
        ("2024-01-12", "status_changed", "Resolved -> Reopened", "bob"),
        ("2024-02-20", "resolution_changed", " -> Fixed", "ann"),
        ("2024-02-20", "resolved", "Fixed", "ann"),
        ("2024-02-20", "status_changed", "Reopened -> Closed", "ann"),
    ]


def test_p3_sees_the_first_completion_and_the_reopen(
    tmp_path: Path, db: duckdb.DuckDBPyConnection
) -> None:
    path = tmp_path / "search.json"
    path.write_text(json.dumps({"issues": [ISSUE]}))
    load_board(db, path, "jira")
    p = load_preregistration(REPO_ROOT / "preregistration.toml").p3
    tasks = completed_tasks(db, p)
    # the first resolution (Jan 5), not the export's last resolutiondate (Feb 20)
    assert tasks["completed_at"].tolist() == [datetime(2024, 1, 5, tzinfo=UTC)]
    sig = signals(db, p)
    reopens = sig[sig["kind"] == "reopened"]
    assert sorted(reopens["detail"]) == [
        "reopened: resolution Fixed cleared",
        "status_changed: Resolved -> Reopened",
    ]


def test_a_regression_between_the_first_and_last_resolution_counts(
    tmp_path: Path, db: duckdb.DuckDBPyConnection
) -> None:
    """ABC-42 was resolved on Jan 5, reopened on Jan 12 and resolved again on Feb 20; ABC-50,
    filed on Jan 10, says ABC-42 broke it. Dated from the first resolution the regression is
    a signal 5 days after completion; dated from the last (all a CSV export keeps) it falls
    before the completion and is lost, so P3 lists it as possibly missed."""
    regression = {
        "id": "10050",
        "key": "ABC-50",
        "fields": {
            "summary": "save corrupts the file",
            "status": {"name": "Open"},
            "created": "2024-01-10T00:00:00.000+0000",
            "project": {"key": "ABC"},
        },
    }
    linked = json.loads(json.dumps(ISSUE))
    linked["fields"]["issuelinks"] = [
        {
            "type": {"name": "Regression", "inward": "is broken by", "outward": "breaks"},
            "outwardIssue": {"key": "ABC-50"},
        }
    ]
    # no reopen in this copy: the regression link is the only signal
    linked["changelog"]["histories"] = [ISSUE["changelog"]["histories"][0]]
    path = tmp_path / "search.json"
    path.write_text(json.dumps({"issues": [linked, regression]}))
    load_board(db, path, "jira")
    prereg = apply_overrides(
        load_preregistration(REPO_ROOT / "preregistration.toml"),
        {"p3.min_tasks": 1, "p3.required_channels": [], "p3.as_of": "2024-06-01T00:00:00+00:00"},
    )
    result = run_p3(db, prereg)
    (task,) = result.details["tasks"]
    assert (task["task_ref"], task["first_signal_kind"]) == ("ABC-42", "regression-link")
    assert task["days_to_signal"] == 5.0
    assert result.details["possibly_missed"] == []

    # the same two issues as a Jira CSV: one ResolutionDate, the last
    csv = tmp_path / "abc.csv"
    csv.write_text(
        "Key;Status;CreationDate;ResolutionDate;InwardIssueLinks;OutwardIssueLinks\n"
        "ABC-42;Closed;2024-01-01T00:00:00.000+0000;2024-02-20T00:00:00.000+0000;;"
        "Regression:ABC-50\n"
        "ABC-50;Open;2024-01-10T00:00:00.000+0000;;;\n"
    )
    con = connect(tmp_path / "csv.duckdb")
    load_board(con, csv, "jira")
    from_csv = run_p3(con, prereg)
    (task,) = from_csv.details["tasks"]
    assert task["first_signal_kind"] is None  # 41 days BEFORE the only completion it knows
    assert from_csv.details["possibly_missed"] == [
        {
            "task_ref": "ABC-42",
            "detail": "Regression (outward) ABC-50",
            "at": "2024-01-10T00:00:00+00:00",
        }
    ]
    assert any("1 regression link(s) point at a task filed after" in n for n in from_csv.notes)
    con.close()
