"""Reliability suite, hostile input files: every loader that reads text loads BOM, CRLF,
Latin-1, UTF-16/32 input; an undecodable file under ``--encoding`` is one clear error; and
corrupt corpora (truncated gzip, binary garbage, a JSON line cut in half, a CSV row with a
wrong field count, a huge line) keep every good record, reject each bad one with its place
and reason, and reconcile, with no traceback.

Real files in ``tmp_path``, a real DuckDB file, the real CLI entry point.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pytest

from agent_reflection.load import text as text_module
from agent_reflection.load.board.loader import load_board
from agent_reflection.load.board.model import ParseOptions
from agent_reflection.load.labels import load_labels
from agent_reflection.load.runs import load_runs
from agent_reflection.load.sidecars.loader import load_sidecars
from agent_reflection.load.text import UndecodableText, detect
from agent_reflection.load.transcripts import load_transcripts
from agent_reflection.store.db import LoadSummary, connect
from cli_inprocess import reflect
from conftest import run_git
from sidecar_samples import sidecar

NON_ASCII = ("café", "naïve")

Loader = Callable[[duckdb.DuckDBPyConnection, Path, str | None], LoadSummary]


@dataclass(frozen=True)
class Spec:
    """One loader: how to write two records holding ``NON_ASCII``, load, and read them back."""

    name: str
    suffix: str
    text: str  # two good records
    load: Loader
    stored: str  # SQL returning the stored non-ASCII values


def _jsonl(*records: dict[str, Any]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def _outcome(i: int, objective: str) -> dict[str, Any]:
    return {
        "kind": "outcome",
        "session_id": f"s{i}",
        "status": "failed",
        "finished_at": f"2025-01-0{i}T00:00:00Z",
        "objective": objective,
    }


def _message(i: int, text: str) -> dict[str, Any]:
    return {
        "type": "user",
        "sessionId": "s1",
        "uuid": f"u{i}",
        "message": {"role": "user", "content": text},
    }


def _github(i: int, title: str) -> dict[str, Any]:
    return {
        "number": i,
        "title": title,
        "state": "open",
        "html_url": f"https://github.com/o/r/issues/{i}",
        "created_at": "2024-01-01T00:00:00Z",
    }


def _board(fmt: str) -> Loader:
    def load(con: duckdb.DuckDBPyConnection, path: Path, encoding: str | None) -> LoadSummary:
        return load_board(con, path, fmt, ParseOptions(encoding=encoding))

    return load


SPECS = [
    Spec(
        "labels-csv",
        ".csv",
        "confidence,correct,model\n0.5,true,café\n0.7,false,naïve\n",
        lambda con, p, e: load_labels(con, p, encoding=e),
        "SELECT groups->>'model' FROM labels",
    ),
    Spec(
        "labels-jsonl",
        ".jsonl",
        _jsonl(
            {"confidence": 0.5, "correct": True, "model": "café"},
            {"confidence": 0.7, "correct": False, "model": "naïve"},
        ),
        lambda con, p, e: load_labels(con, p, encoding=e),
        "SELECT groups->>'model' FROM labels",
    ),
    Spec(
        "board-csv",
        ".csv",
        "task_ref,title\nT-1,café\nT-2,naïve\n",
        _board("csv"),
        "SELECT title FROM tasks",
    ),
    Spec(
        "board-jsonl",
        ".jsonl",
        _jsonl({"task_ref": "T-1", "title": "café"}, {"task_ref": "T-2", "title": "naïve"}),
        _board("jsonl"),
        "SELECT title FROM tasks",
    ),
    Spec(
        "board-jira-csv",
        ".csv",
        "Issue key,Summary,Status,Created\nKAFKA-1,café,Open,2024-01-01\n"
        "KAFKA-2,naïve,Open,2024-01-02\n",
        _board("jira"),
        "SELECT title FROM tasks",
    ),
    Spec(
        "board-github",
        ".json",
        json.dumps([_github(1, "café"), _github(2, "naïve")], ensure_ascii=False),
        _board("github"),
        "SELECT title FROM tasks",
    ),
    Spec(
        "runs-jsonl",
        ".jsonl",
        _jsonl(_outcome(1, "café"), _outcome(2, "naïve")),
        lambda con, p, e: load_runs(con, p, "jsonl", e).summary,
        "SELECT objective FROM run_outcomes",
    ),
    Spec(
        "transcripts",
        ".jsonl",
        _jsonl(_message(1, "café"), _message(2, "naïve")),
        lambda con, p, e: load_transcripts(con, [p], encoding=e),
        "SELECT text FROM messages",
    ),
]


def _variants(text: str) -> dict[str, tuple[bytes, str | None]]:
    """name -> (file bytes, --encoding to pass)."""
    crlf = text.replace("\n", "\r\n")
    return {
        "utf-8-bom": (b"\xef\xbb\xbf" + text.encode(), None),
        "crlf": (crlf.encode(), None),
        "utf-8-bom-crlf": (b"\xef\xbb\xbf" + crlf.encode(), None),
        "latin-1": (text.encode("latin-1"), None),
        "latin-1-declared": (crlf.encode("latin-1"), "latin-1"),
        "cp1252-declared": ((text + "").encode("cp1252"), "cp1252"),
        "utf-16-bom": (crlf.encode("utf-16"), None),
        "utf-16-be-bom": (b"\xfe\xff" + text.encode("utf-16-be"), None),
        "utf-16-le-no-bom": (text.encode("utf-16-le"), None),
        "utf-32-bom": (text.encode("utf-32"), None),
        "utf-16-declared": (text.encode("utf-16"), "utf-16"),
    }


VARIANTS = list(_variants("x"))


@pytest.fixture
def con(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    db = connect(tmp_path / "input.duckdb")
    yield db
    db.close()


def _assert_reconciles(con: duckdb.DuckDBPyConnection, summary: LoadSummary) -> None:
    assert summary.reconciles, summary
    row = con.execute(
        "SELECT rows_read, rows_loaded, rows_rejected, rows_already_present FROM loads "
        "WHERE load_id = ?",
        [summary.load_id],
    ).fetchone()
    assert row == (summary.read, summary.loaded, summary.rejected, summary.already_present)
    stored = con.execute("SELECT count(*) FROM rejected WHERE load_id = ?", [summary.load_id])
    assert stored.fetchone() == (summary.rejected,)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_every_text_loader_reads_every_encoding(
    tmp_path: Path, con: duckdb.DuckDBPyConnection, spec: Spec, variant: str
) -> None:
    data, encoding = _variants(spec.text)[variant]
    path = tmp_path / f"{variant}{spec.suffix}"
    path.write_bytes(data)
    summary = spec.load(con, path, encoding)
    _assert_reconciles(con, summary)
    assert (summary.loaded, summary.rejected) == (2, 0), con.execute(
        "SELECT location, reason FROM rejected"
    ).fetchall()
    assert sorted(v for (v,) in con.execute(spec.stored).fetchall()) == sorted(NON_ASCII)
    warnings = summary.detail.get("warnings", [])
    if variant == "latin-1":  # read by the documented fallback, and said so
        assert len(warnings) == 1 and "Windows-1252" in warnings[0], warnings
        assert str(path) in warnings[0] and "line " in warnings[0]
    else:
        assert warnings == []


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_gzip_with_bom_loads(tmp_path: Path, con: duckdb.DuckDBPyConnection, spec: Spec) -> None:
    path = tmp_path / f"packed{spec.suffix}.gz"
    path.write_bytes(gzip.compress(spec.text.replace("\n", "\r\n").encode("utf-8-sig")))
    summary = spec.load(con, path, None)
    assert (summary.loaded, summary.rejected) == (2, 0)


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_undecodable_under_declared_encoding_is_one_error(
    tmp_path: Path, con: duckdb.DuckDBPyConnection, spec: Spec
) -> None:
    path = tmp_path / f"latin1{spec.suffix}"
    data = spec.text.encode("latin-1")
    path.write_bytes(data)
    offset = data.index("é".encode("latin-1"))
    line = data[:offset].count(b"\n") + 1
    with pytest.raises(UndecodableText) as caught:
        spec.load(con, path, "utf-8")
    message = str(caught.value)
    assert message.startswith(f"{path}: line {line}, byte offset {offset}: b'\\xe9'")
    assert "--encoding cp1252" in message and "--encoding latin-1" in message
    assert con.execute("SELECT count(*) FROM loads WHERE status = 'ok'").fetchone() == (0,)


def test_labels_csv_with_bom_loads_every_row_issue_item_5(
    tmp_path: Path, con: duckdb.DuckDBPyConnection
) -> None:
    """The reported case: a spreadsheet's UTF-8 CSV (BOM, CRLF) lost every row."""
    path = tmp_path / "labels.csv"
    rows = "".join(f"0.{i},{'true' if i % 2 else 'false'},m\r\n" for i in range(1, 10))
    path.write_bytes(b"\xef\xbb\xbfconfidence,correct,model\r\n" + rows.encode())
    summary = load_labels(con, path)
    assert (summary.read, summary.loaded, summary.rejected) == (9, 9, 0)


def test_sidecars_with_bom_crlf_and_utf16_load(
    tmp_path: Path, con: duckdb.DuckDBPyConnection
) -> None:
    folder = tmp_path / "s"
    folder.mkdir()
    pretty = json.dumps(sidecar(1), ensure_ascii=False, indent=2).replace("\n", "\r\n")
    (folder / "a.reflection.json").write_bytes(b"\xef\xbb\xbf" + pretty.encode())
    (folder / "b.reflection.json").write_bytes(json.dumps(sidecar(2)).encode("utf-16"))
    summary = load_sidecars(con, [folder], workers=1)
    assert (summary.loaded, summary.rejected) == (2, 0)


def test_detect_rule() -> None:
    assert detect(b"\xef\xbb\xbfa").codec == "utf-8"
    assert detect("a,b\n".encode("utf-16-le")).decided_by == "NUL pattern"
    assert detect("a,b\n".encode("utf-32-be")).codec == "utf-32-be"
    assert detect(b"plain", "latin1").codec == "iso8859-1"
    assert detect(bytes(range(256)) * 8).decided_by == "default"  # garbage: not UTF-16


# -- corrupt corpora ---------------------------------------------------------------------------

GOOD_LABELS = [{"confidence": i / 20, "correct": i % 2 == 0, "model": "m"} for i in range(1, 20)]


@dataclass(frozen=True)
class Corpus:
    """A corpus with ``good`` good records and ``bad`` bad ones, as one file."""

    name: str
    file: str
    data: bytes
    good: int
    load: Loader
    reason: str  # a word the rejection reason must contain


def _gz_cut(text: str) -> bytes:
    """A gzip stream cut off two thirds of the way through."""
    packed = gzip.compress(text.encode(), mtime=0)
    return packed[: len(packed) * 2 // 3]


def _labels(con: duckdb.DuckDBPyConnection, p: Path, e: str | None) -> LoadSummary:
    return load_labels(con, p, encoding=e)


def _runs(con: duckdb.DuckDBPyConnection, p: Path, e: str | None) -> LoadSummary:
    return load_runs(con, p, None, e).summary


def _transcripts(con: duckdb.DuckDBPyConnection, p: Path, e: str | None) -> LoadSummary:
    return load_transcripts(con, [p], encoding=e)


GARBAGE = bytes(range(256)) * 64
_LABELS_JSONL = _jsonl(*GOOD_LABELS)
_LABELS_CSV = "confidence,correct,model\n" + "".join(
    f"{r['confidence']},{r['correct']},m\n" for r in GOOD_LABELS
)
_RUNS = _jsonl(*[_outcome(i % 9 + 1, f"o{i}") | {"session_id": f"s{i}"} for i in range(19)])
_MESSAGES = _jsonl(*[_message(i, f"m{i}") for i in range(19)])
_TASKS_JSONL = _jsonl(*[{"task_ref": f"T-{i}", "title": "t"} for i in range(19)])
_TASKS_CSV = "task_ref,title\n" + "".join(f"T-{i},t\n" for i in range(19))
_JIRA_CSV = "Issue key,Summary\n" + "".join(f"KAFKA-{i},t\n" for i in range(1, 20))


def _cut_line(text: str) -> str:
    """The 10th of 19 lines cut in half (no newline lost: the next line follows)."""
    lines = text.splitlines(keepends=True)
    lines[9] = lines[9][: len(lines[9]) // 2] + "\n"
    return "".join(lines)


def _extra_field(text: str) -> str:
    lines = text.splitlines(keepends=True)
    lines[10] = lines[10].rstrip("\n") + ",surplus\n"
    lines[11] = lines[11].split(",")[0] + "\n"
    return "".join(lines)


CORPORA = [
    Corpus(
        "labels-jsonl-cut-line",
        "l.jsonl",
        _cut_line(_LABELS_JSONL).encode(),
        18,
        _labels,
        "not valid JSON",
    ),
    Corpus(
        "labels-csv-field-count", "l.csv", _extra_field(_LABELS_CSV).encode(), 17, _labels, "fields"
    ),
    Corpus("labels-binary", "l.jsonl", GARBAGE, 0, _labels, "binary"),
    Corpus("runs-cut-line", "r.jsonl", _cut_line(_RUNS).encode(), 18, _runs, "not JSON"),
    Corpus("runs-binary", "r.jsonl", GARBAGE, 0, _runs, "binary"),
    Corpus(
        "transcripts-cut-line",
        "t.jsonl",
        _cut_line(_MESSAGES).encode(),
        18,
        _transcripts,
        "not JSON",
    ),
    Corpus("transcripts-binary", "t.jsonl", GARBAGE, 0, _transcripts, "binary"),
    Corpus(
        "board-jsonl-cut-line",
        "b.jsonl",
        _cut_line(_TASKS_JSONL).encode(),
        18,
        _board("jsonl"),
        "invalid JSON",
    ),
    Corpus(
        "board-csv-field-count",
        "b.csv",
        _extra_field(_TASKS_CSV).encode(),
        17,
        _board("csv"),
        "fields",
    ),
    Corpus(
        "board-jira-csv-field-count",
        "j.csv",
        _extra_field(_JIRA_CSV).encode(),
        17,
        _board("jira"),
        "fields",
    ),
    Corpus("board-binary", "b.jsonl", GARBAGE, 0, _board("jsonl"), "binary"),
]

TRUNCATED_GZ = [
    ("labels", "l.jsonl.gz", _LABELS_JSONL * 40, _labels),
    ("labels-csv", "l.csv.gz", _LABELS_CSV + _LABELS_CSV[25:] * 40, _labels),
    (
        "runs",
        "r.jsonl.gz",
        "".join(json.dumps(_outcome(1, "o") | {"session_id": f"s{i}"}) + "\n" for i in range(800)),
        _runs,
    ),
    ("transcripts", "t.jsonl.gz", _jsonl(*[_message(i, "m") for i in range(800)]), _transcripts),
    ("board-jsonl", "b.jsonl.gz", _TASKS_JSONL * 40, _board("jsonl")),
    (
        "board-csv",
        "b.csv.gz",
        _TASKS_CSV + "".join(f"U-{i},t\n" for i in range(800)),
        _board("csv"),
    ),
]


def _rejections(con: duckdb.DuckDBPyConnection, load_id: int) -> list[tuple[str, str]]:
    return con.execute(
        "SELECT location, reason FROM rejected WHERE load_id = ? ORDER BY location", [load_id]
    ).fetchall()


@pytest.mark.parametrize("corpus", CORPORA, ids=[c.name for c in CORPORA])
def test_corrupt_corpus_keeps_the_good_and_names_the_bad(
    tmp_path: Path, con: duckdb.DuckDBPyConnection, corpus: Corpus
) -> None:
    path = tmp_path / corpus.file
    path.write_bytes(corpus.data)
    summary = corpus.load(con, path, None)
    _assert_reconciles(con, summary)
    assert summary.loaded == corpus.good
    rejected = _rejections(con, summary.load_id)
    assert rejected and summary.rejected == len(rejected)
    for location, reason in rejected:
        assert location.startswith(str(path)) or location.startswith(str(path.resolve()))
        assert corpus.reason in reason, reason
    if corpus.good:  # a bad record is named by its line
        assert all(":" in loc.rsplit("/", 1)[-1] for loc, _ in rejected), rejected


@pytest.mark.parametrize("name,file,text,load", TRUNCATED_GZ, ids=[t[0] for t in TRUNCATED_GZ])
def test_truncated_gzip_keeps_every_line_before_the_damage(
    tmp_path: Path, con: duckdb.DuckDBPyConnection, name: str, file: str, text: str, load: Loader
) -> None:
    path = tmp_path / file
    path.write_bytes(_gz_cut(text))
    summary = load(con, path, None)
    _assert_reconciles(con, summary)
    assert summary.loaded > 0, "the records before the damage must load"
    reasons = [reason for _, reason in _rejections(con, summary.load_id)]
    assert any("cannot read the file past line" in r for r in reasons), reasons
    assert len(reasons) <= 2  # the damage, and at most the half line before it


@pytest.mark.parametrize(
    "name,file,good,load",
    [
        ("labels", "l.jsonl", _LABELS_JSONL, _labels),
        ("labels-csv", "l.csv", _LABELS_CSV, _labels),
        ("runs", "r.jsonl", _RUNS, _runs),
        ("transcripts", "t.jsonl", _MESSAGES, _transcripts),
        ("board-csv", "b.csv", _TASKS_CSV, _board("csv")),
    ],
    ids=["labels", "labels-csv", "runs", "transcripts", "board-csv"],
)
def test_huge_line_is_rejected_without_holding_it(
    tmp_path: Path,
    con: duckdb.DuckDBPyConnection,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    file: str,
    good: str,
    load: Loader,
) -> None:
    monkeypatch.setattr(text_module, "MAX_LINE_BYTES", 1 << 20)
    lines = good.splitlines(keepends=True)
    huge = "x" * (3 << 20) + "\n"
    path = tmp_path / file
    path.write_text("".join([*lines[:5], huge, *lines[5:]]))
    summary = load(con, path, None)
    _assert_reconciles(con, summary)
    assert summary.loaded == len(lines) - (1 if file.endswith(".csv") else 0)
    ((location, reason),) = _rejections(con, summary.load_id)
    assert location.endswith(":6") and "over the 1 MiB limit" in reason


def test_huge_line_at_the_real_limit(tmp_path: Path, con: duckdb.DuckDBPyConnection) -> None:
    path = tmp_path / "huge.jsonl"
    with path.open("w") as fh:
        fh.write(_LABELS_JSONL)
        fh.write('{"confidence": 0.5, "correct": true, "pad": "' + "x" * (33 << 20) + '"}\n')
        fh.write(_LABELS_JSONL)
    summary = load_labels(con, path)
    assert (summary.loaded, summary.rejected) == (38, 1)


def _reflect(*args: str) -> tuple[int, str, str]:
    done = reflect(*args)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize(
    "command,file,data",
    [
        ("labels", "l.jsonl.gz", _gz_cut(_LABELS_JSONL * 40)),
        ("labels", "l.csv", GARBAGE),
        ("runs", "r.jsonl.gz", _gz_cut(_RUNS * 40)),
        ("runs", "r.jsonl", GARBAGE),
        ("transcripts", "t.jsonl", GARBAGE),
    ],
)
def test_cli_corrupt_input_exits_cleanly(
    tmp_path: Path, command: str, file: str, data: bytes
) -> None:
    path = tmp_path / file
    path.write_bytes(data)
    code, out, err = _reflect("load", command, str(path), "--db", str(tmp_path / "c.duckdb"))
    # the file could not be read to its end (or is binary): the load keeps what it read,
    # says why on stderr naming the file, and exits 1 (before: 0, the cause only in `rejected`)
    assert code == 1, err
    assert "Traceback" not in out + err
    assert "rejected" in out
    (error,) = err.strip().splitlines()
    assert error.startswith("Error: ") and file in error
    assert "cannot read the file past line" in error or "binary data" in error


def test_cli_encoding_option_and_errors(tmp_path: Path) -> None:
    db = str(tmp_path / "e.duckdb")
    path = tmp_path / "latin1.csv"
    path.write_bytes("confidence,correct,model\n0.5,true,café\n".encode("latin-1"))
    code, out, err = _reflect("load", "labels", str(path), "--encoding", "utf-8", "--db", db)
    assert code == 1 and "Traceback" not in err
    (line,) = err.strip().splitlines()
    assert line.startswith(f"Error: {path}: line 2, byte offset 37") and "--encoding" in line
    code, out, err = _reflect("load", "labels", str(path), "--encoding", "nonsense", "--db", db)
    assert code == 1 and "not an encoding Python knows" in err
    code, out, err = _reflect("load", "labels", str(path), "--db", db)
    assert code == 0 and "read 1 = loaded 1" in out
    assert err.startswith("Warning: ") and "Windows-1252" in err
    code, out, err = _reflect(
        "load", "labels", str(path), "--encoding", "latin-1", "--corpus", "declared", "--db", db
    )
    assert code == 0 and err == ""


@pytest.mark.parametrize("damage", ["cut in half", "overwritten after the header"])
def test_damaged_platform_database_is_one_rejected_record(
    tmp_path: Path, con: duckdb.DuckDBPyConnection, damage: str
) -> None:
    import sqlite3

    good = tmp_path / "platform.db"
    db = sqlite3.connect(good)
    db.execute(
        "CREATE TABLE sub_session_outcomes (id INTEGER, session_id TEXT, status TEXT, "
        "timestamp REAL, objective TEXT)"
    )
    db.executemany(
        "INSERT INTO sub_session_outcomes VALUES (?, ?, 'failed', ?, ?)",
        [(i, f"s{i}", 1.7e9 + i, "o" * 300) for i in range(2000)],
    )
    db.commit()
    db.close()
    data = good.read_bytes()
    bad = tmp_path / "damaged.db"
    if damage == "cut in half":
        bad.write_bytes(data[: len(data) // 2])
    else:
        bad.write_bytes(data[:100] + bytes(range(256)) * (len(data) // 256))
    code, out, err = _reflect("load", "runs", str(bad), "--db", str(tmp_path / "r.duckdb"))
    assert code == 1 and "Traceback" not in out + err, err  # what was read stays; exit 1
    assert f"Error: {bad}: damaged SQLite database" in err
    summary = load_runs(con, bad).summary
    _assert_reconciles(con, summary)
    ((location, reason),) = _rejections(con, summary.load_id)
    assert location == str(bad) and "damaged SQLite database" in reason


def test_git_task_files_with_bom_crlf_and_latin1(
    git_repo: Path, con: duckdb.DuckDBPyConnection
) -> None:
    tasks = git_repo / "tasks"
    tasks.mkdir()
    (tasks / "bom.md").write_bytes(b"\xef\xbb\xbfstatus: done\r\ntitle: caf\xc3\xa9\r\n")
    (tasks / "latin1.md").write_bytes("status: open\ntitle: naïve\n".encode("latin-1"))
    (tasks / "utf16.md").write_bytes("status: open\n".encode("utf-16"))
    run_git(git_repo, "add", "tasks")
    run_git(git_repo, "commit", "-q", "-m", "tasks")
    summary = load_board(con, git_repo, "git-files")
    _assert_reconciles(con, summary)
    rows = con.execute("SELECT task_ref, status, title FROM tasks ORDER BY task_ref").fetchall()
    assert rows == [("tasks/bom.md", "done", "café"), ("tasks/latin1.md", "open", "naïve")]
    ((location, reason),) = _rejections(con, summary.load_id)
    assert location.endswith(":tasks/utf16.md") and "UTF-16" in reason


def test_bom_then_latin1_byte_reads_by_the_fallback(
    tmp_path: Path, con: duckdb.DuckDBPyConnection
) -> None:
    path = tmp_path / "mixed.csv"
    path.write_bytes(b"\xef\xbb\xbfconfidence,correct,model\n0.5,true,caf\xe9\n0.6,false,x\n")
    summary = load_labels(con, path)
    assert (summary.loaded, summary.rejected) == (2, 0)
    assert "line 2" in summary.detail["warnings"][0]
    assert con.execute("SELECT groups->>'model' FROM labels WHERE line = 2").fetchone() == ("café",)


def test_damaged_utf16_is_one_error_saying_so(
    tmp_path: Path, con: duckdb.DuckDBPyConnection
) -> None:
    path = tmp_path / "damaged.jsonl"
    good = '{"confidence": 0.5, "correct": true}\n'
    path.write_bytes(good.encode("utf-16") + "\ud800".encode("utf-16-le", "surrogatepass"))
    with pytest.raises(UndecodableText, match=r"damaged\.jsonl: line 2: not utf-16-le .*damaged"):
        load_labels(con, path)
