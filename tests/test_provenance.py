"""Data provenance (what a result read), results.json's optional blocks, and the report lines."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pytest

from agent_reflection.experiments.provenance import (
    P1_LOOP_TABLES,
    P3_TABLES,
    data_provenance,
    tables_read,
)
from agent_reflection.experiments.registration import load_for_run
from agent_reflection.experiments.report import (
    experiments_named,
    index_html,
    summary_markdown,
    touches,
)
from agent_reflection.experiments.results import ExperimentResult, Metric, validate_results
from agent_reflection.experiments.verdict import phase0_gate
from agent_reflection.stats.interval import Interval
from agent_reflection.store.db import connect

ROWS = [
    ("T-1", "2024-01-01T00:00:00Z", "2024-02-01T00:00:00Z"),
    ("T-2", "2023-06-01T00:00:00Z", None),
    ("T-3", "2024-03-01T00:00:00Z", "2024-03-02T00:00:00Z"),
]


def board_db(path: Path, rows: list[tuple[str, str, str | None]], *, load_id: int = 1) -> Path:
    """A real DuckDB file with tasks written by one recorded load."""
    con = connect(path)
    con.execute(
        "INSERT INTO loads (load_id, source, origin, started_at, finished_at, tool_version, "
        "status) VALUES (?, 'board', 'tasks.csv', TIMESTAMPTZ '2025-05-05 10:00:00+00', "
        "TIMESTAMPTZ '2025-05-05 10:00:03+00', 'test', 'ok')",
        [load_id],
    )
    for ref, created, completed in rows:
        con.execute(
            "INSERT INTO tasks (task_ref, uuid, origin, source, category, created_at, "
            "completed_at, fingerprint, raw, load_id) VALUES "
            "(?, ?, 'tasks.csv', 'csv', 'task', ?::TIMESTAMPTZ, ?::TIMESTAMPTZ, ?, '{}', ?)",
            [ref, ref, created, completed, ref, load_id],
        )
    con.close()
    return path


def tasks_provenance(path: Path) -> Any:
    con = connect(path, read_only=True)
    try:
        return data_provenance(con, P3_TABLES, database=str(path))
    finally:
        con.close()


def test_tables_rows_loads_and_time_range(tmp_path: Path) -> None:
    data = tasks_provenance(board_db(tmp_path / "a.duckdb", ROWS))
    tables = {t.table: t for t in data.tables}
    # fix_inducing is not a P3 table; every P3 table exists in the schema
    assert list(tables) == ["tasks", "task_events", "task_links", "task_commits", "commits"]
    tasks = tables["tasks"]
    assert tasks.rows == 3 and tables["task_events"].rows == 0
    assert (tasks.time_min, tasks.time_max) == ("2023-06-01T00:00:00Z", "2024-03-02T00:00:00Z")
    (load,) = tasks.loads
    assert (load.load_id, load.source, load.origin) == (1, "board", "tasks.csv")
    assert load.finished_at == "2025-05-05T10:00:03Z" and data.loaded_at == load.finished_at
    assert tables["commits"].loads == () and tables["commits"].content_hash == "0" * 16
    doc = data.to_dict()
    assert (doc["time_min"], doc["time_max"]) == ("2023-06-01T00:00:00Z", "2024-03-02T00:00:00Z")
    assert "DuckDB" in doc["hash_method"]


def test_content_hash_ignores_order_and_load_ids_but_not_content(tmp_path: Path) -> None:
    a = tasks_provenance(board_db(tmp_path / "a.duckdb", ROWS))
    b = tasks_provenance(board_db(tmp_path / "b.duckdb", ROWS[::-1], load_id=7))
    assert a.fingerprint() == b.fingerprint()
    changed = [ROWS[0], ROWS[1], ("T-3", "2024-03-01T00:00:00Z", "2024-03-03T00:00:00Z")]
    c = tasks_provenance(board_db(tmp_path / "c.duckdb", changed))
    assert c.tables[0].rows == a.tables[0].rows
    assert c.tables[0].content_hash != a.tables[0].content_hash
    d = tasks_provenance(board_db(tmp_path / "d.duckdb", ROWS[:2]))
    assert d.fingerprint() != a.fingerprint()


def test_tables_read_follow_the_parameters() -> None:
    prereg = load_for_run(None, {})
    assert tables_read("p1", prereg) == ("labels",)
    loop = load_for_run(None, {"p1.label_source": "loop"})
    assert tables_read("p1", loop) == P1_LOOP_TABLES
    assert "fix_inducing" in tables_read("p2", prereg)
    with pytest.raises(ValueError, match="unknown experiment"):
        tables_read("p9", prereg)


def result(prereg_doc: dict[str, Any], data: dict[str, Any] | None) -> ExperimentResult:
    return ExperimentResult(
        experiment="p3",
        title="t",
        verdict="kill",
        metric=Metric("m", Interval(0.1, 0.1, 0.1)),
        n=3,
        thresholds={},
        kill_condition="rule",
        notes=("a note",),
        exploratory=prereg_doc["exploratory"],
        preregistration=prereg_doc,
        parameters={},
        data=data,
    )


def test_results_json_holds_registration_and_data_and_old_documents_still_validate(
    tmp_path: Path,
) -> None:
    prereg = load_for_run(None, {"p3.window_days": 60})
    data = tasks_provenance(board_db(tmp_path / "a.duckdb", ROWS)).to_dict()
    doc = result(prereg.provenance(), data).to_dict()
    validate_results(doc)
    assert doc["exploratory"] is True
    assert "registration" not in doc["preregistration"]  # moved to the top level
    assert doc["registration"]["matches_lock"] is True and doc["registration"]["frozen_at"]
    assert doc["data"]["tables"][0]["rows"] == 3
    old = result(
        {"path": "x", "sha256": "ab" * 32, "overrides": {}, "exploratory": False}, None
    ).to_dict()
    validate_results(old)  # a results.v1 document from before the lock
    assert "registration" not in old and "data" not in old


def test_report_shows_reasons_registration_and_data(tmp_path: Path) -> None:
    data = tasks_provenance(board_db(tmp_path / "a.duckdb", ROWS)).to_dict()
    edited = load_for_run(None, {"p3.window_days": 60})
    docs = {"p3": result(edited.provenance(), data).to_dict()}
    gate = phase0_gate(docs)
    md = summary_markdown("r", docs, gate)
    reg = docs["p3"]["registration"]
    frozen_at = reg["frozen_at"]
    amended = f", amended {reg['amendments'][-1]['at']}" if reg["amendments"] else ""
    assert "EXPLORATORY — not a pre-registered result" in md
    assert "override p3.window_days = 60 differs from the file's 30 (p3)" in md
    assert (
        f"Pre-registration registered {frozen_at}{amended}, data loaded 2025-05-05T10:00:03Z." in md
    )
    assert "Data time range: 2023-06-01T00:00:00Z to 2024-03-02T00:00:00Z." in md
    assert "data: tasks 3 rows (hash " in md and "from load 1 (board) tasks.csv" in md
    page = index_html("r", docs, gate, {})
    assert "override p3.window_days = 60 differs" in page and f"registered {frozen_at}" in page
    # the registration's history is folded under one line, and holds the amendments that may
    # touch P3 (naming it, or naming no experiment); one line counts the others
    folded = page.split("<details><summary>History: ", 1)[1].split("</details>", 1)[0]
    touching = [a for a in reg["amendments"] if touches(a["reason"], ["p3"])]
    others = len(reg["amendments"]) - len(touching)
    assert len(touching) > 0 and others > 0  # the registered lock has both kinds
    assert folded.startswith(f"frozen, then {len(touching)} amendment(s) that may touch ")
    for a in reg["amendments"]:
        assert (html.escape(a["reason"]) in folded) == (a in touching)
    assert page.count("Amended ") == len(touching)
    assert f"Not shown: {others} amendment(s) naming only experiments other than P3" in folded
    # summary.md folds it the same way, after the verdicts
    assert md.index("## P3 detectability") < md.index("## Pre-registration")
    assert md.count("- Amended ") == len(touching)


def test_a_notebook_page_folds_the_amendments_of_the_registered_file() -> None:
    from agent_reflection.experiments.notebook import registration_markdown

    prereg = load_for_run(None, {})
    assert prereg.registration is not None and prereg.registration.lock is not None
    amendments = prereg.registration.lock.amendments
    text = registration_markdown(prereg)
    assert text.startswith(" The registered pre-registration was frozen ")
    summary = f"<details><summary>{len(amendments)} amendment(s), the newest {amendments[-1].at}"
    assert summary in text and text.rstrip().endswith("</ul></details>")
    assert text.count("<li>amended ") == len(amendments)


def test_a_simulated_database_makes_every_verdict_say_simulated(tmp_path: Path) -> None:
    """A database holding a `simulated` load (reflect demo's worlds): its provenance records
    what simulated it, and the gate line, summary.md and the index say SIMULATED; a database
    of real data says nothing of the kind."""
    from agent_reflection.store.db import record_simulated, simulated_origin

    real = board_db(tmp_path / "real.duckdb", ROWS)
    sim = board_db(tmp_path / "sim.duckdb", ROWS)
    con = connect(sim)
    try:
        assert simulated_origin(con) is None
        load_id = record_simulated(con, "reflect demo (seed 7)")
        assert simulated_origin(con) == "reflect demo (seed 7)"
        status = con.execute("SELECT status FROM loads WHERE load_id = ?", [load_id]).fetchone()
        assert status == ("ok",)
    finally:
        con.close()
    prereg = load_for_run(None, {}).provenance()
    real_data = tasks_provenance(real).to_dict()
    sim_data = tasks_provenance(sim).to_dict()
    assert real_data["simulated"] is None and sim_data["simulated"] == "reflect demo (seed 7)"
    for data in (real_data, sim_data):
        validate_results(result(prereg, data).to_dict())

    docs = {"p3": result(prereg, sim_data).to_dict()}
    gate = phase0_gate(docs)
    assert gate.headline.startswith("Phase-0 gate (SIMULATED data): ")
    assert gate.to_dict()["simulated"] == "reflect demo (seed 7)"
    md = summary_markdown("r", docs, gate)
    assert md.startswith("# Phase-0 report r (SIMULATED data)\n")
    assert "SIMULATED DATA: these verdicts are about a simulator's world" in md
    assert "> Simulated by reflect demo (seed 7)." in md
    assert md.count("SIMULATED DATA: these verdicts") == 1  # once, in the summary block
    assert "## P3 detectability: kill (SIMULATED data)" in md
    page = index_html("r", docs, gate, {})
    assert "<title>Phase-0 report r (SIMULATED data)</title>" in page
    assert "Phase-0 gate (SIMULATED data): " in page and "SIMULATED DATA: these verdicts" in page

    real_docs = {"p3": result(prereg, real_data).to_dict()}
    real_gate = phase0_gate(real_docs)
    assert real_gate.headline.startswith("Phase-0 gate: ") and real_gate.simulated is None
    assert "SIMULATED" not in summary_markdown("r", real_docs, real_gate)
    assert "SIMULATED" not in index_html("r", real_docs, real_gate, {})


def test_a_notebook_page_of_simulated_data_opens_with_the_warning(tmp_path: Path) -> None:
    from agent_reflection.experiments.notebook import banner, verdict_markdown
    from agent_reflection.store.db import record_simulated

    prereg = load_for_run(None, {})
    text = banner(prereg, "reflect demo (seed 7)")
    assert text.startswith("**Simulated by reflect demo (seed 7).**")
    assert "Pre-registered run." in text
    assert "SIMULATED" not in banner(prereg)
    doc = result(prereg.provenance(), None)
    con = connect(board_db(tmp_path / "sim.duckdb", ROWS))
    try:
        assert "SIMULATED" not in verdict_markdown(doc, con)
        record_simulated(con, "reflect demo (seed 7)")
        assert verdict_markdown(doc, con).startswith("### Verdict: **KILL** (SIMULATED data)")
    finally:
        con.close()


@pytest.mark.parametrize(
    ("reason", "named"),
    [
        ("issue 11: [p2] fix_wording = verb", {"p2"}),
        ("P1/P2/P3 parameters of the first release", {"p1", "p2", "p3"}),
        ("Merged: [p1] bootstrap_draws beside the P2 gate-correction", {"p1", "p2"}),
        ("issue 11: comment only (no key changed)", set()),
        ("p10 and top1 are not experiments", set()),
    ],
)
def test_an_amendment_touches_the_experiments_it_names_or_all_when_it_names_none(
    reason: str, named: set[str]
) -> None:
    assert experiments_named(reason) == named
    for experiment in ("p1", "p2", "p3"):
        assert touches(reason, [experiment]) == (not named or experiment in named)


def test_a_notebook_page_shows_only_the_amendments_that_may_touch_its_experiment() -> None:
    from agent_reflection.experiments.notebook import registration_markdown

    prereg = load_for_run(None, {})
    assert prereg.registration is not None and prereg.registration.lock is not None
    amendments = prereg.registration.lock.amendments
    for experiment in ("p1", "p2", "p3"):
        text = registration_markdown(prereg, experiment)
        shown = [a for a in amendments if touches(a.reason, [experiment])]
        assert f"{len(shown)} amendment(s) that may touch {experiment.upper()}" in text
        assert text.count("<li>amended ") == len(shown) < len(amendments)
        assert f"Not shown: {len(amendments) - len(shown)} amendment(s)" in text
