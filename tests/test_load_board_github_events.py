"""GitHub event streams beside issue lists: REST /issues/N/events and /timeline responses (and
``gh api --paginate`` output of them), GraphQL timelineItems, GH Archive events."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import duckdb
import pytest

from agent_reflection.load.board.loader import load_board
from agent_reflection.load.board.model import ParseOptions
from agent_reflection.store.db import connect

API = "https://api.github.com/repos/octo/hello"


@pytest.fixture
def db(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    con = connect(tmp_path / "board.duckdb")
    yield con
    con.close()


def _issue(number: int, **extra: object) -> dict[str, object]:
    return {
        "id": 500 + number,
        "number": number,
        "title": f"issue {number}",
        "state": "closed",
        "created_at": "2024-05-01T09:00:00Z",
        "closed_at": "2024-05-20T09:00:00Z",
        "updated_at": "2024-05-20T09:00:00Z",
        "labels": [],
        "html_url": f"https://github.com/octo/hello/issues/{number}",
        **extra,
    }


#: GET /repos/octo/hello/issues/7/events, as the REST API writes it (no issue in the items).
EVENTS_7 = [
    {
        "id": 1,
        "url": f"{API}/issues/events/1",
        "actor": {"login": "ann"},
        "event": "labeled",
        "label": {"name": "bug", "color": "f00"},
        "commit_id": None,
        "commit_url": None,
        "created_at": "2024-05-01T10:00:00Z",
    },
    {
        "id": 2,
        "url": f"{API}/issues/events/2",
        "actor": {"login": "bob"},
        "event": "referenced",
        "commit_id": "A" * 40,
        "commit_url": f"{API}/commits/{'a' * 40}",
        "created_at": "2024-05-02T10:00:00Z",
    },
    {
        "id": 3,
        "url": f"{API}/issues/events/3",
        "actor": {"login": "bob"},
        "event": "closed",
        "commit_id": None,
        "state_reason": "completed",
        "created_at": "2024-05-03T10:00:00Z",
    },
    {
        "id": 4,
        "url": f"{API}/issues/events/4",
        "actor": {"login": "cy"},
        "event": "reopened",
        "commit_id": None,
        "created_at": "2024-05-10T10:00:00Z",
    },
    {
        "id": 5,
        "url": f"{API}/issues/events/5",
        "actor": {"login": "bob"},
        "event": "closed",
        "commit_id": None,
        "state_reason": None,
        "created_at": "2024-05-20T09:00:00Z",
    },
]


def _events(db: duckdb.DuckDBPyConnection, ref: str) -> list[tuple[object, ...]]:
    return db.execute(
        'SELECT kind, detail, actor, via FROM task_events WHERE task_ref = ? ORDER BY "at", kind',
        [ref],
    ).fetchall()


def test_issue_events_response_beside_the_issue_list(
    tmp_path: Path, db: duckdb.DuckDBPyConnection
) -> None:
    issues = tmp_path / "issues.json"
    issues.write_text(json.dumps([_issue(7)]))
    assert load_board(db, issues, "github").loaded == 1
    events = tmp_path / "events-7.json"  # the issue number comes from the file name
    events.write_text(json.dumps(EVENTS_7))
    summary = load_board(db, events, "github")
    # The last close is the issue's own closed_at: already stored from the issue list.
    assert (summary.read, summary.loaded, summary.rejected, summary.already_present) == (5, 4, 0, 1)
    assert _events(db, "octo/hello#7") == [
        ("created", "", None, "record"),
        ("labeled", "bug", "ann", "events"),
        ("referenced", "a" * 40, "bob", "events"),
        ("closed", "completed", "bob", "events"),
        ("reopened", "", "cy", "events"),
        ("closed", "", None, "record"),
    ]
    commits = db.execute("SELECT task_ref, repo, sha, matched_by FROM task_commits").fetchall()
    assert commits == [("octo/hello#7", "hello", "a" * 40, "github-event")]

    again = load_board(db, events, "github")  # idempotent
    assert (again.read, again.loaded, again.already_present) == (5, 0, 5)

    # The issue changed on the board: its record is replaced, the events loaded beside it stay.
    issues.write_text(json.dumps([_issue(7, title="renamed", updated_at="2024-06-01T00:00:00Z")]))
    changed = load_board(db, issues, "github")
    assert changed.loaded == 1
    kinds = [k for k, *_ in _events(db, "octo/hello#7")]
    assert kinds == ["created", "labeled", "referenced", "closed", "reopened", "closed"]


def test_paginated_timeline_with_cross_references(
    tmp_path: Path, db: duckdb.DuckDBPyConnection
) -> None:
    page1 = [
        {
            "event": "commented",
            "id": 11,
            "actor": {"login": "ann"},
            "created_at": "2024-05-01T11:00:00Z",
            "issue_url": f"{API}/issues/9",
        },
        {
            "event": "cross-referenced",
            "actor": {"login": "dee"},
            "created_at": "2024-05-25T11:00:00Z",
            "source": {
                "type": "issue",
                "issue": {
                    "number": 40,
                    "html_url": "https://github.com/octo/hello/issues/40",
                    "repository": {"full_name": "octo/hello"},
                },
            },
        },
    ]
    page2 = [
        {
            "event": "cross-referenced",
            "actor": {"login": "eve"},
            "created_at": "2024-05-26T11:00:00Z",
            "source": {
                "type": "issue",
                "issue": {
                    "number": 3,
                    "html_url": "https://github.com/octo/other/pull/3",
                    "pull_request": {"url": "x"},
                },
            },
        },
        {
            "event": "referenced",
            "id": 12,
            "actor": {"login": "bob"},
            "commit_id": "b" * 40,
            "commit_url": f"https://api.github.com/repos/octo/lib/commits/{'b' * 40}",
            "created_at": "2024-05-27T11:00:00Z",
        },
    ]
    path = tmp_path / "timeline-9.json"
    # gh api --paginate writes one array per page, one after another
    path.write_text(json.dumps(page1, indent=1) + json.dumps(page2, indent=1))
    summary = load_board(db, path, "github", ParseOptions(project="octo/hello"))
    assert (summary.read, summary.loaded, summary.rejected) == (4, 4, 0)
    assert _events(db, "octo/hello#9") == [
        ("commented", "", "ann", "timeline"),
        ("cross-referenced", "issue octo/hello#40", "dee", "timeline"),
        ("cross-referenced", "pull_request octo/other#3", "eve", "timeline"),
        ("referenced", "b" * 40, "bob", "timeline"),
    ]
    links = db.execute("SELECT target_ref, kind, direction, via FROM task_links ORDER BY 1")
    assert links.fetchall() == [
        ("octo/hello#40", "cross-referenced", "inward", "timeline"),
        ("octo/other#3", "cross-referenced", "inward", "timeline"),
    ]
    # the commit lives in the repository its URL names, not the issue's
    assert db.execute("SELECT repo, sha FROM task_commits").fetchall() == [("lib", "b" * 40)]


def test_event_naming_no_issue_is_rejected_with_the_field(
    tmp_path: Path, db: duckdb.DuckDBPyConnection
) -> None:
    path = tmp_path / "events.json"  # no number in the name, none in the records
    path.write_text(json.dumps([EVENTS_7[0], {**EVENTS_7[1], "commit_id": "not-a-sha"}]))
    summary = load_board(db, path, "github", ParseOptions(project="octo/hello"))
    assert (summary.read, summary.loaded, summary.rejected) == (2, 0, 2)
    reasons = [r[0] for r in db.execute("SELECT reason FROM rejected").fetchall()]
    assert all("field 'issue'" in r and "events-N.json" in r for r in reasons), reasons
    # with the issue named in the record, a bad commit id is named as such
    path.write_text(json.dumps([{**EVENTS_7[1], "issue_number": 7, "commit_id": "not-a-sha"}]))
    bad = load_board(db, path, "github", ParseOptions(project="octo/hello"))
    assert bad.rejected == 1
    reason = db.execute("SELECT reason FROM rejected WHERE load_id = ?", [bad.load_id]).fetchone()
    assert reason is not None and "event.commit_id" in reason[0], reason


def test_graphql_timeline_items(tmp_path: Path, db: duckdb.DuckDBPyConnection) -> None:
    response = {
        "data": {
            "repository": {
                "nameWithOwner": "octo/hello",
                "issues": {
                    "nodes": [
                        {
                            "__typename": "Issue",
                            "number": 21,
                            "title": "crash",
                            "state": "CLOSED",
                            "createdAt": "2024-04-01T00:00:00Z",
                            "closedAt": "2024-04-09T00:00:00Z",
                            "labels": {"nodes": [{"name": "bug"}]},
                            "timelineItems": {
                                "nodes": [
                                    {
                                        "__typename": "ClosedEvent",
                                        "createdAt": "2024-04-02T00:00:00Z",
                                        "actor": {"login": "ann"},
                                        "closer": {"__typename": "Commit", "oid": "c" * 40},
                                    },
                                    {
                                        "__typename": "ReopenedEvent",
                                        "createdAt": "2024-04-05T00:00:00Z",
                                        "actor": {"login": "bob"},
                                    },
                                    {
                                        "__typename": "CrossReferencedEvent",
                                        "createdAt": "2024-04-06T00:00:00Z",
                                        "source": {
                                            "__typename": "Issue",
                                            "number": 30,
                                            "repository": {"nameWithOwner": "octo/hello"},
                                        },
                                    },
                                    {
                                        "__typename": "ClosedEvent",
                                        "createdAt": "2024-04-09T00:00:00Z",
                                        "actor": {"login": "ann"},
                                    },
                                ]
                            },
                        },
                    ]
                },
            }
        }
    }
    path = tmp_path / "graphql.json"
    path.write_text(json.dumps(response))
    summary = load_board(db, path, "github")
    assert (summary.read, summary.loaded, summary.rejected) == (1, 1, 0)
    row = db.execute("SELECT task_ref, labels, status FROM tasks").fetchone()
    assert row == ("octo/hello#21", ["bug"], "closed")
    assert _events(db, "octo/hello#21") == [
        ("created", "", None, "record"),
        ("closed", "c" * 40, "ann", "record"),
        ("reopened", "", "bob", "record"),
        ("cross-referenced", "issue octo/hello#30", None, "record"),
        ("closed", "", "ann", "record"),
    ]
    assert db.execute("SELECT repo, sha FROM task_commits").fetchall() == [("hello", "c" * 40)]


def test_graphql_pages_of_one_issue(tmp_path: Path, db: duckdb.DuckDBPyConnection) -> None:
    def page(*events: dict[str, object]) -> dict[str, object]:
        node = {
            "__typename": "Issue",
            "number": 8,
            "state": "CLOSED",
            "createdAt": "2024-04-01T00:00:00Z",
            "closedAt": "2024-04-09T00:00:00Z",
            "url": "https://github.com/octo/hello/issues/8",
            "timelineItems": {"nodes": list(events), "pageInfo": {"hasNextPage": False}},
        }
        return {"data": {"repository": {"issue": node}}}

    closed = {"__typename": "ClosedEvent", "createdAt": "2024-04-02T00:00:00Z"}
    reopened = {"__typename": "ReopenedEvent", "createdAt": "2024-04-03T00:00:00Z"}
    path = tmp_path / "pages.json"  # gh api graphql --paginate: one document per page
    path.write_text(json.dumps(page(closed)) + "\n" + json.dumps(page(reopened)) + "\n")
    summary = load_board(db, path, "github")
    assert (summary.read, summary.loaded, summary.rejected) == (1, 1, 0)
    kinds = [k for k, *_ in _events(db, "octo/hello#8")]
    assert kinds == ["created", "closed", "reopened", "closed"]


def _archive_event(n: int, kind: str, at: str, payload: dict[str, object]) -> dict[str, object]:
    return {
        "id": str(n),
        "type": kind,
        "actor": {"login": f"u{n}"},
        "repo": {"name": "octo/hello"},
        "payload": payload,
        "public": True,
        "created_at": at,
    }


def test_gh_archive_events(tmp_path: Path, db: duckdb.DuckDBPyConnection) -> None:
    issue = {
        "number": 4,
        "title": "t",
        "state": "open",
        "created_at": "2015-01-01T11:00:00Z",
        "closed_at": None,
        "html_url": "https://github.com/octo/hello/issues/4",
        "labels": [],
    }
    pr = {
        "number": 5,
        "title": "p",
        "state": "closed",
        "created_at": "2015-01-01T10:00:00Z",
        "closed_at": "2015-01-01T12:05:00Z",
        "merged_at": "2015-01-01T12:05:00Z",
        "merged": True,
        "merge_commit_sha": "d" * 40,
        "html_url": "https://github.com/octo/hello/pull/5",
    }
    closed = {**issue, "state": "closed", "closed_at": "2015-01-01T12:01:00Z"}
    lines = [
        _archive_event(1, "PushEvent", "2015-01-01T12:00:00Z", {"commits": []}),
        _archive_event(
            2, "IssuesEvent", "2015-01-01T12:01:01Z", {"action": "closed", "issue": closed}
        ),
        _archive_event(
            3, "IssuesEvent", "2015-01-01T12:03:00Z", {"action": "reopened", "issue": issue}
        ),
        _archive_event(
            4,
            "PullRequestEvent",
            "2015-01-01T12:05:01Z",
            {"action": "closed", "number": 5, "pull_request": pr},
        ),
        _archive_event(5, "WatchEvent", "2015-01-01T12:06:00Z", {"action": "started"}),
    ]
    path = tmp_path / "2015-01-01-12.json.gz"
    with gzip.open(path, "wt") as fh:
        fh.write("\n".join(json.dumps(x) for x in lines) + "\n")
    summary = load_board(db, path, "github")
    assert (summary.read, summary.loaded, summary.rejected) == (2, 2, 0)
    load = db.execute("SELECT detail FROM loads WHERE load_id = ?", [summary.load_id]).fetchone()
    assert load is not None
    assert "5 read, 3 about 2 issue(s)/PR(s)" in load[0] and "PushEvent 1" in load[0]
    # the issue's latest snapshot (reopened, open) with both events; the close is dated by
    # the issue's own closed_at, not the archive's stamp a second later
    assert db.execute("SELECT status FROM tasks WHERE task_ref = 'octo/hello#4'").fetchone() == (
        "open",
    )
    assert [(k, d) for k, d, *_ in _events(db, "octo/hello#4")] == [
        ("created", ""),
        ("closed", ""),
        ("reopened", ""),
    ]
    assert [(k, d) for k, d, *_ in _events(db, "octo/hello#5")] == [
        ("created", ""),
        ("closed", "merged"),
        ("merged", "d" * 40),
    ]
    assert db.execute("SELECT task_ref, sha FROM task_commits").fetchall() == [
        ("octo/hello#5", "d" * 40)
    ]


# --- the real exports in ../shared/ ----------------------------------------------------------


def _jsonl(path: Path) -> list[dict[str, object]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@pytest.mark.slow
def test_onnxruntime_rest_dump(shared_dir: Path, tmp_path: Path) -> None:
    folder = shared_dir / "data" / "github" / "onnxruntime-issue-events"
    if not folder.is_dir():
        pytest.skip(f"{folder} not present")
    con = connect(tmp_path / "onnx.duckdb")
    try:
        summaries = {
            name: load_board(con, folder / f"{name}.jsonl.gz", "github")
            for name in ("issues", "issue_events", "issue_timeline", "pulls")
        }
        for s in summaries.values():
            assert s.rejected == 0
            assert s.read == s.loaded + s.rejected + s.already_present
        raw_events = _jsonl(folder / "issue_events.jsonl.gz")
        raw_timeline = _jsonl(folder / "issue_timeline.jsonl.gz")
        assert summaries["issue_events"].read == len(raw_events)
        assert summaries["issue_timeline"].read == len(raw_timeline)

        def keys(kind: str) -> set[tuple[object, ...]]:
            return {
                (e["issue_number"], e["created_at"], e.get("commit_id"))
                for e in [*raw_events, *raw_timeline]
                if e["event"] == kind
            }

        stored = dict(
            con.execute(
                "SELECT kind, count(*) FROM task_events WHERE via <> 'record' GROUP BY kind"
            ).fetchall()
        )
        # every reopen, reference and cross-reference of the two files, once each
        assert stored["reopened"] == len(keys("reopened"))
        assert stored["referenced"] == len(keys("referenced"))
        crossrefs = {
            (e["issue_number"], e["created_at"], e["source_repo"], e["source_number"])
            for e in raw_timeline
            if e["event"] == "cross-referenced"
        }
        assert stored["cross-referenced"] == len(crossrefs)
        # commit ids of referenced events are linked to their issue
        referenced = {
            (f"microsoft/onnxruntime#{e['issue_number']}", e["commit_id"])
            for e in raw_events
            if e["event"] == "referenced"
        }
        linked = set(
            con.execute(
                "SELECT task_ref, sha FROM task_commits WHERE matched_by = 'github-event'"
            ).fetchall()
        )
        assert referenced <= linked
        merged = {
            (f"microsoft/onnxruntime#{p['number']}", p["merge_commit_sha"])
            for p in _jsonl(folder / "pulls.jsonl.gz")
            if p.get("merged_at") and p.get("merge_commit_sha")
        }
        assert merged <= linked
    finally:
        con.close()


@pytest.mark.slow
def test_gh_archive_hour(shared_dir: Path, tmp_path: Path) -> None:
    path = shared_dir / "data" / "github" / "gharchive-2015-01-01-12" / "2015-01-01-12.json.gz"
    if not path.is_file():
        pytest.skip(f"{path} not present")
    raw = _jsonl(path)
    about: set[str] = set()
    reopened = merged = 0
    for e in raw:
        payload = e["payload"]
        assert isinstance(payload, dict)
        obj = payload.get("pull_request") or payload.get("issue")
        if e["type"] not in ("IssuesEvent", "IssueCommentEvent", "PullRequestEvent"):
            continue
        assert isinstance(obj, dict)
        about.add(f"{e['repo']['name']}#{obj['number']}")  # type: ignore[index]
        reopened += payload.get("action") == "reopened"
        merged += (
            e["type"] == "PullRequestEvent"
            and payload.get("action") == "closed"
            and bool(obj.get("merged"))
        )
    con = connect(tmp_path / "gha.duckdb")
    try:
        summary = load_board(con, path, "github")
        assert (summary.read, summary.loaded, summary.rejected) == (len(about), len(about), 0)
        kinds = Counter(
            dict(con.execute("SELECT kind, count(*) FROM task_events GROUP BY 1").fetchall())
        )
        assert kinds["reopened"] == reopened
        assert kinds["merged"] == merged
        assert con.execute("SELECT count(*) FROM tasks WHERE resolution = 'merged'").fetchone() == (
            merged,
        )
    finally:
        con.close()
