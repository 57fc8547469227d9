"""Loading run logs: the JSONL shape, a platform SQLite database, the SWE-bench export."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import duckdb
import pytest

from _runlog import History, add_outcome, add_task, make_platform_db
from agent_reflection.load.runs import detect_format, load_runs
from agent_reflection.load.runs.records import skill_read
from agent_reflection.load.runs.store import MIN_PROMPT_MATCH_LENGTH
from agent_reflection.store import db

READ_DEPLOY = {"action": "read", "skill_name": "deploy"}
SEARCH_DB = {"action": "search", "skill_name": "db"}
ADD_DEPLOY = {"action": "add", "skill_name": "deploy"}
TABLES = ("run_outcomes", "run_steps", "run_tasks")


def snapshot(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[object, ...]]]:
    """Every row of the run tables, without the load id (which differs per load)."""
    out = {}
    for table in TABLES:
        cols = [f'"{c[0]}"' for c in con.execute(f"DESCRIBE {table}").fetchall()]
        kept = ", ".join(c for c in cols if c != '"load_id"')
        out[table] = con.execute(f"SELECT {kept} FROM {table} ORDER BY ALL").fetchall()
    return out


def test_jsonl_loads_counts_rejects_and_is_idempotent(tmp_path: Path) -> None:
    history = History().task("A")
    sid = history.outcome("failed", 2)
    history.outcome("Timed_Out", 1)
    history.step(sid, {"tool": "skill", "arguments": {"action": "read", "skill_name": "deploy"}})
    path = history.write(tmp_path / "runs.jsonl")
    with path.open("a") as fh:
        fh.write("not json\n")
        fh.write(json.dumps({"kind": "outcome", "session_id": "x", "status": "failed"}) + "\n")
        fh.write(json.dumps({"kind": "weird"}) + "\n")
    con = db.connect(tmp_path / "db.duckdb")
    first = load_runs(con, path).summary
    assert (first.read, first.loaded, first.rejected, first.already_present) == (7, 4, 3, 0)
    assert first.reconciles
    reasons = [
        r[0] for r in con.execute("SELECT reason FROM rejected ORDER BY location").fetchall()
    ]
    assert any("not JSON" in r for r in reasons)
    assert any(r.startswith("finished_at: missing") for r in reasons)
    assert any("kind: 'weird'" in r for r in reasons)
    locations = {r[0] for r in con.execute("SELECT location FROM rejected").fetchall()}
    assert f"{path}:5" in locations
    assert con.execute("SELECT status FROM run_outcomes ORDER BY finished_at").fetchall() == [
        ("failed",),
        ("timeout",),
    ]
    assert con.execute("SELECT skill FROM run_steps").fetchall() == [("deploy",)]
    before = snapshot(con)
    again = load_runs(con, path).summary
    assert (again.read, again.loaded, again.rejected, again.already_present) == (7, 0, 3, 4)
    assert snapshot(con) == before


def test_sqlite_platform_database(tmp_path: Path) -> None:
    src = make_platform_db(tmp_path / "platform.db")
    add_task(src, "t1", "Summarise the inbox every morning")
    add_outcome(src, "s1", "failed", 1_750_000_000.0, task_id="t1")
    add_outcome(src, "s2", "completed", 1_750_000_100.0, task_id="t1")
    with sqlite3.connect(src) as sq:
        sq.execute(
            "INSERT INTO interaction_log (timestamp, action, session, input) VALUES (?,?,?,?)",
            [1_750_000_010.0, "tool_call", "s1", "read_file data/skills/deploy.md"],
        )
        sq.execute(
            "INSERT INTO interaction_log (timestamp, action, session, input) VALUES (?,?,?,?)",
            [1_750_000_020.0, "tool_call", None, "orphan row"],
        )
    assert detect_format(src) == "sqlite"
    con = db.connect(tmp_path / "db.duckdb")
    summary = load_runs(con, src).summary
    assert (summary.read, summary.loaded, summary.rejected) == (5, 4, 1)
    assert "interaction_log.session: missing" in str(
        con.execute("SELECT reason FROM rejected").fetchone()
    )
    row = con.execute(
        "SELECT task_id, matched_by, epoch(finished_at) - epoch(started_at) FROM run_outcomes"
        " WHERE session_id = 's1'"
    ).fetchone()
    assert row == ("t1", "task_id", 30.0)
    assert con.execute("SELECT skill FROM run_steps").fetchall() == [("deploy",)]
    assert con.execute("SELECT status, implicit FROM run_tasks").fetchall() == [("active", False)]
    before = snapshot(con)
    load_runs(con, src)
    assert snapshot(con) == before


@pytest.mark.peer
@pytest.mark.parametrize(
    ("objective", "prompt", "expected"),
    [
        pytest.param(
            "Scheduled: Summarise the inbox every morning (run 4)",
            "Summarise the inbox every morning",
            ("t1", "objective"),
            id="C2.R17",
        ),
        pytest.param(
            "something else entirely",
            "Summarise the inbox every morning",
            (None, None),
            id="C2.R17-no-match",
        ),
        pytest.param("run the inbox job", "inbox", (None, None), id="C2.R17-length-guard"),
    ],
)
def test_legacy_outcomes_matched_by_objective(
    tmp_path: Path, objective: str, prompt: str, expected: tuple[str | None, str | None]
) -> None:
    src = make_platform_db(tmp_path / "legacy.db", with_task_id=False)
    add_task(src, "t1", prompt)
    add_outcome(src, "old1", "failed", 1_700_000_000.0, objective=objective)
    con = db.connect(":memory:")
    load_runs(con, src)
    assert len("inbox") < MIN_PROMPT_MATCH_LENGTH <= len("Summarise the inbox every morning")
    row = con.execute("SELECT task_id, matched_by FROM run_outcomes").fetchone()
    assert row == expected


def test_longest_prompt_wins_when_several_match(tmp_path: Path) -> None:
    src = make_platform_db(tmp_path / "legacy.db", with_task_id=False)
    add_task(src, "short", "Summarise the inbox every")
    add_task(src, "long", "Summarise the inbox every morning at 7")
    add_outcome(
        src, "o", "failed", 1_700_000_000.0, objective="Summarise the inbox every morning at 7!"
    )
    con = db.connect(":memory:")
    load_runs(con, src)
    assert con.execute("SELECT task_id FROM run_outcomes").fetchone() == ("long",)


def test_not_a_run_database(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as sq:
        sq.execute("CREATE TABLE foo (x)")
    con = db.connect(":memory:")
    with pytest.raises(Exception, match="no sub_session_outcomes"):
        load_runs(con, path)
    assert con.execute("SELECT status FROM loads").fetchone() == ("failed",)


@pytest.mark.parametrize(
    ("tool", "text", "skill"),
    [
        ("skill", json.dumps({"tool": "skill", "arguments": READ_DEPLOY}), "deploy"),
        (None, json.dumps({"tool": "skill", "arguments": json.dumps(SEARCH_DB)}), "db"),
        (None, json.dumps({"tool": "skill", "arguments": ADD_DEPLOY}), None),
        (None, "calling skill with skill_name: backup", "backup"),
        ("read_file", "read_file data/skills/deploy.md", "deploy"),
        ("read_file", "read_file src/app.py", None),
        (None, None, None),
    ],
)
def test_skill_read_detection(tool: str | None, text: str | None, skill: str | None) -> None:
    assert skill_read(tool, text) == skill


@pytest.mark.shared
def test_real_swe_bench_export(shared_dir: Path, tmp_path: Path) -> None:
    runs_dir = shared_dir / "data" / "agent-runs"
    con = db.connect(tmp_path / "db.duckdb")
    runs = load_runs(con, runs_dir / "runs.jsonl").summary
    steps = load_runs(con, runs_dir / "steps.jsonl.gz").summary
    lines = [json.loads(x) for x in (runs_dir / "runs.jsonl").read_text().splitlines()]
    assert runs.read == runs.loaded == len(lines) and runs.reconciles
    assert steps.reconciles and steps.loaded == steps.read
    resolved = sum(1 for x in lines if x["resolved"])
    assert con.execute(
        "SELECT count(*) FILTER (WHERE status = 'completed'), count(*) FROM run_outcomes"
    ).fetchone() == (resolved, len(lines))
    repos = {x["repo"] for x in lines}
    assert {r[0] for r in con.execute("SELECT task_id FROM run_tasks").fetchall()} == repos
    django = sum(1 for x in lines if x["repo"] == "django/django")
    assert con.execute(
        "SELECT run_count FROM run_tasks WHERE task_id = 'django/django'"
    ).fetchone() == (django,)
    traj = load_runs(con, runs_dir / "sample-trajectories" / "django__django-11099.traj.json.gz")
    assert traj.summary.reconciles and traj.summary.rejected == 0
    assert load_runs(con, runs_dir / "runs.jsonl").summary.already_present == len(lines)


def test_format_detection_and_cli_reconcile_line(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from agent_reflection.cli._groups import cli, register_all_commands

    plain = History().task("A")
    plain.outcome("failed", 1)
    jsonl = plain.write(tmp_path / "plain.jsonl")
    swe = tmp_path / "runs.jsonl"
    run = {
        "instance_id": "a__b-1",
        "repo": "a/b",
        "exit_status": "TimeExceeded",
        "last_response_at": "2025-01-01T00:00:00Z",
    }
    swe.write_text(json.dumps(run) + "\n")
    platform = make_platform_db(tmp_path / "p.db")
    assert [detect_format(p) for p in (jsonl, swe, platform)] == ["jsonl", "swe-agent", "sqlite"]
    register_all_commands()
    result = CliRunner().invoke(
        cli, ["load", "runs", str(jsonl), str(swe), "--db", str(tmp_path / "db.duckdb")]
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].endswith("read 2 = loaded 2 + rejected 0 + already present 0")
    assert lines[1].endswith("read 1 = loaded 1 + rejected 0 + already present 0")
    con = db.connect(tmp_path / "db.duckdb")
    assert con.execute(
        "SELECT task_id, status FROM run_outcomes WHERE session_id = 'a__b-1'"
    ).fetchone() == ("a/b", "timeout")
