"""``reflect run p1 -p corpus NAME`` refuses a corpus the database has no labels of, before any
notebook runs, naming the corpora it has (real DuckDB files, the CLI run in-process)."""

from __future__ import annotations

import json
from pathlib import Path

from agent_reflection.experiments.runner import check_corpus
from agent_reflection.store.db import connect
from cli_inprocess import reflect


def labels_db(tmp_path: Path) -> Path:
    db = tmp_path / "labels.duckdb"
    for name, rows in (("agent-a", 3), ("agent-b", 2)):
        lines = [json.dumps({"confidence": i / 4, "correct": i % 2 == 0}) for i in range(rows)]
        (tmp_path / f"{name}.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
        done = reflect("load", "labels", str(tmp_path / f"{name}.jsonl"), "--db", str(db))
        assert done.returncode == 0, done.stderr
    return db


def test_an_unknown_corpus_is_an_error_listing_the_corpora_and_their_rows(tmp_path: Path) -> None:
    db = labels_db(tmp_path)
    out = tmp_path / "reports"
    done = reflect("run", "p1", "-p", "corpus", "nosuchcorpus", "--db", str(db), "--out", str(out))
    assert done.returncode == 1
    assert f"corpus 'nosuchcorpus' has no labels in {db}" in done.stderr
    assert "Its corpora: agent-a (3 rows), agent-b (2 rows)." in done.stderr
    assert "reflect load labels FILE --corpus nosuchcorpus" in done.stderr
    assert "Phase-0 gate" not in done.stdout  # no verdict, no report folder
    assert not out.exists()


def test_a_corpus_on_a_database_without_labels_says_to_load_them(tmp_path: Path) -> None:
    db = tmp_path / "empty.duckdb"
    connect(db).close()
    done = reflect("run", "p1", "-p", "corpus", "agent-a", "--db", str(db), "--out", str(tmp_path))
    assert done.returncode == 1
    assert "corpus 'agent-a': no labels loaded" in done.stderr
    assert "run `reflect load labels FILE`" in done.stderr


def test_a_known_corpus_passes_as_text_and_no_corpus_means_every_corpus(tmp_path: Path) -> None:
    db = labels_db(tmp_path)
    con = connect(db, read_only=True)
    try:
        assert check_corpus(con, db, {"corpus": "agent-b"}) == {"corpus": "agent-b"}
        assert check_corpus(con, db, {}) == {}
        assert check_corpus(con, db, {"corpus": ""}) == {"corpus": ""}
    finally:
        con.close()
    (tmp_path / "2024.jsonl").write_text('{"confidence": 0.5, "correct": true}\n', "utf-8")
    assert reflect("load", "labels", str(tmp_path / "2024.jsonl"), "--db", str(db)).returncode == 0
    con = connect(db, read_only=True)
    try:  # `-p corpus 2024` reads as the number 2024 (YAML); the corpus is named "2024"
        assert check_corpus(con, db, {"corpus": 2024}) == {"corpus": "2024"}
    finally:
        con.close()
