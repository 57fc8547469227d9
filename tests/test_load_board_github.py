"""GitHub issues/PRs as the REST API and ``gh ... list --json`` write them."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from agent_reflection.load.board.loader import load_board
from agent_reflection.store.db import connect


@pytest.fixture
def db(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    con = connect(tmp_path / "board.duckdb")
    yield con
    con.close()


def _rest_issue(number: int, **extra: object) -> dict[str, object]:
    return {
        "id": 9000 + number,
        "number": number,
        "title": f"issue {number}",
        "state": "closed",
        "state_reason": "completed",
        "created_at": "2024-03-01T10:00:00Z",
        "updated_at": "2024-03-05T10:00:00Z",
        "closed_at": "2024-03-04T10:00:00Z",
        "labels": [{"id": 1, "name": "bug"}, {"id": 2, "name": "p1"}],
        "html_url": f"https://github.com/pallets/flask/issues/{number}",
        "repository_url": "https://api.github.com/repos/pallets/flask",
        **extra,
    }


REST_TIMELINE = [
    {
        "event": "labeled",
        "created_at": "2024-03-01T11:00:00Z",
        "actor": {"login": "ann"},
        "label": {"name": "bug"},
    },
    {
        "event": "cross-referenced",
        "created_at": "2024-03-02T11:00:00Z",
        "source": {
            "type": "issue",
            "issue": {"number": 77, "html_url": "https://github.com/pallets/werkzeug/pull/77"},
        },
    },
    {
        "event": "closed",
        "created_at": "2024-03-03T10:00:00Z",
        "actor": {"login": "bob"},
        "commit_id": "abc1234",
    },
    {"event": "reopened", "created_at": "2024-03-03T12:00:00Z", "actor": {"login": "bob"}},
    {"event": "closed", "created_at": "2024-03-04T10:00:00Z", "actor": {"login": "bob"}},
    {"event": "committed", "sha": "deadbeef"},
]


def test_rest_issues_and_prs_with_timeline(tmp_path: Path, db: duckdb.DuckDBPyConnection) -> None:
    records = [
        _rest_issue(1, timeline=REST_TIMELINE),
        _rest_issue(
            2,
            state="open",
            state_reason=None,
            closed_at=None,
            pull_request={"url": "x", "merged_at": None},
            html_url="https://github.com/pallets/flask/pull/2",
        ),
    ]
    path = tmp_path / "issues.json"
    path.write_text(json.dumps(records, indent=2))
    summary = load_board(db, path, "github")
    assert (summary.read, summary.loaded, summary.rejected) == (2, 2, 0)
    rows = db.execute(
        "SELECT task_ref, category, kind, project, status, resolution, labels, origin, uuid,"
        " completed_at FROM tasks ORDER BY task_ref"
    ).fetchall()
    assert rows == [
        (
            "pallets/flask#1",
            "issue",
            "issue",
            "pallets/flask",
            "closed",
            "completed",
            ["bug", "p1"],
            "https://github.com/pallets/flask",
            hashlib.sha1(b"https://github.com/pallets/flask:9001").hexdigest(),
            datetime(2024, 3, 4, 10, tzinfo=UTC),
        ),
        (
            "pallets/flask#2",
            "pull_request",
            "pull_request",
            "pallets/flask",
            "open",
            None,
            ["bug", "p1"],
            "https://github.com/pallets/flask",
            hashlib.sha1(b"https://github.com/pallets/flask:9002").hexdigest(),
            None,
        ),
    ]
    events = db.execute(
        "SELECT kind, detail, actor FROM task_events WHERE task_ref = 'pallets/flask#1'"
        ' ORDER BY "at"'
    ).fetchall()
    assert events == [
        ("created", "", None),
        ("labeled", "bug", "ann"),
        ("cross-referenced", "pull_request pallets/werkzeug#77", None),
        ("closed", "abc1234", "bob"),
        ("reopened", "", "bob"),
        ("closed", "", "bob"),
    ]
    links = db.execute("SELECT task_ref, target_ref, kind, direction FROM task_links").fetchall()
    assert links == [("pallets/flask#1", "pallets/werkzeug#77", "cross-referenced", "inward")]
    # the closing commit the timeline names is linked to the task (repo: the clone's name)
    linked = db.execute("SELECT task_ref, repo, sha, matched_by FROM task_commits").fetchall()
    assert linked == [("pallets/flask#1", "flask", "abc1234", "github-event")]


def test_gh_cli_json(tmp_path: Path, db: duckdb.DuckDBPyConnection) -> None:
    records = [
        {
            "number": 5,
            "title": "gh issue",
            "state": "CLOSED",
            "stateReason": "NOT_PLANNED",
            "createdAt": "2024-01-01T00:00:00Z",
            "closedAt": "2024-01-02T00:00:00Z",
            "labels": [{"id": "LA_1", "name": "wontfix", "color": "fff"}],
            "url": "https://github.com/octo/hello/issues/5",
            "id": "I_kwDOA",
        },
        {
            "number": 6,
            "title": "gh pr",
            "state": "MERGED",
            "createdAt": "2024-01-01T00:00:00Z",
            "closedAt": "2024-01-03T00:00:00Z",
            "mergedAt": "2024-01-03T00:00:00Z",
            "labels": [],
            "url": "https://github.com/octo/hello/pull/6",
            "timelineItems": {
                "nodes": [
                    {
                        "__typename": "LabeledEvent",
                        "createdAt": "2024-01-01T01:00:00Z",
                        "label": {"name": "ready"},
                        "actor": {"login": "cy"},
                    },
                    {"__typename": "MergedEvent", "createdAt": "2024-01-03T00:00:00Z"},
                ]
            },
        },
    ]
    path = tmp_path / "gh.json"
    path.write_text(json.dumps(records))
    summary = load_board(db, path, "github")
    assert (summary.loaded, summary.rejected) == (2, 0)
    rows = db.execute(
        "SELECT task_ref, category, status, resolution, completed_at FROM tasks ORDER BY 1"
    ).fetchall()
    assert rows == [
        ("octo/hello#5", "issue", "closed", "not_planned", datetime(2024, 1, 2, tzinfo=UTC)),
        ("octo/hello#6", "pull_request", "merged", "merged", datetime(2024, 1, 3, tzinfo=UTC)),
    ]
    kinds = db.execute(
        "SELECT kind FROM task_events WHERE task_ref = 'octo/hello#6' ORDER BY \"at\", kind"
    ).fetchall()
    assert kinds == [("created",), ("labeled",), ("closed",), ("merged",)]


def test_jsonl_project_option_and_bad_records(
    tmp_path: Path, db: duckdb.DuckDBPyConnection
) -> None:
    lines = [
        json.dumps(
            {"number": 1, "title": "no url", "state": "open", "created_at": "2024-01-01T00:00:00"}
        ),
        json.dumps({"number": "seven", "title": "wrong type"}),
        json.dumps({"number": 3, "created_at": 12}),  # epoch seconds are accepted
        json.dumps({"number": 4, "created_at": ["not", "a", "time"]}),
        '{"number": 5, "title": "trunc',
        json.dumps({"number": 6, "labels": "a,b"}),
    ]
    path = tmp_path / "issues.jsonl"
    path.write_text("\n".join(lines) + "\n")
    summary = load_board(db, path, "github")
    assert (summary.read, summary.loaded, summary.rejected) == (6, 0, 6)
    reasons = db.execute("SELECT reason FROM rejected ORDER BY location").fetchall()
    assert all("--project" in r for (r,) in reasons[:1])

    from agent_reflection.load.board.model import ParseOptions

    summary = load_board(db, path, "github", ParseOptions(project="me/mine"))
    assert (summary.read, summary.loaded, summary.rejected) == (6, 3, 3)
    assert summary.reconciles
    rejected = dict(
        db.execute(
            "SELECT location, reason FROM rejected WHERE load_id = ?", [summary.load_id]
        ).fetchall()
    )
    assert set(rejected) == {f"{path}:2", f"{path}:4", f"{path}:5"}
    assert "'number'" in rejected[f"{path}:2"] and "seven" in rejected[f"{path}:2"]
    assert "created_at" in rejected[f"{path}:4"]
    assert "invalid JSON" in rejected[f"{path}:5"]
    naive = db.execute("SELECT created_at FROM tasks WHERE task_ref = 'me/mine#1'").fetchone()
    assert naive == (datetime(2024, 1, 1, tzinfo=UTC),)  # naive timestamps are UTC
    assert db.execute("SELECT labels FROM tasks WHERE task_ref = 'me/mine#6'").fetchone() == (
        ["a", "b"],
    )


def test_truncated_json_array_keeps_complete_records(
    tmp_path: Path, db: duckdb.DuckDBPyConnection
) -> None:
    text = json.dumps([_rest_issue(n) for n in (1, 2, 3)], indent=2)
    path = tmp_path / "cut.json"
    path.write_text(text[: text.index('"number": 3') + 5])
    summary = load_board(db, path, "github")
    assert (summary.read, summary.loaded, summary.rejected) == (3, 2, 1)
    location, reason = db.execute("SELECT location, reason FROM rejected").fetchone()  # type: ignore[misc]
    line = text[: text.index('"number": 3')].rsplit("{", 1)[0].count("\n") + 1
    assert location == f"{path}:{line}"
    assert "truncated" in reason


def test_reload_is_identical(tmp_path: Path, db: duckdb.DuckDBPyConnection) -> None:
    path = tmp_path / "issues.json"
    path.write_text(json.dumps([_rest_issue(1, timeline=REST_TIMELINE), _rest_issue(2)]))
    load_board(db, path, "github")
    tables = ("tasks", "task_events", "task_links")
    before = {t: db.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in tables}
    again = load_board(db, path, "github")
    after = {t: db.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in tables}
    assert before == after
    assert (again.loaded, again.already_present) == (0, 2)


def test_search_api_items_object(tmp_path: Path, db: duckdb.DuckDBPyConnection) -> None:
    path = tmp_path / "search.json"
    body = {
        "total_count": 2,
        "incomplete_results": False,
        "items": [_rest_issue(7), _rest_issue(8, labels=[])],
    }
    path.write_text(json.dumps(body))
    summary = load_board(db, path, "github")
    assert (summary.read, summary.loaded) == (2, 2)
    refs = db.execute("SELECT task_ref, labels FROM tasks ORDER BY 1").fetchall()
    assert refs == [("pallets/flask#7", ["bug", "p1"]), ("pallets/flask#8", [])]


def _perceval_uuid(*args: str) -> str:
    """perceval.backend.uuid, restated: sha1 of the args joined by ':'."""
    return hashlib.sha1(":".join(args).encode("utf-8", errors="surrogateescape")).hexdigest()


def test_perceval_items_pretty_printed_one_after_another(
    tmp_path: Path, db: duckdb.DuckDBPyConnection
) -> None:
    origin = "https://github.com/pallets/flask"
    items = []
    for n in (3, 4):
        issue = _rest_issue(n)
        items.append(
            {
                "backend_name": "GitHub",
                "backend_version": "0.26",
                "perceval_version": "0.21",
                "category": "issue",
                "origin": origin,
                "tag": origin,
                "uuid": _perceval_uuid(origin, str(issue["id"])),
                "updated_on": 1709632800.0,
                "timestamp": 1709632900.0,
                "data": issue,
            }
        )
    path = tmp_path / "perceval.json"
    path.write_text("\n".join(json.dumps(item, indent=4) for item in items) + "\n{oops\n")
    summary = load_board(db, path, "github")
    assert (summary.read, summary.loaded, summary.rejected) == (3, 2, 1)
    stored = db.execute("SELECT task_ref, uuid, origin FROM tasks ORDER BY 1").fetchall()
    assert stored == [
        ("pallets/flask#3", items[0]["uuid"], origin),
        ("pallets/flask#4", items[1]["uuid"], origin),
    ]
    (location,) = db.execute("SELECT location FROM rejected").fetchone()  # type: ignore[misc]
    line = sum(json.dumps(item, indent=4).count("\n") + 1 for item in items) + 1
    assert location == f"{path}:{line}"
