"""``reflect status``: what a real database holds per source, and each experiment's next step."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from tests.cli_inprocess import reflect

from agent_reflection.experiments.registration import load_preregistration
from agent_reflection.experiments.status import empty_run_hints, workspace_status
from agent_reflection.load.labels import load_labels
from agent_reflection.load.sidecars.loader import load_sidecars
from agent_reflection.simulate.phase0 import sim_reflection
from agent_reflection.store.db import connect

WHEN = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def write_sidecars(folder: Path, confidences: list[float | None]) -> Path:
    """Sidecar files as the Stop hook writes them (one degraded per ``None``)."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, confidence in enumerate(confidences):
        record = sim_reflection(f"T-{i}", confidence, when=WHEN, files=["src/app.py"])
        (folder / f"s{i}.reflection.json").write_text(record.to_json(), "utf-8")
    return folder


def test_a_missing_database_is_not_created_and_every_experiment_says_how_to_start(
    tmp_path: Path,
) -> None:
    db = tmp_path / "data" / "reflection.duckdb"
    done = reflect("status", "--db", str(db))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"database: {db} (not there: nothing loaded yet)"
    assert "  nothing yet" in lines
    p1, p2, p3 = (next(x for x in lines if x.startswith(f"  P{i}: ")) for i in (1, 2, 3))
    assert "0 labelled rows; no sidecars loaded" in p1
    assert "`reflect load labels FILE`" in p1 and "`reflect hook install`" in p1
    assert p2 == "  P2: 0 commits; next: load a repository: `reflect load git PATH --szz`"
    assert p3 == "  P3: 0 tasks; next: load a board export: `reflect load board FILE`"
    assert not db.exists() and not db.parent.exists()


def test_degraded_sidecars_say_self_reports_are_off(tmp_path: Path) -> None:
    db = tmp_path / "r.duckdb"
    con = connect(db)
    try:
        load_sidecars(con, [write_sidecars(tmp_path / "side", [None, None, None])])
    finally:
        con.close()
    status = workspace_status(db, load_preregistration())
    p1 = status.experiment("p1")
    assert p1.has == (
        "0 labelled rows; 3 sidecar(s), 0 with a confidence: self-reports are off "
        "(every sidecar is degraded)"
    )
    assert "`reflect load labels FILE`" in p1.next and "`reflect hook install`" in p1.next
    assert not p1.ready
    (sidecars,) = status.sources
    assert (sidecars.source, sidecars.loads, sidecars.ok, sidecars.rows_loaded) == (
        "sidecars",
        1,
        1,
        3,
    )
    # what `reflect run` prints for P1 on these data (n = 0), with the run's label source
    results = {"p1": {"n": 0, "parameters": {"label_source": "corpus"}}, "p3": {"n": 5}}
    (hint,) = empty_run_hints(results, db, load_preregistration())
    assert hint.startswith("p1: no data (n = 0); next: load labels with `reflect load labels")
    assert hint.endswith("(`reflect status` shows what each experiment has)")
    loop = {"p1": {"n": 0, "parameters": {"label_source": "loop"}}}
    (loop_hint,) = empty_run_hints(loop, db, load_preregistration())
    assert "make the agents write their self-report (`reflect hook install`" in loop_hint


def test_labels_are_counted_on_the_self_rated_high_subset_against_the_minimum(
    tmp_path: Path,
) -> None:
    labels = tmp_path / "mini.jsonl"
    rows = [(0.9, True), (0.95, True), (0.85, False), (0.5, False), (0.81, True)]
    labels.write_text(
        "".join(
            json.dumps({"question_id": f"q{i}", "confidence": c, "correct": ok}) + "\n"
            for i, (c, ok) in enumerate(rows)
        )
        + "not json\n",
        "utf-8",
    )
    db = tmp_path / "r.duckdb"
    con = connect(db)
    try:
        load_labels(con, labels)
    finally:
        con.close()
    done = reflect("status", "--db", str(db), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["exists"] is True and doc["simulated"] is None
    (source,) = doc["sources"]
    assert (source["source"], source["rows_loaded"], source["rows_rejected"]) == ("labels", 5, 1)
    assert source["last_origin"] == str(labels)
    p1 = doc["experiments"][0]
    need = 522  # the registered minimum sample per class (reflect prereg power)
    assert p1["has"] == (
        f"5 labelled rows in 1 corpus(es); confidence >= 0.8: 3 correct, 1 incorrect "
        f"({need} of each needed)"
    )
    assert p1["next"] == "more labels (`reflect run p1` now says insufficient-data)"
    assert p1["ready"] is False
    text = reflect("status", "--db", str(db)).stdout
    assert "  labels: 1 load(s); 5 rows loaded, 1 rejected, last " in text


@pytest.mark.slow
def test_reflect_run_on_a_database_without_labels_points_to_the_next_step(tmp_path: Path) -> None:
    """`reflect run p1` with no labels: insufficient-data, and the step that gives it data."""
    db = tmp_path / "empty.duckdb"
    connect(db).close()
    done = reflect("run", "p1", "--db", str(db), "--out", str(tmp_path / "reports"))
    assert done.returncode == 0, done.stderr
    assert "p1: insufficient-data" in done.stdout
    assert "p1: no data (n = 0); next: load labels with `reflect load labels FILE`" in done.stdout
    assert "`reflect hook install`" in done.stdout
    as_json = reflect("run", "p1", "--json", "--db", str(db), "--out", str(tmp_path / "r2"))
    assert as_json.returncode == 0, as_json.stderr
    p1 = json.loads(as_json.stdout)["experiments"]["p1"]
    assert p1["n"] == 0 and p1["next"].startswith("load labels with `reflect load labels FILE`")
