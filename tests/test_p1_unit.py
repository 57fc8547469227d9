"""P1's analysis unit is declared, never guessed: the registration names the strata and cluster
columns, ``reflect load labels --map FIELD=COLUMN`` maps an input's fields onto them, and labels
that lack one stop the run with an error naming it and the fix (issue 31: renaming ``model`` to
``llm`` turned a stratified continue into a pooled inconclusive, still labelled stratified)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent_reflection.experiments.p1.analysis import MissingUnitColumn, run_p1
from agent_reflection.experiments.registration import load_preregistration
from agent_reflection.load.labels import load_labels
from agent_reflection.store.db import connect


def _answers() -> list[dict[str, object]]:
    """Two models answering 60 questions; model b is confident and often wrong, so pooling
    the strata moves the AUC (the Simpson case the stratified AUC exists for)."""
    rows = []
    for q in range(60):
        for model, shift in (("a", 0.0), ("b", 0.1)):
            correct = (q * 7 + (model == "b") * 3) % 5 < (2 if model == "b" else 3)
            confidence = min(1.0, 0.8 + shift + (0.08 if correct else 0.0) + (q % 4) / 100)
            rows.append(
                {
                    "question_id": f"q{q}",
                    "model": model,
                    "provider": "x",
                    "confidence": round(confidence, 3),
                    "correct": bool(correct),
                }
            )
    return rows


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


def _renamed(rows: list[dict[str, object]], old: str, new: str) -> list[dict[str, object]]:
    return [{(new if k == old else k): v for k, v in r.items()} for r in rows]


def test_a_renamed_strata_column_is_an_error_and_map_restores_it(tmp_path: Path) -> None:
    prereg = load_preregistration()
    assert (prereg.p1.strata_column, prereg.p1.cluster_column) == ("model", "question_id")
    rows = _answers()
    original = connect(":memory:")
    load_labels(original, _write(tmp_path / "answers.jsonl", rows))
    registered = run_p1(original, prereg)
    assert registered.details["strata_column"] == "model"
    assert registered.details["cluster_column"] == "question_id"

    renamed = _write(tmp_path / "renamed.jsonl", _renamed(rows, "model", "llm"))
    con = connect(":memory:")
    load_labels(con, renamed)
    with pytest.raises(MissingUnitColumn) as caught:
        run_p1(con, prereg)
    message = str(caught.value)
    assert "no column 'model'" in message and "P1's strata column ([p1] strata_column" in message
    assert "does not fall back to one stratum" in message
    assert "reflect load labels FILE --map model=COLUMN, COLUMN one of ['llm', 'provider']" in (
        message
    )

    mapped = connect(":memory:")
    load_labels(mapped, renamed, mapping={"model": "llm"}, corpus="answers")
    again = run_p1(mapped, prereg)
    assert again.metric.to_dict() == registered.metric.to_dict()
    assert again.details["strata_column"] == "model"


def test_a_renamed_cluster_column_is_an_error(tmp_path: Path) -> None:
    con = connect(":memory:")
    load_labels(con, _write(tmp_path / "qid.jsonl", _renamed(_answers(), "question_id", "qid")))
    with pytest.raises(
        MissingUnitColumn, match=r"no column 'question_id'.*--map question_id=COLUMN.*'qid'"
    ):
        run_p1(con, load_preregistration())


def test_labels_without_any_other_column_run_without_strata_and_say_so(tmp_path: Path) -> None:
    bare = [{"confidence": r["confidence"], "correct": r["correct"]} for r in _answers()]
    con = connect(":memory:")
    load_labels(con, _write(tmp_path / "bare.jsonl", bare))
    result = run_p1(con, load_preregistration())
    assert result.details["strata_column"] is None
    notes = " ".join(result.notes)
    assert "no strata column ('model', [p1] strata_column)" in notes
    assert "no cluster column ('question_id', [p1] cluster_column)" in notes


def test_cli_map_names_a_declared_column(tmp_path: Path) -> None:
    path = _write(tmp_path / "renamed.jsonl", _renamed(_answers(), "model", "llm"))
    db = tmp_path / "l.duckdb"
    done = subprocess.run(
        [sys.executable, "-m", "agent_reflection", "load", "labels", str(path), "--map",
         "model=llm", "--db", str(db)],
        capture_output=True, text=True, env={**__import__("os").environ, "CI": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    con = connect(db, read_only=True)
    models = con.execute("SELECT DISTINCT groups ->> 'model' FROM labels ORDER BY 1").fetchall()
    assert models == [("a",), ("b",)]
    assert con.execute(
        "SELECT count(*) FROM labels WHERE groups ->> 'llm' IS NOT NULL"
    ).fetchone() == (0,)
