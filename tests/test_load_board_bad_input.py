"""Bad board input: nothing valid lost, nothing invalid silently dropped, clear messages."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from agent_reflection.load.board.loader import FORMATS, load_board
from agent_reflection.load.board.model import ParseOptions
from agent_reflection.load.board.source import BoardFormatError, BoardSourceNotFound
from agent_reflection.load.text import UndecodableText
from agent_reflection.store.db import connect
from cli_inprocess import reflect

FILE_FORMATS = [f for f in FORMATS if f != "git-files"]
GARBAGE = bytes(range(256)) * 8


@pytest.fixture
def db(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    con = connect(tmp_path / "board.duckdb")
    yield con
    con.close()


@pytest.mark.parametrize("fmt", FILE_FORMATS)
def test_binary_garbage_is_one_rejected_record(
    tmp_path: Path, db: duckdb.DuckDBPyConnection, fmt: str
) -> None:
    path = tmp_path / "garbage.bin"
    path.write_bytes(GARBAGE)
    summary = load_board(db, path, fmt)
    # nothing of the file could be read: the load fails (the CLI exits 1), the file is kept
    assert (summary.read, summary.loaded, summary.rejected, summary.status) == (1, 0, 1, "failed")
    location, reason = db.execute("SELECT location, reason FROM rejected").fetchone()  # type: ignore[misc]
    assert location == str(path)
    assert "binary" in reason
    assert summary.error is not None and summary.error.startswith(f"{path}: binary data")
    assert db.execute("SELECT status FROM loads").fetchall() == [("failed",)]


@pytest.mark.parametrize("fmt", FILE_FORMATS)
def test_empty_file_loads_nothing(tmp_path: Path, db: duckdb.DuckDBPyConnection, fmt: str) -> None:
    path = tmp_path / "empty.txt"
    path.write_text("")
    summary = load_board(db, path, fmt)
    assert (summary.read, summary.loaded, summary.rejected, summary.status) == (0, 0, 0, "ok")
    assert summary.detail["warnings"] == [
        f"nothing to read in {path}: it holds no record (an empty file?); is it the right one?"
    ]


@pytest.mark.parametrize("fmt", FORMATS)
def test_missing_path_names_it(tmp_path: Path, db: duckdb.DuckDBPyConnection, fmt: str) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(BoardSourceNotFound, match=r"nope\.json: no such file"):
        load_board(db, missing, fmt)
    assert db.execute("SELECT count(*) FROM loads").fetchone() == (0,)


def test_folder_given_for_a_file_format(tmp_path: Path, db: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(BoardFormatError, match=r"is a folder.*--format git-files"):
        load_board(db, tmp_path, "jira")


def test_unknown_format(tmp_path: Path, db: duckdb.DuckDBPyConnection) -> None:
    path = tmp_path / "x.json"
    path.write_text("[]")
    with pytest.raises(BoardFormatError, match="use one of github, jira"):
        load_board(db, path, "trello")


def test_latin1_row_loads_as_latin1_and_says_so(
    tmp_path: Path, db: duckdb.DuckDBPyConnection
) -> None:
    path = tmp_path / "latin1.csv"
    path.write_bytes("task_ref,title\nA,ok\nB,caf\xe9\n".encode("latin-1"))
    summary = load_board(db, path, "csv")
    assert (summary.read, summary.loaded, summary.rejected) == (2, 2, 0)
    assert db.execute("SELECT title FROM tasks WHERE task_ref = 'B'").fetchone() == ("café",)
    (warning,) = summary.detail["warnings"]
    assert "line 3" in warning and "Windows-1252" in warning


def test_not_utf8_under_explicit_utf8_is_one_error(
    tmp_path: Path, db: duckdb.DuckDBPyConnection
) -> None:
    path = tmp_path / "latin1.csv"
    path.write_bytes("task_ref,title\nA,ok\nB,caf\xe9\n".encode("latin-1"))
    with pytest.raises(UndecodableText, match=r"latin1\.csv: line 3, byte offset 25"):
        load_board(db, path, "csv", ParseOptions(encoding="utf-8"))
    assert db.execute("SELECT status FROM loads").fetchall() == [("failed",)]


def test_corrupt_gzip(tmp_path: Path, db: duckdb.DuckDBPyConnection) -> None:
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"task_ref": "A"}\n' * 1000)[:60])
    summary = load_board(db, path, "jsonl")
    # the lines before the damage are read; the half line and the damage are rejected
    assert summary.reconciles and summary.rejected == 2 and summary.read > 2
    reasons = [r for (r,) in db.execute("SELECT reason FROM rejected ORDER BY location").fetchall()]
    assert any("cannot read the file past line" in r for r in reasons), reasons
    assert db.execute("SELECT task_ref FROM tasks").fetchall() == [("A",)]


def test_rejected_raw_is_bounded(tmp_path: Path, db: duckdb.DuckDBPyConnection) -> None:
    path = tmp_path / "big.jsonl"
    path.write_text(json.dumps({"task_ref": None, "title": "x" * 100_000}) + "\n")
    load_board(db, path, "jsonl")
    (raw,) = db.execute("SELECT raw FROM rejected").fetchone()  # type: ignore[misc]
    assert len(raw) < 5000


def test_cli_as_a_process(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text('{"task_ref": "T-1"}\n')
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent_reflection",
            "load",
            "board",
            str(path),
            "--format",
            "jsonl",
            "--db",
            str(tmp_path / "p.duckdb"),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "read 1 = loaded 1 + rejected 0 + already present 0" in done.stdout


def test_cli_summary_json_and_errors(tmp_path: Path) -> None:
    db_file = tmp_path / "cli.duckdb"
    path = tmp_path / "tasks.csv"
    path.write_text("id,opened\nT-1,2024-01-01\nT-2,never\n")
    bad = reflect("load", "board", str(path), "--format", "csv", "--db", str(db_file))
    assert bad.returncode == 1
    assert "--map task_ref=id" in bad.stderr and "found ['id', 'opened']" in bad.stderr

    ok = reflect(
        "load",
        "board",
        str(path),
        "--format",
        "csv",
        "--map",
        "task_ref=id",
        "--map",
        "created_at=opened",
        "--db",
        str(db_file),
    )
    assert ok.returncode == 0, ok.stderr
    first = ok.stdout.splitlines()[0]
    assert first.endswith("read 2 = loaded 1 + rejected 1 + already present 0")

    map_file = tmp_path / "map.yaml"
    map_file.write_text("task_ref: id\ncreated_at: wrong\n")
    again = reflect(
        "load",
        "board",
        str(path),
        "--format",
        "csv",
        "--map-file",
        str(map_file),
        "--map",
        "created_at=opened",
        "--json",
        "--db",
        str(db_file),
    )
    result = json.loads(again.stdout)
    assert (result["load"]["read"], result["load"]["already_present"]) == (2, 1)
    assert result["load"]["rejected"] == 1
    assert result["match"]["read"] == 0

    match = reflect("load", "match", "--json", "--db", str(db_file))
    assert match.returncode == 0, match.stderr
    assert json.loads(match.stdout)["source"] == "match"

    missing = reflect(
        "load", "board", str(tmp_path / "nope.csv"), "--format", "csv", "--db", str(db_file)
    )
    assert missing.returncode == 1 and "nope.csv: no such file" in missing.stderr
