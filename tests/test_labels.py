"""``reflect load labels``: JSONL/CSV corpora, rejects, idempotency, group columns."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from agent_reflection.load.labels import UnreadableLabels, load_labels
from agent_reflection.store.db import connect


def test_jsonl_with_rejects_reconciles_and_is_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    lines = [
        {"confidence": 0.9, "correct": True, "model": "m1"},
        {"confidence": 0.9, "correct": True, "model": "m1"},  # identical: both kept
        {"confidence": 1.5, "correct": False},
        {"confidence": 0.2},
        {"confidence": 0.3, "correct": "maybe"},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n{not json\n\n")
    con = connect(tmp_path / "db.duckdb")
    first = load_labels(con, path)
    assert (first.read, first.loaded, first.rejected, first.already_present) == (6, 2, 4, 0)
    assert first.reconciles
    reasons = [
        r[0]
        for r in con.execute(
            "SELECT location || ' ' || reason FROM rejected ORDER BY location"
        ).fetchall()
    ]
    assert any(":3 " in r and "'confidence' must be in [0, 1]" in r for r in reasons)
    assert any(":4 " in r and "'correct' is missing" in r for r in reasons)
    assert any(":6 " in r and "not valid JSON" in r for r in reasons)
    before = con.execute("SELECT * FROM labels ORDER BY record_key").fetchall()
    second = load_labels(con, path)
    assert (second.loaded, second.already_present, second.rejected) == (0, 2, 4)
    assert con.execute("SELECT * FROM labels ORDER BY record_key").fetchall() == before
    groups = con.execute("SELECT DISTINCT groups FROM labels").fetchone()[0]
    assert json.loads(groups) == {"model": "m1"}


def test_csv_and_gzip(tmp_path: Path) -> None:
    path = tmp_path / "c.csv.gz"
    with gzip.open(path, "wt") as fh:
        fh.write("confidence,correct,agent\n0.8,1,a\n0.1,false,b\n0.5,yes,\n")
    con = connect(":memory:")
    s = load_labels(con, path, corpus="mine")
    assert (s.loaded, s.rejected) == (3, 0)
    rows = con.execute("SELECT corpus, correct, groups FROM labels ORDER BY line").fetchall()
    assert rows[0][:2] == ("mine", True) and json.loads(rows[0][2]) == {"agent": "a"}
    assert json.loads(rows[2][2]) == {}


def test_unknown_format_and_missing_file(tmp_path: Path) -> None:
    con = connect(":memory:")
    (tmp_path / "x.parquet").write_text("")
    with pytest.raises(UnreadableLabels, match="unknown labels format"):
        load_labels(con, tmp_path / "x.parquet")
    with pytest.raises(UnreadableLabels, match="no such labels file"):
        load_labels(con, tmp_path / "none.jsonl")


def test_cli_load_labels(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from agent_reflection.cli import cli
    from agent_reflection.cli._groups import register_all_commands

    register_all_commands()
    path = tmp_path / "c.jsonl"
    path.write_text('{"confidence": 0.9, "correct": true}\n{"confidence": 2, "correct": true}\n')
    db = tmp_path / "db.duckdb"
    result = CliRunner().invoke(cli, ["load", "labels", str(path), "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "read 2 = loaded 1 + rejected 1 + already present 0" in result.output
    again = CliRunner().invoke(cli, ["load", "labels", str(path), "--db", str(db)])
    assert "loaded 0 + rejected 1 + already present 1" in again.output


def test_bom_crlf_csv_loads_every_row(tmp_path: Path) -> None:
    """Issue 13 item 5: a spreadsheet's UTF-8 CSV (BOM, CRLF) lost every row."""
    path = tmp_path / "sheet.csv"
    rows = "".join(f"0.{i},{'true' if i % 2 else 'false'},m\r\n" for i in range(1, 10))
    path.write_bytes(b"\xef\xbb\xbfconfidence,correct,model\r\n" + rows.encode())
    con = connect(":memory:")
    s = load_labels(con, path)
    assert (s.read, s.loaded, s.rejected) == (9, 9, 0)
    groups = con.execute("SELECT DISTINCT groups FROM labels").fetchall()
    assert [json.loads(g) for (g,) in groups] == [{"model": "m"}]


@pytest.mark.parametrize("codec", ["latin-1", "utf-16", "utf-16-le", "utf-32"])
def test_latin1_and_utf16_files_load(tmp_path: Path, codec: str) -> None:
    """Issue 13 item 5: Latin-1 and UTF-16 files failed as a whole."""
    path = tmp_path / "other.jsonl"
    lines = [
        {"confidence": 0.25, "correct": True, "model": "café"},
        {"confidence": 0.75, "correct": False, "model": "naïve"},
    ]
    path.write_bytes("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines).encode(codec))
    con = connect(":memory:")
    s = load_labels(con, path)
    assert (s.read, s.loaded, s.rejected) == (2, 2, 0)
    models = {
        json.loads(g)["model"] for (g,) in con.execute("SELECT groups FROM labels").fetchall()
    }
    assert models == {"café", "naïve"}


def test_progress_counts_every_record_and_batches_keep_every_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agent_reflection.load.labels as labels

    monkeypatch.setattr(labels, "BATCH_ROWS", 7)  # several Arrow batches, one INSERT
    monkeypatch.setattr(labels, "PROGRESS_EVERY", 10)
    rows = [
        {"confidence": (i % 11) / 10, "correct": i % 3 == 0, "model": f"m{i % 4}"}
        for i in range(45)
    ]
    rows[5] = {"confidence": "high", "correct": True}
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    con = connect(tmp_path / "l.duckdb")
    steps: list[int] = []
    summary = load_labels(con, path, progress=steps.append)
    assert sum(steps) == summary.read == 45 and summary.loaded == 44
    stored = [
        (line, confidence, correct, json.loads(groups))
        for line, confidence, correct, groups in con.execute(
            "SELECT line, confidence, correct, groups FROM labels ORDER BY line"
        ).fetchall()
    ]
    expected = [
        (i + 1, r["confidence"], r["correct"], {"model": r["model"]})
        for i, r in enumerate(rows)
        if i != 5
    ]
    assert stored == expected
    again = load_labels(con, path)
    assert again.already_present == 44 and again.loaded == 0
    assert con.execute("SELECT count(*) FROM labels").fetchone() == (44,)


def test_a_database_made_with_the_old_primary_key_still_loads(tmp_path: Path) -> None:
    import duckdb

    db = tmp_path / "old.duckdb"
    old = duckdb.connect(str(db))
    old.execute(
        "CREATE TABLE labels (corpus VARCHAR NOT NULL, record_key VARCHAR NOT NULL, "
        "confidence DOUBLE NOT NULL, correct BOOLEAN NOT NULL, groups JSON NOT NULL, "
        "source_file VARCHAR NOT NULL, line INTEGER NOT NULL, load_id BIGINT NOT NULL, "
        "PRIMARY KEY (corpus, record_key))"
    )
    old.close()
    path = tmp_path / "c.jsonl"
    path.write_text('{"confidence": 0.5, "correct": true}\n' * 3, "utf-8")
    con = connect(db)
    assert load_labels(con, path).loaded == 3  # identical records: three keys, #1..#3
    assert load_labels(con, path).already_present == 3
