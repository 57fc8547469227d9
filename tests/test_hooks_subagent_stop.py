"""The SubagentStop hook, run as the real console script: records every reply, blocks an
invalid one once (``stop_hook_active``, one block per agent), surfaces terminal escalations."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_reflection.in_loop.escalation_router import render_terminal_escalation

HOOK = str(Path(sys.executable).parent / "reflect-subagent-stop-hook")

RETRY = """<RETRY_PACKET>
new_hypothesis: tests import the installed package, not src
failure_layer: environment
files_to_recheck:
- pyproject.toml
forced_checklist:
- python -c 'import pkg; print(pkg.__file__)'
constraints:
- keep the public API
what_not_to_retry:
- editing the parser again
decision_memory_notes:
- none
</RETRY_PACKET>"""


def run_hook(event: dict[str, Any] | str, state: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REFLECTION_STATE_DIR": str(state)}
    data = event if isinstance(event, str) else json.dumps(event)
    return subprocess.run([HOOK], input=data, capture_output=True, text=True, env=env, timeout=30)


def log(state: Path) -> list[dict[str, Any]]:
    path = state / "reflection-agent.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def event(**extra: Any) -> dict[str, Any]:
    return {
        "hook_event_name": "SubagentStop",
        "session_id": "s1",
        "agent_id": "a1",
        "agent_type": "reflection-unblocker",
        "stop_hook_active": False,
        "transcript_path": "/nonexistent/parent.jsonl",
        **extra,
    }


def write_transcript(path: Path, prompt: str, replies: list[str]) -> Path:
    lines = [{"type": "user", "message": {"role": "user", "content": prompt}}]
    for reply in replies:
        blocks = [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": reply}]
        lines.append({"type": "assistant", "message": {"role": "assistant", "content": blocks}})
        lines.append(
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}],
                },
            }
        )
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\nnot json\n")
    return path


def test_valid_reply_from_last_assistant_message(tmp_path: Path) -> None:
    out = run_hook(event(last_assistant_message=RETRY), tmp_path)
    assert (out.returncode, out.stdout) == (0, "")
    (rec,) = log(tmp_path)
    assert (rec["kind"], rec["valid"], rec["source"]) == (
        "retry_packet_for_coder",
        True,
        "last_assistant_message",
    )
    assert rec["failure_layers"] == ["environment"] and rec["agent_id"] == "a1"


def test_reply_read_from_agent_transcript_with_rejected_paths(tmp_path: Path) -> None:
    reply = RETRY.replace("- pyproject.toml", "- src/legacy_loader.py")
    transcript = write_transcript(
        tmp_path / "agent-a1.jsonl",
        "<ESCALATION>...</ESCALATION>\n@REJECTED src/legacy_loader.py",
        ["first draft", reply],
    )
    out = run_hook(event(agent_transcript_path=str(transcript)), tmp_path / "state")
    assert out.returncode == 0
    answer = json.loads(out.stdout)
    assert answer["decision"] == "block" and "src/legacy_loader.py" in answer["reason"]
    (rec,) = log(tmp_path / "state")
    assert rec["source"] == "agent_transcript"
    assert rec["valid"] is False and rec["decision"] == "block"
    assert any(p.startswith("decision_memory:") for p in rec["problems"])


def test_terminal_payload_is_recorded_with_attempt(tmp_path: Path) -> None:
    payload = render_terminal_escalation(
        attempt=5,
        task_scope="reflection rescue summary",
        suspected_failure_layers=["unknown"],
        what_was_tried=["a"],
        what_did_not_work=["b"],
        forced_context_checked=["c"],
        current_invariants=["d"],
        handoff_artifacts=["e"],
    )
    out = run_hook(event(last_assistant_message=payload), tmp_path)
    (rec,) = log(tmp_path)
    assert (rec["kind"], rec["valid"], rec["attempt"]) == ("escalation", True, 5)
    # attempt 4+: the user sees it (systemMessage), the subagent is not sent back
    answer = json.loads(out.stdout)
    assert set(answer) == {"systemMessage"} and rec["decision"] == "surface"
    assert "[ATTEMPT: 5]" in answer["systemMessage"] and "<ESCALATION>" in answer["systemMessage"]


def terminal(attempt: int) -> str:
    return render_terminal_escalation(
        attempt=attempt,
        task_scope="rescue",
        suspected_failure_layers=["environment"],
        what_was_tried=["a"],
        what_did_not_work=["b"],
        forced_context_checked=["c"],
        current_invariants=["d"],
        handoff_artifacts=["e"],
    )


def test_escalation_below_attempt_four_is_not_surfaced(tmp_path: Path) -> None:
    out = run_hook(event(last_assistant_message=terminal(3)), tmp_path)
    assert out.stdout == "" and log(tmp_path)[0]["decision"] == "pass"
    assert run_hook(event(last_assistant_message=terminal(4)), tmp_path).stdout != ""


def test_contract_breach_is_blocked_once_with_the_reason(tmp_path: Path) -> None:
    out = run_hook(event(last_assistant_message="I tried again and it might work now."), tmp_path)
    assert out.returncode == 0
    answer = json.loads(out.stdout)
    assert set(answer) == {"decision", "reason"} and answer["decision"] == "block"
    for kind in (
        "contract_correction",
        "test_harness_fix",
        "<RETRY_PACKET>",
        "[NEED_CONTEXT",
        "[COHERENCE_CHECK_FAILED]",
        "<ESCALATION>",
    ):
        assert kind in answer["reason"]
    assert "no output kind found" in answer["reason"]
    (rec,) = log(tmp_path)
    assert rec["valid"] is False and rec["kind"] is None and rec["decision"] == "block"
    assert rec["problems"] == ["output: no output kind found; reply with exactly one"]
    # the subagent answers again, still wrong, and Claude Code says a stop hook is active
    again = run_hook(event(last_assistant_message="still prose", stop_hook_active=True), tmp_path)
    assert (again.returncode, again.stdout) == (0, "")
    assert [r["decision"] for r in log(tmp_path)] == ["block", "pass"]


def test_missing_fields_are_named(tmp_path: Path) -> None:
    broken = RETRY.replace("constraints:\n- keep the public API\n", "").replace(
        "decision_memory_notes:\n- none\n", ""
    )
    answer = json.loads(run_hook(event(last_assistant_message=broken), tmp_path).stdout)
    assert "Missing fields: constraints, decision_memory_notes." in answer["reason"]
    assert "constraints: missing or empty field" in answer["reason"]


def test_never_blocks_the_same_agent_twice_even_without_the_flag(tmp_path: Path) -> None:
    """``stop_hook_active`` may come as null on SubagentStop: the per-agent marker still holds."""
    first = run_hook(event(last_assistant_message="prose", stop_hook_active=None), tmp_path)
    second = run_hook(event(last_assistant_message="prose", stop_hook_active=None), tmp_path)
    assert json.loads(first.stdout)["decision"] == "block" and second.stdout == ""
    other = run_hook(event(last_assistant_message="prose", agent_id="a2"), tmp_path)
    assert json.loads(other.stdout)["decision"] == "block"  # another subagent run: its own once


def test_event_without_agent_type_is_recorded_not_blocked(tmp_path: Path) -> None:
    out = run_hook(event(last_assistant_message="prose", agent_type=None), tmp_path)
    assert out.stdout == "" and log(tmp_path)[0]["valid"] is False


def test_stop_hook_active_never_blocks(tmp_path: Path) -> None:
    out = run_hook(event(last_assistant_message="prose", stop_hook_active=True), tmp_path)
    assert (out.returncode, out.stdout) == (0, "")
    assert log(tmp_path)[0]["decision"] == "pass"


def test_valid_reply_after_a_block_passes(tmp_path: Path) -> None:
    assert run_hook(event(last_assistant_message="prose"), tmp_path).stdout
    out = run_hook(event(last_assistant_message=RETRY, stop_hook_active=True), tmp_path)
    assert out.stdout == ""
    assert [(r["valid"], r["decision"]) for r in log(tmp_path)] == [
        (False, "block"),
        (True, "pass"),
    ]


@pytest.mark.parametrize(
    "stdin",
    [
        "",
        "garbage",
        json.dumps({"hook_event_name": "Stop"}),
        json.dumps(event(agent_type="Explore", last_assistant_message=RETRY)),
    ],
)
def test_other_input_records_nothing(tmp_path: Path, stdin: str) -> None:
    out = run_hook(stdin, tmp_path)
    assert (out.returncode, out.stdout) == (0, "")
    assert log(tmp_path) == []


def test_missing_transcript_still_exits_zero(tmp_path: Path) -> None:
    out = run_hook(event(agent_transcript_path=str(tmp_path / "gone.jsonl")), tmp_path)
    # an unreadable reply is not blocked: a missing transcript is not the subagent's fault
    assert (out.returncode, out.stdout) == (0, "")
    (rec,) = log(tmp_path)
    assert rec["source"] == "none" and rec["valid"] is False
    assert "cannot read" in out.stderr


def test_unwritable_log_exits_zero(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    out = run_hook(event(last_assistant_message=RETRY), blocker / "state")
    assert (out.returncode, out.stdout) == (0, "")
    assert "reflect-subagent-stop-hook" in out.stderr


def test_unwritable_log_still_blocks_an_invalid_reply(tmp_path: Path) -> None:
    (tmp_path / "reflection-agent.jsonl").mkdir()  # the log cannot be opened for appending
    out = run_hook(event(last_assistant_message="prose"), tmp_path)
    assert out.returncode == 0 and json.loads(out.stdout)["decision"] == "block"
    assert "cannot append" in out.stderr


def test_hook_imports_only_the_standard_library(tmp_path: Path) -> None:
    env = {**os.environ, "REFLECTION_STATE_DIR": str(tmp_path), "PYTHONPROFILEIMPORTTIME": "1"}
    out = subprocess.run(
        [HOOK],
        input=json.dumps(event(last_assistant_message=RETRY)),
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in out.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "agent_reflection.in_loop.escalation_contract" in imported
    heavy = {"pandas", "numpy", "duckdb", "click", "jsonschema", "scipy", "sklearn", "yaml"}
    assert not {n.split(".")[0] for n in imported} & heavy
    assert log(tmp_path)[0]["valid"] is True


def test_fake_harness_refires_and_the_hook_blocks_once(tmp_path: Path) -> None:
    """A harness that re-fires SubagentStop after every block (as Claude Code does, up to its
    cap of 8), with a subagent that never fixes its reply: exactly one block."""
    blocks = 0
    active: bool | None = None  # Claude Code may send null on the first fire
    for _ in range(8):
        out = run_hook(event(last_assistant_message="prose", stop_hook_active=active), tmp_path)
        if not out.stdout:
            break
        assert json.loads(out.stdout)["decision"] == "block"
        blocks += 1
        active = True
    assert blocks == 1
    assert [r["decision"] for r in log(tmp_path)] == ["block", "pass"]
