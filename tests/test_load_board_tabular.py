"""The generic CSV / JSONL board formats and their column mapping."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pytest

from agent_reflection.load.board.loader import load_board
from agent_reflection.load.board.model import ParseOptions
from agent_reflection.load.board.source import BoardFormatError
from agent_reflection.store.db import connect


@pytest.fixture
def db(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    con = connect(tmp_path / "board.duckdb")
    yield con
    con.close()


def test_csv_with_default_column_names(tmp_path: Path, db: duckdb.DuckDBPyConnection) -> None:
    path = tmp_path / "tasks.csv"
    path.write_text(
        "task_ref,title,status,created_at,completed_at,labels,priority\n"
        "T-1,First,done,2024-05-01T10:00:00+02:00,2024-05-02 09:30,a;b,high\n"
        "T-2,Second,open,2024-05-03,,,\n"
    )
    summary = load_board(db, path, "csv")
    assert (summary.read, summary.loaded, summary.rejected) == (2, 2, 0)
    rows = db.execute(
        "SELECT task_ref, source, category, title, status, created_at, completed_at, labels,"
        " priority, origin FROM tasks ORDER BY 1"
    ).fetchall()
    assert rows == [
        (
            "T-1",
            "csv",
            "task",
            "First",
            "done",
            datetime(2024, 5, 1, 8, tzinfo=UTC),
            datetime(2024, 5, 2, 9, 30, tzinfo=UTC),
            ["a", "b"],
            "high",
            "tasks.csv",
        ),
        (
            "T-2",
            "csv",
            "task",
            "Second",
            "open",
            datetime(2024, 5, 3, tzinfo=UTC),
            None,
            [],
            None,
            "tasks.csv",
        ),
    ]
    events = db.execute('SELECT task_ref, kind FROM task_events ORDER BY 1, "at"').fetchall()
    assert events == [("T-1", "created"), ("T-1", "completed"), ("T-2", "created")]


def test_csv_with_mapping(tmp_path: Path, db: duckdb.DuckDBPyConnection) -> None:
    path = tmp_path / "export.csv"
    path.write_text("id;name;opened;closed;state\n42;Do it;2024-01-01;2024-01-09;Closed\n")
    mapping = {
        "task_ref": "id",
        "title": "name",
        "created_at": "opened",
        "completed_at": "closed",
        "status": "state",
    }
    summary = load_board(db, path, "csv", ParseOptions(mapping=mapping))
    assert summary.loaded == 1
    row = db.execute("SELECT task_ref, title, status, completed_at, raw FROM tasks").fetchone()
    assert row is not None
    assert row[:4] == ("42", "Do it", "Closed", datetime(2024, 1, 9, tzinfo=UTC))
    assert json.loads(row[4]) == {
        "id": "42",
        "name": "Do it",
        "opened": "2024-01-01",
        "closed": "2024-01-09",
        "state": "Closed",
    }


def test_csv_changed_header_names_expected_found_and_fix(
    tmp_path: Path, db: duckdb.DuckDBPyConnection
) -> None:
    path = tmp_path / "tasks.csv"
    path.write_text("task_id,title,created\nT-1,x,2024-01-01\n")
    with pytest.raises(BoardFormatError) as info:
        load_board(db, path, "csv")
    message = str(info.value)
    assert "['task_ref']" in message
    assert "found ['task_id', 'title', 'created']" in message
    assert "--map task_ref=task_id" in message
    status = db.execute("SELECT status, rows_read, rows_rejected FROM loads").fetchone()
    assert status == ("failed", 1, 1)
    assert db.execute("SELECT reason FROM rejected").fetchone() == (message,)
    assert db.execute("SELECT count(*) FROM tasks").fetchone() == (0,)


def test_csv_mapped_column_missing(tmp_path: Path, db: duckdb.DuckDBPyConnection) -> None:
    path = tmp_path / "tasks.csv"
    path.write_text("task_ref,opened\nT-1,2024-01-01\n")
    with pytest.raises(BoardFormatError, match=r"created_on.*--map created_at=opened"):
        load_board(db, path, "csv", ParseOptions(mapping={"created_at": "created_on"}))


def test_unknown_mapping_field(tmp_path: Path, db: duckdb.DuckDBPyConnection) -> None:
    path = tmp_path / "tasks.csv"
    path.write_text("task_ref\nT-1\n")
    with pytest.raises(BoardFormatError, match=r"unknown field.*'opened'"):
        load_board(db, path, "csv", ParseOptions(mapping={"opened": "x"}))


def test_jsonl_with_events_links_and_bad_lines(
    tmp_path: Path, db: duckdb.DuckDBPyConnection
) -> None:
    records = [
        {
            "key": "J-1",
            "title": "one",
            "created_at": "2024-02-01T12:00:00-05:00",
            "labels": ["x", "y"],
            "project": "J",
            "events": [{"at": "2024-02-02T00:00:00Z", "kind": "status_changed", "detail": "doing"}],
            "links": [{"target_ref": "J-2", "kind": "blocks", "direction": "outward"}],
        },
        {"key": "J-2", "created_at": 1706745600000},
        {"key": None, "title": "no key"},
        {"key": "J-3", "events": [{"kind": "x"}]},
        {"key": "J-4", "links": [{"target_ref": "J-1", "direction": "sideways"}]},
        ["not", "an", "object"],
    ]
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n\n{broken\n")
    summary = load_board(db, path, "jsonl", ParseOptions(mapping={"task_ref": "key"}))
    assert (summary.read, summary.loaded, summary.rejected) == (7, 2, 5)
    assert summary.reconciles
    created = db.execute("SELECT task_ref, created_at FROM tasks ORDER BY 1").fetchall()
    assert created == [
        ("J-1", datetime(2024, 2, 1, 12, tzinfo=timezone(timedelta(hours=-5)))),
        ("J-2", datetime(2024, 2, 1, tzinfo=UTC)),
    ]
    events = db.execute("SELECT kind, detail FROM task_events WHERE task_ref = 'J-1' ORDER BY 1")
    assert events.fetchall() == [("created", ""), ("status_changed", "doing")]
    links = db.execute("SELECT task_ref, target_ref, kind, direction FROM task_links").fetchall()
    assert links == [("J-1", "J-2", "blocks", "outward")]
    rejected = dict(db.execute("SELECT location, reason FROM rejected").fetchall())
    assert set(rejected) == {f"{path}:{n}" for n in (3, 4, 5, 6, 8)}
    assert "'key'" in rejected[f"{path}:3"]
    assert "'at' and 'kind'" in rejected[f"{path}:4"]
    assert "sideways" in rejected[f"{path}:5"]
    assert "JSON object" in rejected[f"{path}:6"]
    assert "invalid JSON" in rejected[f"{path}:8"]


def test_duplicate_task_ref_in_one_file_keeps_the_last(
    tmp_path: Path, db: duckdb.DuckDBPyConnection
) -> None:
    path = tmp_path / "tasks.csv"
    path.write_text("task_ref,status\nT-1,open\nT-1,done\n")
    summary = load_board(db, path, "csv")
    assert (summary.read, summary.loaded, summary.already_present) == (2, 1, 1)
    assert db.execute("SELECT status FROM tasks").fetchall() == [("done",)]


def test_csv_reload_is_identical(tmp_path: Path, db: duckdb.DuckDBPyConnection) -> None:
    path = tmp_path / "tasks.csv"
    path.write_text("task_ref,created_at,completed_at\nA,2024-01-01,2024-01-02\nB,2024-01-03,\n")
    load_board(db, path, "csv")
    before = db.execute("SELECT * FROM tasks ORDER BY ALL").fetchall()
    events = db.execute("SELECT * FROM task_events ORDER BY ALL").fetchall()
    again = load_board(db, path, "csv")
    assert (again.loaded, again.already_present) == (0, 2)
    assert db.execute("SELECT * FROM tasks ORDER BY ALL").fetchall() == before
    assert db.execute("SELECT * FROM task_events ORDER BY ALL").fetchall() == events


def test_writer_batches_count_each_task_ref_once(db: duckdb.DuckDBPyConnection) -> None:
    from agent_reflection.load.board.model import Task
    from agent_reflection.load.board.writer import TaskWriter
    from agent_reflection.store.db import begin_load

    def task(ref: str, n: int) -> Task:
        return Task(
            task_ref=ref,
            native_id=ref,
            origin="o",
            source="csv",
            category="task",
            raw={"n": n},
            status=f"v{n}",
        )

    refs = ["A", "B", "C", "A", "D", "B", "A"]
    with begin_load(db, "board", "test") as run:
        writer = TaskWriter(db, run.load_id, batch=2)
        for n, ref in enumerate(refs):
            writer.add(task(ref, n))
        result = writer.result()
    assert (result.loaded, result.already_present, result.duplicates_in_load) == (4, 3, 3)
    stored = db.execute("SELECT task_ref, status FROM tasks ORDER BY 1").fetchall()
    assert stored == [("A", "v6"), ("B", "v5"), ("C", "v2"), ("D", "v4")]


def test_load_board_export_runs_the_matcher_unless_told_not_to(
    tmp_path: Path, db: duckdb.DuckDBPyConnection
) -> None:
    from agent_reflection.load.board.loader import load_board_export

    path = tmp_path / "tasks.csv"
    path.write_text("task_ref,title,status,created_at\nT-1,First,open,2024-05-01\n")
    alone = load_board_export(db, path, "csv", match=False)
    assert (alone.board.source, alone.board.loaded, alone.match) == ("board", 1, None)
    matched = load_board_export(db, path, "csv")
    assert matched.board.already_present == 1
    assert matched.match is not None and matched.match.load.source == "match"
