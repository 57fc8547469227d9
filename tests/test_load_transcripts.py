"""Transcripts into DuckDB: real shared transcripts, bad lines, checkpoints, escalations."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from agent_reflection.in_loop.cadence import reflection_prompt
from agent_reflection.in_loop.escalation_router import render_terminal_escalation
from agent_reflection.load.transcripts import load_transcripts, parse_transcript
from agent_reflection.store.db import connect

TABLES = ("messages", "sessions", "tool_calls", "checkpoints", "escalations")


def dump(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[Any, ...]]]:
    out = {}
    for table in TABLES:
        out[table] = con.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall()
    return out


def line(kind: str, uuid: str, parent: str | None, content: Any, **extra: Any) -> str:
    role = "assistant" if kind == "assistant" else "user"
    return json.dumps(
        {
            "type": kind,
            "uuid": uuid,
            "parentUuid": parent,
            "sessionId": "sess-1",
            "timestamp": f"2026-01-21T06:20:{int(uuid[1:]):02d}.000Z",
            "cwd": "/tmp/p",
            "message": {"role": role, "content": content},
            **extra,
        }
    )


def tool_use(tid: str, name: str, **inp: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tid, "name": name, "input": inp}


def tool_result(tid: str, text: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tid, "content": text}


@pytest.mark.shared
def test_real_transcripts_load_and_reconcile(shared_dir: Path) -> None:
    folder = shared_dir / "data" / "claude-code"
    files = sorted(folder.glob("*.transcript.jsonl"))
    con = connect(":memory:")
    summary = load_transcripts(con, [folder])
    assert summary.reconciles and summary.rejected == 0
    # expectations computed independently from the raw files
    lines = [json.loads(x) for f in files for x in f.read_text().splitlines() if x.strip()]
    assert summary.read == summary.loaded == len(lines)
    uses = [
        b
        for d in lines
        if d["type"] == "assistant"
        for b in d["message"]["content"]
        if isinstance(b, dict) and b.get("type") == "tool_use"
    ]
    assert con.execute("SELECT count(*) FROM tool_calls").fetchone() == (len(uses),)
    sessions = {d["sessionId"] for d in lines}
    got = dict(con.execute("SELECT session_id, n_tool_calls FROM sessions").fetchall())
    assert set(got) == sessions
    for sid in sessions:
        assert got[sid] == sum(
            1
            for d in lines
            if d["sessionId"] == sid and d["type"] == "assistant"
            for b in d["message"]["content"]
            if b.get("type") == "tool_use"
        )
    # every tool call got its result; queue-operation lines are kept as raw JSON
    assert con.execute("SELECT count(*) FROM tool_calls WHERE result_uuid IS NULL").fetchone() == (
        0,
    )
    kept = con.execute("SELECT count(*) FROM messages WHERE line_type = 'queue-operation'")
    assert kept.fetchone() == (sum(1 for d in lines if d["type"] == "queue-operation"),)
    # Stop-hook feedback lines are meta, not prompts: each real session has one prompt
    assert con.execute("SELECT DISTINCT n_prompts FROM sessions").fetchall() == [(1,)]


@pytest.mark.shared
def test_loading_twice_leaves_identical_tables(shared_dir: Path, tmp_path: Path) -> None:
    con = connect(tmp_path / "t.duckdb")
    first = load_transcripts(con, [shared_dir / "data" / "claude-code"])
    before = dump(con)
    second = load_transcripts(con, [shared_dir / "data" / "claude-code"])
    assert dump(con) == before
    assert (second.loaded, second.already_present) == (0, first.loaded)
    assert second.reconciles


def test_bad_lines_are_rejected_unknown_types_kept(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    good = line("user", "u1", None, "do the thing")
    path.write_text(
        "\n".join(
            [
                good,
                "{not json",
                "[1, 2]",
                '{"no_type": true}',
                json.dumps({"type": "assistant", "uuid": "a9", "sessionId": "sess-1"}),
                json.dumps({"type": "custom-title", "title": "My session", "sessionId": "sess-1"}),
                good,
                "",
                json.dumps({"type": "summary", "summary": "s", "leafUuid": "u1"}),
            ]
        )
        + "\n"
    )
    con = connect(":memory:")
    summary = load_transcripts(con, [path])
    assert (summary.read, summary.loaded, summary.rejected, summary.already_present) == (
        8,
        3,
        4,
        1,
    )
    rejected = con.execute("SELECT location, reason FROM rejected ORDER BY location").fetchall()
    assert [loc.rsplit(":", 1)[1] for loc, _ in rejected] == ["2", "3", "4", "5"]
    reasons = " | ".join(r for _, r in rejected)
    assert "not JSON" in reasons and "not an object" in reasons
    assert "no 'type'" in reasons and "without a 'message'" in reasons
    kept = con.execute(
        "SELECT line_type, session_id, raw->>'$.title' FROM messages ORDER BY line_no"
    ).fetchall()
    assert kept == [
        ("user", "sess-1", None),
        ("custom-title", "sess-1", "My session"),
        ("summary", "sess-1", None),
    ]


def test_checkpoints_found_wherever_the_hook_put_them(tmp_path: Path) -> None:
    prompt = reflection_prompt(7, "port the parser")
    hook_context = {
        "hookSpecificOutput": {
            "hookEventName": "PostToolUse",
            "additionalContext": reflection_prompt(9),
        }
    }
    lines = [
        line("user", "u1", None, "port the parser"),
        line("assistant", "u2", "u1", [tool_use("t1", "Bash", command="ls")]),
        line("user", "u3", "u2", [tool_result("t1", "a.py\n" + prompt)]),
        line("assistant", "u4", "u3", [tool_use("t2", "Read", file_path="/tmp/p/a.py")]),
        json.dumps(
            {
                "type": "attachment",
                "uuid": "u5",
                "sessionId": "sess-1",
                "attachment": {
                    "type": "hook_additional_context",
                    "hookName": "PostToolUse",
                    "content": [hook_context],
                },
            }
        ),
        line("user", "u6", "u5", "plain text mentioning no checkpoint"),
    ]
    parsed = parse_transcript(lines, "x.jsonl")
    rows = {r[3]: r for r in parsed.checkpoints}
    assert set(rows) == {"tool_result", "additional_context"}
    assert rows["tool_result"][4:7] == (1, 7, "port the parser")
    assert rows["additional_context"][4:7] == (2, 9, None)
    assert len(parsed.checkpoints) == 2


def test_escalations_in_assistant_text_and_task_prompts(tmp_path: Path) -> None:
    payload = render_terminal_escalation(
        attempt=5,
        task_scope="reflection rescue summary",
        suspected_failure_layers=["dependency"],
        what_was_tried=["a"],
        what_did_not_work=["b"],
        forced_context_checked=["c"],
        current_invariants=["d"],
        handoff_artifacts=["e"],
    )
    trigger = "<ESCALATION>\nstatus: blocked\nattempt: [ATTEMPT: 4]\n</ESCALATION>"
    lines = [
        line("user", "u1", None, "fix it"),
        line("assistant", "u2", "u1", [{"type": "text", "text": "Stuck.\n" + payload}]),
        line(
            "assistant",
            "u3",
            "u2",
            [
                tool_use(
                    "t1",
                    "Task",
                    subagent_type="reflection-unblocker",
                    prompt="Please unblock:\n" + trigger,
                )
            ],
        ),
        line("user", "u4", "u3", "<ESCALATION>\nstatus: blocked\n</ESCALATION>"),
    ]
    parsed = parse_transcript(lines, "x.jsonl")
    assert len(parsed.escalations) == 2  # user text is not scanned
    terminal, handed = sorted(parsed.escalations, key=lambda r: r[1])
    assert terminal[4:10] == ("blocked", 5, "4+", ["dependency"], True, True)
    assert handed[4:10] == ("blocked", 4, "4+", [], True, False)
    assert any(p.startswith("task_scope") for p in handed[10])


def test_growing_file_loads_only_new_lines_and_completes_results(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    first = [
        line("user", "u1", None, "go"),
        line("assistant", "u2", "u1", [tool_use("t1", "Bash", command="make")]),
    ]
    path.write_text("\n".join(first) + "\n")
    con = connect(":memory:")
    load_transcripts(con, [path])
    assert con.execute("SELECT result_text FROM tool_calls").fetchall() == [(None,)]
    with path.open("a") as fh:
        fh.write(line("user", "u3", "u2", [tool_result("t1", "built")]) + "\n")
    again = load_transcripts(con, [path])
    assert (again.read, again.loaded, again.already_present) == (3, 1, 2)
    assert con.execute("SELECT result_text, command FROM tool_calls").fetchall() == [
        ("built", "make")
    ]


def test_task_sequence_resets_at_each_prompt() -> None:
    lines = [
        line("user", "u1", None, "one"),
        line(
            "assistant",
            "u2",
            "u1",
            [tool_use("t1", "Bash", command="a"), tool_use("t2", "Bash", command="b")],
        ),
        line("user", "u3", "u2", "Stop hook feedback: continue", isMeta=True),
        line("assistant", "u4", "u3", [tool_use("t3", "Bash", command="c")]),
        line("user", "u5", "u4", [{"type": "text", "text": "two"}]),
        line("assistant", "u6", "u5", [tool_use("t4", "Bash", command="d")]),
    ]
    parsed = parse_transcript(lines, "x.jsonl")
    assert [(r[2], r[3], r[4]) for r in parsed.tool_calls] == [
        (1, 1, 1),
        (2, 1, 2),
        (3, 1, 3),
        (4, 2, 1),
    ]


def test_cli_prints_reconcile_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(line("user", "u1", None, "hi") + "\nbroken\n")
    db = tmp_path / "db.duckdb"
    reflect = str(Path(sys.executable).parent / "reflect")
    out = subprocess.run(
        [reflect, "load", "transcripts", str(path), "--db", str(db)], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert "read 2 = loaded 1 + rejected 1 + already present 0" in out.stdout
    missing = subprocess.run(
        [reflect, "load", "transcripts", str(tmp_path / "nope")], capture_output=True, text=True
    )
    assert missing.returncode != 0 and "nope" in missing.stderr
