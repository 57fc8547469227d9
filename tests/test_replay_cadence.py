"""Replay real Claude Code transcripts through the real hook processes.

For each shared transcript, in file order: every real user prompt goes to the hook as a
``UserPromptSubmit`` event, every ``tool_use`` as a ``PostToolUse`` event (with the real tool
input, id and result). Checkpoints must be injected at exactly the calls the cadence predicts,
counted from the last prompt, and carry the session's task.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_reflection.in_loop.cadence import clip_task

HOOK = str(Path(sys.executable).parent / "reflect-in-loop-hook")
TRANSCRIPTS = ["python-to-rust-port", "coverage-test-fix"]


def events(path: Path) -> list[dict[str, Any]]:
    """Hook events a live session would have produced, in order."""
    records = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    results = {}
    for rec in records:
        content = rec.get("message", {}).get("content")
        if rec.get("type") == "user" and isinstance(content, list):
            for b in content:
                if b.get("type") == "tool_result":
                    results[b["tool_use_id"]] = rec.get("toolUseResult", b.get("content"))
    out: list[dict[str, Any]] = []
    for rec in records:
        base = {
            "session_id": rec.get("sessionId"),
            "cwd": rec.get("cwd"),
            "transcript_path": str(path),
            "permission_mode": "default",
        }
        content = rec.get("message", {}).get("content")
        if rec.get("type") == "user" and not rec.get("isMeta"):
            if isinstance(content, str):
                out.append({**base, "hook_event_name": "UserPromptSubmit", "prompt": content})
        elif rec.get("type") == "assistant":
            for b in content:
                if b.get("type") == "tool_use":
                    out.append(
                        {
                            **base,
                            "hook_event_name": "PostToolUse",
                            "tool_name": b["name"],
                            "tool_input": b["input"],
                            "tool_use_id": b["id"],
                            "tool_response": results.get(b["id"]),
                        }
                    )
    return out


@pytest.mark.shared
@pytest.mark.parametrize("name", TRANSCRIPTS)
@pytest.mark.parametrize("cadence", [5, 7, 10])
def test_replay_injects_checkpoints_at_the_right_calls(
    shared_dir: Path, tmp_path: Path, name: str, cadence: int
) -> None:
    path = shared_dir / "data" / "claude-code" / f"{name}.transcript.jsonl"
    project = tmp_path / "project"  # a scratch project configured like a user would
    project.mkdir()
    (project / ".agent-reflection.toml").write_text(f"reflection_cadence = {cadence}\n")
    env = {k: v for k, v in os.environ.items() if k != "REFLECTION_CADENCE"}
    env.update(REFLECTION_STATE_DIR=str(tmp_path / "state"), CLAUDE_PROJECT_DIR=str(project))
    fired: list[int] = []
    contexts: list[str] = []
    task, calls, since_prompt, expected = "", 0, 0, []
    for event in events(path):
        out = subprocess.run(
            [HOOK], input=json.dumps(event), capture_output=True, text=True, env=env, timeout=30
        )
        assert out.returncode == 0, out.stderr
        if event["hook_event_name"] == "UserPromptSubmit":
            assert out.stdout == ""
            task, since_prompt = event["prompt"], 0
            continue
        calls += 1
        since_prompt += 1
        if since_prompt % cadence == 0:
            expected.append(calls)
        if out.stdout:
            doc = json.loads(out.stdout)
            assert doc["hookSpecificOutput"]["hookEventName"] == "PostToolUse"
            fired.append(calls)
            contexts.append(doc["hookSpecificOutput"]["additionalContext"])
    assert expected, "the transcript must be long enough to reach the cadence"
    assert fired == expected
    for context in contexts:
        assert f"{cadence} tool calls since the last checkpoint" in context
        assert clip_task(task) in context
