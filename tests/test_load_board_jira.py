"""Jira exports: the real Apache bug-fix dataset, navigator CSV and REST JSON fixtures."""

from __future__ import annotations

import csv
import gzip
import json
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from agent_reflection.load.board.loader import load_board
from agent_reflection.store.db import connect

JIRA_FILES = ["kafka-jira-bug-fix-dataset.csv.gz", "math-jira-bug-fix-dataset.csv.gz"]


def _raw_rows(path: Path) -> list[dict[str, str]]:
    with gzip.open(path, "rt", encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter=";"))


def _table(con: duckdb.DuckDBPyConnection, name: str) -> list[tuple[object, ...]]:
    return con.execute(f"SELECT * FROM {name} ORDER BY ALL").fetchall()


@pytest.fixture
def db(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    con = connect(tmp_path / "board.duckdb")
    yield con
    con.close()


@pytest.mark.shared
@pytest.mark.parametrize("name", JIRA_FILES)
def test_real_jira_export_loads_every_row(
    shared_dir: Path, db: duckdb.DuckDBPyConnection, name: str
) -> None:
    path = shared_dir / "data" / "jira" / name
    rows = _raw_rows(path)
    summary = load_board(db, path, "jira")
    assert summary.reconciles
    assert (summary.read, summary.loaded, summary.rejected) == (len(rows), len(rows), 0)
    project = rows[0]["Project"]
    stored = db.execute(
        "SELECT count(*), count(completed_at), count(DISTINCT uuid) FROM tasks WHERE project = ?",
        [project],
    ).fetchone()
    # every row of the dataset is a resolved, fixed bug: every task has completed_at
    assert stored == (len(rows), len(rows), len(rows))
    by_key = {r["Key"]: r for r in rows}
    sample = db.execute(
        "SELECT task_ref, status, priority, created_at, completed_at FROM tasks ORDER BY task_ref"
        " LIMIT 25"
    ).fetchall()
    for ref, status, priority, created, completed in sample:
        raw = by_key[ref]
        assert (status, priority) == (raw["Status"], raw["Priority"])
        want_created = datetime.strptime(raw["CreationDate"], "%Y-%m-%dT%H:%M:%S.%f%z")
        want_completed = datetime.strptime(raw["ResolutionDate"], "%Y-%m-%dT%H:%M:%S.%f%z")
        assert created == want_created and completed == want_completed


@pytest.mark.shared
@pytest.mark.parametrize("name", JIRA_FILES)
def test_real_jira_links_match_the_raw_tokens(
    shared_dir: Path, db: duckdb.DuckDBPyConnection, name: str
) -> None:
    path = shared_dir / "data" / "jira" / name
    rows = _raw_rows(path)
    expected = set()
    for row in rows:
        for column, direction in (("InwardIssueLinks", "inward"), ("OutwardIssueLinks", "outward")):
            for token in row[column].split():
                link_type, _, target = token.rpartition(":")
                expected.add((row["Key"], target, link_type, direction))
    load_board(db, path, "jira")
    stored = set(
        db.execute("SELECT task_ref, target_ref, kind, direction FROM task_links").fetchall()
    )
    assert stored == expected
    assert len(expected) > 50


@pytest.mark.shared
def test_real_kafka_regression_links(shared_dir: Path, db: duckdb.DuckDBPyConnection) -> None:
    path = shared_dir / "data" / "jira" / JIRA_FILES[0]
    rows = _raw_rows(path)
    load_board(db, path, "jira")
    regressions = [
        (r["Key"], tok.split(":", 1)[1], d)
        for r in rows
        for col, d in (("InwardIssueLinks", "inward"), ("OutwardIssueLinks", "outward"))
        for tok in r[col].split()
        if tok.startswith("Regression:")
    ]
    assert len(regressions) >= 3
    for key, target, direction in regressions:
        found = db.execute(
            "SELECT count(*) FROM task_links WHERE task_ref = ? AND target_ref = ? "
            "AND kind = 'Regression' AND direction = ?",
            [key, target, direction],
        ).fetchone()
        assert found == (1,), (key, target, direction)


@pytest.mark.shared
def test_real_jira_reload_is_a_no_op(shared_dir: Path, db: duckdb.DuckDBPyConnection) -> None:
    path = shared_dir / "data" / "jira" / JIRA_FILES[1]
    first = load_board(db, path, "jira")
    before = {t: _table(db, t) for t in ("tasks", "task_events", "task_links")}
    second = load_board(db, path, "jira")
    after = {t: _table(db, t) for t in ("tasks", "task_events", "task_links")}
    assert before == after
    assert (second.read, second.loaded, second.already_present) == (first.read, 0, first.read)
    loads = db.execute("SELECT rows_read, rows_loaded, rows_already_present, status FROM loads")
    assert loads.fetchall() == [
        (first.read, first.read, 0, "ok"),
        (first.read, 0, first.read, "ok"),
    ]


NAVIGATOR_CSV = (
    "Summary,Issue key,Issue id,Issue Type,Status,Resolution,Priority,Created,Resolved,Labels,"
    "Labels,Inward issue link (Blocks),Outward issue link (Cloners)\n"
    "Crash on start,ABC-1,10001,Bug,Done,Fixed,High,19/Jul/11 9:32 PM,20/Jul/11 10:00 AM,"
    "ui,crash,ABC-7,ABC-9\n"
    '"Multi-line\nsummary",ABC-2,10002,Story,Open,,Low,2011-07-21T08:00:00+0200,,,,,\n'
    "bad key,abc 3,10003,Bug,Open,,Low,2011-07-21,,,,,\n"
    "bad date,ABC-4,10004,Bug,Open,,Low,yesterday,,,,,\n"
    "short row,ABC-5\n"
)


def test_navigator_csv(tmp_path: Path, db: duckdb.DuckDBPyConnection) -> None:
    path = tmp_path / "jira.csv"
    path.write_text(NAVIGATOR_CSV, encoding="utf-8")
    summary = load_board(db, path, "jira")
    assert (summary.read, summary.loaded, summary.rejected) == (5, 2, 3)
    assert summary.reconciles
    task = db.execute(
        "SELECT title, kind, status, resolution, priority, labels, created_at, completed_at, uuid,"
        " origin FROM tasks WHERE task_ref = 'ABC-1'"
    ).fetchone()
    assert task is not None
    assert task[:6] == ("Crash on start", "Bug", "Done", "Fixed", "High", ["ui", "crash"])
    assert task[6] == datetime(2011, 7, 19, 21, 32, tzinfo=UTC)
    assert task[7] == datetime(2011, 7, 20, 10, 0, tzinfo=UTC)
    import hashlib

    assert task[8] == hashlib.sha1(b"jira.csv:10001").hexdigest()
    links = db.execute("SELECT target_ref, kind, direction FROM task_links ORDER BY 1").fetchall()
    assert links == [("ABC-7", "Blocks", "inward"), ("ABC-9", "Cloners", "outward")]
    created = db.execute("SELECT created_at, title FROM tasks WHERE task_ref = 'ABC-2'").fetchone()
    assert created == (datetime(2011, 7, 21, 6, 0, tzinfo=UTC), "Multi-line\nsummary")
    rejected = dict(db.execute("SELECT location, reason FROM rejected").fetchall())
    # line 1 is the header, ABC-2 spans lines 3-4
    assert set(rejected) == {f"{path}:5", f"{path}:6", f"{path}:7"}
    assert "not a Jira key" in rejected[f"{path}:5"]
    assert "created" in rejected[f"{path}:6"] and "yesterday" in rejected[f"{path}:6"]
    assert "2 fields, the header has 13" in rejected[f"{path}:7"]


def _jira_issue(key: str, status: str = "Done", **extra: object) -> dict[str, object]:
    fields: dict[str, object] = {
        "summary": f"summary of {key}",
        "issuetype": {"name": "Bug"},
        "status": {"name": status},
        "resolution": {"name": "Fixed"} if status == "Done" else None,
        "priority": {"name": "Major"},
        "created": "2024-01-02T03:04:05.000+0100",
        "updated": "2024-01-05T00:00:00.000+0000",
        "resolutiondate": "2024-01-04T00:00:00.000+0000" if status == "Done" else None,
        "labels": ["backend"],
        "project": {"key": key.split("-")[0]},
        "issuelinks": [
            {
                "type": {"name": "Regression", "inward": "is caused by", "outward": "causes"},
                "inwardIssue": {"key": "XYZ-1"},
            },
            {
                "type": {"name": "Blocks", "inward": "is blocked by", "outward": "blocks"},
                "outwardIssue": {"key": "XYZ-2"},
            },
        ],
    }
    return {
        "id": "100" + key.split("-")[1],
        "key": key,
        "self": f"https://jira.example.org/rest/api/2/issue/100{key.split('-')[1]}",
        "fields": fields,
        "changelog": {
            "histories": [
                {
                    "created": "2024-01-03T00:00:00.000+0000",
                    "author": {"name": "ann"},
                    "items": [{"field": "status", "fromString": "Open", "toString": "In Progress"}],
                },
                {
                    "created": "2024-01-04T00:00:00.000+0000",
                    "author": {"name": "bob"},
                    "items": [
                        {"field": "status", "fromString": "In Progress", "toString": status},
                        {"field": "assignee", "fromString": None, "toString": "bob"},
                    ],
                },
            ]
        },
        **extra,
    }


def test_rest_json(tmp_path: Path, db: duckdb.DuckDBPyConnection) -> None:
    path = tmp_path / "search.json"
    issues = [_jira_issue("XYZ-10"), _jira_issue("XYZ-11", status="Open"), {"key": 5}, [1]]
    path.write_text(json.dumps({"issues": issues}, indent=1), encoding="utf-8")
    summary = load_board(db, path, "jira")
    assert (summary.read, summary.loaded, summary.rejected) == (4, 2, 2)
    row = db.execute(
        "SELECT origin, uuid, created_at, completed_at, status, resolution, kind, title, project"
        " FROM tasks WHERE task_ref = 'XYZ-10'"
    ).fetchone()
    import hashlib

    assert row == (
        "https://jira.example.org",
        hashlib.sha1(b"https://jira.example.org:10010").hexdigest(),
        datetime(2024, 1, 2, 2, 4, 5, tzinfo=UTC),
        datetime(2024, 1, 4, tzinfo=UTC),
        "Done",
        "Fixed",
        "Bug",
        "summary of XYZ-10",
        "XYZ",
    )
    open_row = db.execute("SELECT completed_at, resolution FROM tasks WHERE task_ref = 'XYZ-11'")
    assert open_row.fetchone() == (None, None)
    events = db.execute(
        "SELECT kind, detail, actor FROM task_events WHERE task_ref = 'XYZ-10'"
        ' ORDER BY "at", kind'
    ).fetchall()
    assert events == [
        ("created", "", None),
        ("status_changed", "Open -> In Progress", "ann"),
        ("resolved", "Fixed", None),
        ("status_changed", "In Progress -> Done", "bob"),
    ]
    links = db.execute(
        "SELECT target_ref, kind, direction, phrase FROM task_links WHERE task_ref = 'XYZ-10'"
        " ORDER BY 1"
    ).fetchall()
    assert links == [
        ("XYZ-1", "Regression", "inward", "is caused by"),
        ("XYZ-2", "Blocks", "outward", "blocks"),
    ]


def test_changed_task_is_replaced_and_counted(
    tmp_path: Path, db: duckdb.DuckDBPyConnection
) -> None:
    path = tmp_path / "issues.jsonl"
    path.write_text("\n".join(json.dumps(_jira_issue(f"XYZ-{n}", "Open")) for n in (1, 2)))
    load_board(db, path, "jira")
    changed = ((1, "Done"), (2, "Open"))
    path.write_text("\n".join(json.dumps(_jira_issue(f"XYZ-{n}", s)) for n, s in changed))
    summary = load_board(db, path, "jira")
    assert (summary.read, summary.loaded, summary.already_present) == (2, 1, 1)
    assert summary.detail["updated"] == 1
    assert db.execute("SELECT status FROM tasks WHERE task_ref = 'XYZ-1'").fetchone() == ("Done",)
    resolved = db.execute("SELECT count(*) FROM task_events WHERE kind = 'resolved'").fetchone()
    assert resolved == (1,)
    assert db.execute("SELECT count(*) FROM task_links").fetchone() == (4,)


def test_gzip_is_read_transparently(tmp_path: Path, db: duckdb.DuckDBPyConnection) -> None:
    path = tmp_path / "jira.csv.gz"
    path.write_bytes(gzip.compress(NAVIGATOR_CSV.encode()))
    seen: list[int] = []
    summary = load_board(db, path, "jira", progress=seen.append)
    assert (summary.loaded, summary.rejected) == (2, 3)
    assert sum(seen) == path.stat().st_size


def test_rest_json_bare_list(tmp_path: Path, db: duckdb.DuckDBPyConnection) -> None:
    path = tmp_path / "issues.json"
    path.write_text(json.dumps([_jira_issue("XYZ-1"), _jira_issue("XYZ-2", "Open")]))
    summary = load_board(db, path, "jira")
    assert (summary.read, summary.loaded, summary.rejected) == (2, 2, 0)
    done = db.execute("SELECT task_ref FROM tasks WHERE completed_at IS NOT NULL").fetchall()
    assert done == [("XYZ-1",)]


def test_perceval_jira_item_keeps_origin_and_uuid(
    tmp_path: Path, db: duckdb.DuckDBPyConnection
) -> None:
    import hashlib

    origin = "https://issues.apache.org/jira"
    issue = _jira_issue("XYZ-7")
    uuid = hashlib.sha1(f"{origin}:{issue['id']}".encode()).hexdigest()
    item = {
        "backend_name": "Jira",
        "origin": origin,
        "category": "issue",
        "uuid": uuid,
        "data": issue,
    }
    path = tmp_path / "perceval.jsonl"
    path.write_text(json.dumps(item) + "\n")
    assert load_board(db, path, "jira").loaded == 1
    row = db.execute("SELECT task_ref, origin, uuid, status FROM tasks").fetchone()
    assert row == ("XYZ-7", origin, item["uuid"], "Done")
