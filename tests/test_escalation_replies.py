"""The SubagentStop hook's reply log, written by the real hook, loaded into a real DuckDB file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_reflection.in_loop.replies import BadReplyLine, parse_reply
from agent_reflection.store.db import connect, read_sql
from cli_inprocess import reflect
from test_hooks_subagent_stop import RETRY, event, run_hook, terminal


def write_log(state: Path) -> Path:
    """Four real replies: an invalid one (blocked), its retry (passed), a valid retry packet,
    and a terminal escalation (surfaced)."""
    run_hook(event(last_assistant_message="I think it works now."), state)
    run_hook(event(last_assistant_message="still prose", stop_hook_active=True), state)
    run_hook(event(last_assistant_message=RETRY, agent_id="a2"), state)
    run_hook(event(last_assistant_message=terminal(4), agent_id="a3"), state)
    return state / "reflection-agent.jsonl"


def test_log_loads_with_decisions_and_again_adds_nothing(tmp_path: Path) -> None:
    log = write_log(tmp_path / "state")
    db = tmp_path / "r.duckdb"
    done = reflect("load", "reflection-replies", str(log), "--db", str(db), "--json", "--silent")
    assert done.returncode == 0, done.stderr
    con = connect(db, read_only=True)
    rows = con.execute(
        "SELECT agent_id, kind, valid, decision, attempt, len(problems) FROM reflection_replies "
        "ORDER BY line_no"
    ).fetchall()
    by_decision = con.execute(read_sql("in_loop/reflection_replies_by_decision.sql")).fetchall()
    con.close()
    assert rows == [
        ("a1", None, False, "block", None, 1),
        ("a1", None, False, "pass", None, 1),
        ("a2", "retry_packet_for_coder", True, "pass", None, 0),
        ("a3", "escalation", True, "surface", 4, 0),
    ]
    assert sum(r[2] for r in by_decision) == 4
    again = reflect("load", "reflection-replies", str(log), "--db", str(db), "--json", "--silent")
    (load,) = json.loads(again.stdout)["loads"]
    assert (load["read"], load["loaded"], load["already_present"]) == (4, 0, 4)


def test_bad_lines_are_rejected_naming_the_field(tmp_path: Path) -> None:
    log = write_log(tmp_path / "state")
    with log.open("a") as handle:
        handle.write('{"valid": "yes", "source": "none"}\n')
        handle.write("not json\n")
    db = tmp_path / "r.duckdb"
    done = reflect("load", "reflection-replies", str(log), "--db", str(db))
    assert done.returncode == 0, done.stderr
    assert "read 6 = loaded 4 + rejected 2 + already present 0" in done.stdout
    con = connect(db, read_only=True)
    rejected = con.execute("SELECT location, reason FROM rejected ORDER BY location").fetchall()
    locations, reasons = [r[0] for r in rejected], [r[1] for r in rejected]
    con.close()
    assert any("field 'valid'" in r for r in reasons) and any("not JSON" in r for r in reasons)
    assert all(loc.startswith(str(log.resolve()) + ":") for loc in locations)


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ('{"valid": true, "source": "none", "attempt": "4"}', "attempt"),
        ('{"valid": true, "source": "none", "decision": "maybe"}', "decision"),
        ('{"valid": true, "source": "none", "problems": "x"}', "problems"),
        ('{"valid": true, "source": "none", "recorded_at": "yesterday"}', "recorded_at"),
        ('{"valid": true}', "source"),
    ],
)
def test_parse_reply_names_the_field(line: str, field: str) -> None:
    with pytest.raises(BadReplyLine, match=f"'{field}'"):
        parse_reply(line)


def test_no_log_is_a_clear_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFLECTION_STATE_DIR", str(tmp_path / "empty"))
    done = reflect("load", "reflection-replies", "--db", str(tmp_path / "r.duckdb"))
    assert done.returncode != 0
    assert "no reply log at" in done.stderr and "reflection-agent.jsonl" in done.stderr
