"""Jira REST JSON with ``expand=changelog``: status transitions and resolution changes become
task events (a resolution set = a completion, a resolution cleared = a reopen)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from agent_reflection.experiments.p3.analysis import completed_tasks, signals
from agent_reflection.experiments.registration import load_preregistration
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
