"""Loads that cannot do their job say so: a database path that is no database, a file that
cannot be read to its end, an input whose every record is rejected, an empty input.

Run as the user runs them (the real CLI, real DuckDB files, real gzip damage, the real
exports of ../shared/ where they show the case); every failed load must still reconcile and
keep what it read."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import duckdb
import pytest

from agent_reflection.load.board.source import guess_format
from agent_reflection.store.db import (
    LoadRun,
    NotADatabase,
    check_database_file,
    connect,
    describe_file,
)
from cli_inprocess import reflect

LABELS = '{"confidence": 0.5, "correct": true}\n{"confidence": 0.9, "correct": false}\n'


def _loads(db: Path) -> list[tuple[object, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(
            "SELECT status, rows_read, rows_loaded, rows_rejected, rows_already_present, detail "
            "FROM loads ORDER BY load_id"
        ).fetchall()
    finally:
        con.close()


def _count(db: Path, sql: str) -> int:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return int(con.execute(sql).fetchone()[0])  # type: ignore[index]
    finally:
        con.close()


def _reconciles(row: tuple[object, ...]) -> bool:
    _status, read, loaded, rejected, present, _detail = row
    return read == loaded + rejected + present  # type: ignore[operator]


# -- 1. --db must be a DuckDB database ---------------------------------------------------------


def test_existing_jsonl_as_db_is_refused_and_left_alone(tmp_path: Path) -> None:
    labels = tmp_path / "lab.jsonl"
    labels.write_text(LABELS)
    not_db = tmp_path / "lab2.jsonl"
    not_db.write_text(LABELS)
    done = reflect("load", "labels", str(labels), "--db", str(not_db))
    # before: "loaded 2 + rejected 0", exit 0, and nothing kept (DuckDB opened it in memory)
    assert done.returncode == 1
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"Error: {not_db} is a JSONL file, not a DuckDB database")
    assert "Pass --db" in line
    assert not_db.read_text() == LABELS


@pytest.mark.parametrize(
    ("name", "content", "kind"),
    [
        ("notadb.txt", b"just some notes\n", "a text file"),
        ("x.csv", b"a,b\n1,2\n", "a CSV file"),
        ("x.csv.gz", gzip.compress(b"a,b\n1,2\n", mtime=0), "a gzip-compressed file"),
        ("x.json", b'[{"a": 1}]', "a JSON file"),
        ("empty.duckdb", b"", "an empty file"),
    ],
)
def test_other_files_as_db_are_refused_by_every_command(
    tmp_path: Path, name: str, content: bytes, kind: str
) -> None:
    labels = tmp_path / "lab.jsonl"
    labels.write_text(LABELS)
    not_db = tmp_path / name
    not_db.write_bytes(content)
    for args in (("load", "labels", str(labels)), ("rejected",)):
        done = reflect(*args, "--db", str(not_db))
        assert done.returncode == 1, done
        assert "Traceback" not in done.stderr and "IOException" not in done.stderr
        assert done.stderr.startswith(f"Error: {not_db} is {kind}, not a DuckDB database")
    assert not_db.read_bytes() == content


def test_sqlite_and_parquet_files_are_refused(tmp_path: Path) -> None:
    lite = tmp_path / "platform.sqlite"
    sqlite3.connect(lite).execute("CREATE TABLE t (x)").connection.commit()
    parquet = tmp_path / "t.parquet"
    mem = duckdb.connect(":memory:")
    mem.execute(f"COPY (SELECT 1 AS x) TO '{parquet}' (FORMAT parquet)")
    mem.close()
    with pytest.raises(NotADatabase, match="is a SQLite database, not a DuckDB database"):
        connect(lite)
    with pytest.raises(NotADatabase, match="is a Parquet file, not a DuckDB database"):
        connect(parquet, read_only=True)


def test_new_files_memory_and_real_databases_still_open(tmp_path: Path) -> None:
    labels = tmp_path / "lab.jsonl"
    labels.write_text(LABELS)
    for db in (tmp_path / "new.duckdb", tmp_path / "sub" / "odd-name.jsonl"):
        first = reflect("load", "labels", str(labels), "--db", str(db))
        assert first.returncode == 0, first.stderr
        again = reflect("load", "labels", str(labels), "--db", str(db))
        assert again.returncode == 0, again.stderr
        assert "read 2 = loaded 0 + rejected 0 + already present 2" in again.stdout
        assert _count(db, "SELECT count(*) FROM labels") == 2  # stored in the file
        check_database_file(db)
    con = connect(":memory:")
    assert con.execute("SELECT count(*) FROM loads").fetchone() == (0,)
    con.close()


def test_describe_file() -> None:
    assert describe_file(b"\x00" * 8 + b"DUCK", "x.duckdb") == "a binary file"
    assert describe_file(b'{"a": 1}\n{"a": 2}\n', "x.txt") == "a JSONL file"
    assert describe_file(b"col1;col2\n", "x") == "a CSV file"


def test_a_data_file_duckdb_would_open_in_memory(tmp_path: Path) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text('{"a": 1}\n')
    raw = duckdb.connect(str(data))  # DuckDB itself: a database in memory, nothing in the file
    try:
        path = raw.execute(
            "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
        ).fetchone()
    finally:
        raw.close()
    assert path == (None,)
    with pytest.raises(NotADatabase):
        connect(data)


# -- 2. loads that keep nothing, or not everything, fail -----------------------------------


def test_jira_csv_as_github_fails_and_names_the_format(tmp_path: Path, shared_dir: Path) -> None:
    jira = shared_dir / "data" / "jira" / "math-jira-bug-fix-dataset.csv.gz"
    db = tmp_path / "b.duckdb"
    done = reflect("load", "board", str(jira), "--format", "github", "--json", "--db", str(db))
    # before: status ok, exit 0, 427 rejects saying only "invalid JSON"
    assert done.returncode == 1
    board = json.loads(done.stdout)["load"]
    assert (board["read"], board["loaded"], board["rejected"]) == (427, 0, 427)
    assert board["status"] == "failed"
    error = board["detail"]["error"]
    assert error.startswith(f"every record of {jira} was rejected (427), nothing was loaded")
    assert "looks like a Jira CSV export: is it --format jira?" in error
    assert done.stderr.strip().splitlines()[-1] == f"Error: {error}"
    rows = _loads(db)
    assert rows[0][0] == "failed" and _reconciles(rows[0])
    assert _count(db, "SELECT count(*) FROM rejected WHERE load_id = 1") == 427
    fixed = reflect("load", "board", str(jira), "--format", "jira", "--no-match", "--db", str(db))
    assert fixed.returncode == 0, fixed.stderr


def test_github_json_as_jira_fails_and_names_the_format(tmp_path: Path, shared_dir: Path) -> None:
    pulls = shared_dir / "data" / "github" / "onnxruntime-issue-events" / "pulls.jsonl.gz"
    db = tmp_path / "b.duckdb"
    done = reflect("load", "board", str(pulls), "--format", "jira", "--no-match", "--db", str(db))
    assert done.returncode == 1
    assert "read 321 = loaded 0 + rejected 321 + already present 0" in done.stdout
    assert "field 'key': None is not a Jira key" in done.stderr
    assert "pulls.jsonl.gz looks like GitHub JSON: is it --format github?" in done.stderr


def test_truncated_gzip_labels_fail_and_keep_what_was_read(
    tmp_path: Path, shared_dir: Path
) -> None:
    hle = shared_dir / "data" / "calibration" / "hle-verbalized-confidence.jsonl.gz"
    whole = hle.read_bytes()
    cut = tmp_path / "hle.jsonl.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    with gzip.open(cut, "rb") as fh:  # the complete lines before the damage, counted here
        readable = b""
        with pytest.raises(EOFError):
            while chunk := fh.read1(1 << 16):
                readable += chunk
    complete = readable.count(b"\n")
    db = tmp_path / "l.duckdb"
    done = reflect("load", "labels", str(cut), "--db", str(db))
    # before: exit 0 and "1 record(s) rejected"; the cause only in `reflect rejected`
    assert done.returncode == 1
    expected = f"read {complete + 1:,} = loaded {complete:,} + rejected 1 + already present 0"
    assert expected in done.stdout
    (error,) = done.stderr.strip().splitlines()
    assert error.startswith(f"Error: {cut}:{complete + 1}: cannot read the file past line")
    assert "Compressed file ended before the end-of-stream marker" in error
    assert f"loaded {complete:,}, already present 0" in error
    assert _count(db, "SELECT count(*) FROM labels") == complete
    status, *_counts, detail = _loads(db)[0]
    assert status == "failed" and _reconciles(_loads(db)[0])
    assert json.loads(str(detail))["file_errors"][0].startswith(f"{cut}:{complete + 1}: ")
    # the whole file later: only what is new loads, and the load is ok
    whole_file = tmp_path / "hle-whole.jsonl.gz"
    whole_file.write_bytes(whole)
    again = reflect("load", "labels", str(whole_file), "--corpus", "hle", "--db", str(db))
    assert again.returncode == 0, again.stderr
    assert f"loaded {4209 - complete:,} + rejected 0 + already present {complete:,}" in again.stdout


def test_gz_that_is_not_gzip(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl.gz"
    path.write_bytes(b'\x7fw{"confidence": 0.5, "correct": true}\n')
    done = reflect("load", "labels", str(path), "--db", str(tmp_path / "l.duckdb"))
    assert done.returncode == 1
    assert "line 0" not in done.stderr  # before: "cannot read the file past line 0"
    assert f"Error: {path}:1: cannot read the file: its name ends in .gz but it is not " in (
        done.stderr
    )
    assert "rename it without .gz, or compress it with gzip. Nothing was loaded" in done.stderr


def test_truncated_ci_json_fails(tmp_path: Path) -> None:
    path = tmp_path / "ci.json"
    path.write_text('{"workflow_runs": [{"id": 1, "head_sha": "')
    db = tmp_path / "c.duckdb"
    done = reflect("load", "ci", str(path), "--db", str(db))
    assert done.returncode == 1
    assert "read 1 = loaded 0 + rejected 1 + already present 0" in done.stdout
    assert f"Error: {path}:1: invalid JSON" in done.stderr
    assert "truncated or corrupt file?" in done.stderr
    assert _loads(db)[0][0] == "failed"


def test_a_failed_file_does_not_stop_the_others_and_silent_still_tells(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text(LABELS)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"confidence": 7, "correct": true}\n')
    db = tmp_path / "l.duckdb"
    done = reflect("load", "labels", str(bad), str(good), "--silent", "--db", str(db))
    assert done.returncode == 1 and done.stdout == ""
    (error,) = done.stderr.strip().splitlines()
    assert error.startswith(f"Error: every record of {bad} was rejected (1), nothing was loaded")
    assert "'confidence' must be in [0, 1]" in error
    assert [row[0] for row in _loads(db)] == ["failed", "ok"]
    assert _count(db, "SELECT count(*) FROM labels") == 2


def test_some_rejected_records_are_still_ok(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_text(LABELS + '{"confidence": 7, "correct": true}\n')
    done = reflect("load", "labels", str(path), "--json", "--db", str(tmp_path / "l.duckdb"))
    assert done.returncode == 0 and done.stderr == ""
    (summary,) = json.loads(done.stdout)["loads"]
    assert summary["status"] == "ok" and "error" not in summary["detail"]


@pytest.mark.parametrize(
    ("command", "name", "extra"),
    [
        ("labels", "empty.jsonl", ()),
        ("board", "empty.csv", ("--format", "csv", "--no-match")),
        ("runs", "empty.jsonl", ()),
        ("ci", "empty.json", ()),
        ("transcripts", "empty.jsonl", ()),
    ],
)
def test_empty_input_warns(tmp_path: Path, command: str, name: str, extra: tuple[str, ...]) -> None:
    path = tmp_path / name
    path.write_text("\n\n" if command != "ci" else "")
    done = reflect("load", command, str(path), *extra, "--db", str(tmp_path / "e.duckdb"))
    assert done.returncode == 0, done.stderr
    assert "read 0 = loaded 0 + rejected 0 + already present 0" in done.stdout
    assert done.stderr.startswith(f"Warning: nothing to read in {path}")


def test_sidecars_all_rejected_fail(tmp_path: Path) -> None:
    (tmp_path / "a.reflection.json").write_text('{"schema": "reflection.v1"}')
    done = reflect("load", "sidecars", str(tmp_path), "--db", str(tmp_path / "s.duckdb"))
    assert done.returncode == 1
    assert "every record of" in done.stderr and "was rejected (1)" in done.stderr


def _run(read: int, loaded: int, rejected: int, **kept: object) -> LoadRun:
    """A load of x.csv (id 3) with these counts, as its loader left it."""
    run = LoadRun(duckdb.connect(), 3, "labels", "x.csv", fail_if_all_rejected=True)
    run.read, run.loaded, run.rejected = read, loaded, rejected
    for name, value in kept.items():
        setattr(run, name, value)
    return run


def test_load_problem_wording() -> None:
    every = _run(5, 0, 5, first_reject="x.csv:2: bad", hint="Try --format csv?")
    assert every.problem() == (
        "every record of x.csv was rejected (5), nothing was loaded; the first: x.csv:2: bad. "
        "Try --format csv? See every reject with: reflect rejected --load 3"
    )
    assert _run(5, 4, 1, first_reject="x.csv:2: bad").problem() is None
    assert _run(0, 0, 0).problem() is None
    damaged = _run(5, 4, 1, file_errors=["x.csv:6: cannot read", "y:1: z"])
    assert damaged.problem() == (
        "x.csv:6: cannot read (and 1 more). The load kept what was read before it (loaded 4, "
        "already present 0) and is marked failed; see every reject with: reflect rejected "
        "--load 3"
    )
    assert _run(5, 0, 5, fail_if_all_rejected=False).problem() is None


def test_guess_format() -> None:
    assert guess_format(b"Project;Key;Summary\nKAFKA;KAFKA-1;x\n") == ("jira", "a Jira CSV export")
    assert guess_format(b'{"number": 1, "title": "x"}\n') == ("github", "GitHub JSON")
    assert guess_format(b'{"key": "KAFKA-1", "fields": {}}') == ("jira", "a Jira JSON export")
    assert guess_format(b"task_ref,title\nT-1,x\n") == ("csv", "CSV")
    assert guess_format(b'{"task_ref": "T-1"}\n') == ("jsonl", "JSON")
    assert guess_format(b"\x00\x01\x02") is None


# -- 3. labels CSV header ---------------------------------------------------------------------


def test_labels_csv_without_confidence_fails_on_the_header(tmp_path: Path) -> None:
    path = tmp_path / "noconf.csv"
    path.write_text("model,correct\nm,true\nn,false\n")
    db = tmp_path / "l.duckdb"
    done = reflect("load", "labels", str(path), "--db", str(db))
    # before: "loaded 0 + rejected 2", exit 0, "field 'confidence' is missing" per row
    assert done.returncode == 1 and done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"Error: {path}: the header has no column(s) 'confidence'")
    assert "found ['model', 'correct']" in line and "--map confidence=<column>" in line
    ((status, read, loaded, rejected, present, _detail),) = _loads(db)
    assert (status, read, loaded, rejected, present) == ("failed", 1, 0, 1, 0)
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT location FROM rejected").fetchall() == [(str(path),)]
    con.close()


def test_labels_map_reads_other_columns(tmp_path: Path) -> None:
    path = tmp_path / "scores.csv"
    path.write_text("p,is_correct,model\n0.9,true,m\n0.2,false,n\n")
    db = tmp_path / "l.duckdb"
    wrong = reflect("load", "labels", str(path), "--db", str(db))
    assert wrong.returncode == 1
    assert "--map confidence=p --map correct=is_correct" in wrong.stderr
    args = ("load", "labels", str(path), "--map", "confidence=p", "--map", "correct=is_correct")
    done = reflect(*args, "--db", str(db))
    assert done.returncode == 0, done.stderr
    assert "read 2 = loaded 2 + rejected 0 + already present 0" in done.stdout
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT confidence, correct, groups FROM labels ORDER BY line").fetchall()
    con.close()
    assert [(c, y, json.loads(g)) for c, y, g in rows] == [
        (0.9, True, {"model": "m"}),
        (0.2, False, {"model": "n"}),
    ]
    again = reflect(*args, "--db", str(db))
    assert "loaded 0 + rejected 0 + already present 2" in again.stdout
    # the same records with the columns named as the fields are the same records
    named = tmp_path / "named.csv"
    named.write_text("confidence,correct,model\n0.9,true,m\n0.2,false,n\n")
    same = reflect("load", "labels", str(named), "--corpus", "scores", "--db", str(db))
    assert "loaded 0 + rejected 0 + already present 2" in same.stdout


def test_labels_map_on_jsonl_and_unknown_field(tmp_path: Path) -> None:
    path = tmp_path / "keys.jsonl"
    path.write_text('{"prob": 0.4, "correct": true}\n')
    db = tmp_path / "l.duckdb"
    done = reflect("load", "labels", str(path), "--map", "confidence=prob", "--db", str(db))
    assert done.returncode == 0 and "loaded 1" in done.stdout, done.stderr
    bad = reflect("load", "labels", str(path), "--map", "judge=x", "--db", str(db))
    assert bad.returncode == 1
    assert bad.stderr.startswith("Error: unknown field(s) in --map: ['judge']")
    assert "confidence, correct, model, question_id" in bad.stderr


# -- 4. messages --------------------------------------------------------------------------------


def test_control_character_message_reads_once(tmp_path: Path) -> None:
    path = tmp_path / "ctrl.jsonl"
    path.write_text('{"confidence": 0.5, "correct": true, "model": "a\tb"}\n' + LABELS)
    db = tmp_path / "l.duckdb"
    done = reflect("load", "labels", str(path), "--db", str(db))
    assert done.returncode == 0
    listed = reflect("rejected", "--db", str(db))
    assert "not valid JSON (Invalid control character at column 49)" in listed.stdout
    assert "at at" not in listed.stdout
    board = tmp_path / "tasks.jsonl"
    board.write_text('{"task_ref": "a\tb"}\n{"task_ref": "T-1"}\n')
    reflect("load", "board", str(board), "--format", "jsonl", "--no-match", "--db", str(db))
    listed = reflect("rejected", "--source", "board", "--db", str(db))
    assert "invalid JSON: Invalid control character at column 16" in listed.stdout


def test_only_file_loaders_fail_when_every_record_is_rejected(tmp_path: Path) -> None:
    """git, SZZ, notes, match: rejecting every record is their own business (SZZ on a
    partial clone); a file that cannot be read to its end fails any load."""
    from agent_reflection.store.db import begin_load

    con = connect(tmp_path / "x.duckdb")
    for source, flag, file_error in (
        ("git-szz", False, False),
        ("labels", True, False),
        ("notes", False, True),
    ):
        with begin_load(con, source, "origin", fail_if_all_rejected=flag) as run:
            run.read += 1
            run.reject("origin:1", None, "cannot read it", file_error=file_error)
        summary = run.summary()
        assert summary.reconciles
    rows = con.execute("SELECT source, status, detail->>'error' FROM loads ORDER BY load_id")
    assert [(s, status, error is not None) for s, status, error in rows.fetchall()] == [
        ("git-szz", "ok", False),
        ("labels", "failed", True),
        ("notes", "failed", True),
    ]
    con.close()
