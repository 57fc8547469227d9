"""``reflect-in-loop-hook``: the cadence checkpoint and the anti-loop detector in one process per
event, as Claude Code runs it (the real console script, the event on stdin). Each part alone is
tested in ``test_hooks_cadence.py`` and ``test_escalation_hook.py``; here: both on one call,
the commands of earlier installs, and the JSON the hooks really print."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_reflection.hooks.in_loop import handle
from agent_reflection.in_loop.cadence import CHECKPOINT_FLAG, clip_task
from agent_reflection.in_loop.escalation_contract import parse_escalations, validate_trigger
from test_hooks_subagent_stop import HOOK as SUBAGENT_HOOK
from test_hooks_subagent_stop import event as subagent_event

BIN = Path(sys.executable).parent
HOOK = str(BIN / "reflect-in-loop-hook")


def env_for(state: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFLECTION_")}
    env.pop("CLAUDE_PROJECT_DIR", None)
    return {**env, "REFLECTION_STATE_DIR": str(state), **extra}


def run(command: list[str], event: dict[str, Any] | str, env: dict[str, str]) -> Any:
    data = event if isinstance(event, str) else json.dumps(event)
    done = subprocess.run(command, input=data, capture_output=True, text=True, env=env, timeout=30)
    assert done.returncode == 0, done.stderr
    return done


_ids = iter(range(10**6))


def failure(session: str = "s-1", command: str = "make test") -> dict[str, Any]:
    return {
        "hook_event_name": "PostToolUseFailure",
        "session_id": session,
        "cwd": "/nonexistent-project",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": f"toolu_{next(_ids)}",
        "error": "Exit code 2\nmake: *** [test] Error 1",
        "is_interrupt": False,
    }


def prompt(text: str, session: str = "s-1") -> dict[str, Any]:
    return {"hook_event_name": "UserPromptSubmit", "session_id": session, "prompt": text}


def test_checkpoint_and_escalation_on_one_call_are_one_document(tmp_path: Path) -> None:
    """Cadence 4 and threshold 4: the 4th failure is due for both. One JSON document holds the
    checkpoint first (its flag opens the text, as the loaders expect), then the escalation."""
    env = env_for(tmp_path, REFLECTION_CADENCE="4")
    run([HOOK], prompt("make the build green"), env)
    outs = [run([HOOK], failure(), env).stdout for _ in range(4)]
    assert outs[:3] == ["", "", ""]
    assert outs[3].count("\n") == 1  # one line: one document
    doc = json.loads(outs[3])
    assert list(doc) == ["hookSpecificOutput"]
    assert doc["hookSpecificOutput"]["hookEventName"] == "PostToolUseFailure"
    context = doc["hookSpecificOutput"]["additionalContext"]
    checkpoint, escalation = context.split("\n\n[System meta: anti-loop escalation.", 1)
    assert checkpoint.startswith(CHECKPOINT_FLAG) and "make the build green" in checkpoint
    assert "4 tool calls since the last checkpoint" in checkpoint
    (block,) = parse_escalations(escalation)
    assert validate_trigger(block) == () and block.attempt == 4
    state = json.loads((tmp_path / "s-1.json").read_text())
    assert state["cadence"]["fired"] == [4] and state["escalation"]["fired"] == [[4, 4]]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s-1.json", "s-1.lock"]


@pytest.mark.parametrize(
    ("script", "fires"),
    [("reflect-cadence-hook", [2, 4]), ("reflect-escalation-hook", [4])],
)
def test_the_commands_of_earlier_installs_run_one_part(
    tmp_path: Path, script: str, fires: list[int]
) -> None:
    env = env_for(tmp_path, REFLECTION_CADENCE="2")
    outs = [run([str(BIN / script)], failure(), env).stdout for _ in range(4)]
    assert [i + 1 for i, out in enumerate(outs) if out] == fires
    state = json.loads((tmp_path / "s-1.json").read_text())
    assert set(state) == {"version", script.split("-")[1], "updated"}


def test_an_earlier_install_of_both_commands_counts_like_the_one_hook(tmp_path: Path) -> None:
    """Settings written by an earlier version run the two old commands per event on one state
    file: each counts its own part once, and together they say what the one hook says."""
    old = [str(BIN / "reflect-cadence-hook"), str(BIN / "reflect-escalation-hook")]
    events = [prompt("task"), *(failure() for _ in range(8))]
    env_old, env_new = env_for(tmp_path / "old"), env_for(tmp_path / "new")
    for event in events:
        said = [run([command], event, env_old).stdout for command in old]
        texts = [json.loads(s)["hookSpecificOutput"]["additionalContext"] for s in said if s]
        one = run([HOOK], event, env_new).stdout
        assert "\n\n".join(texts) == (
            json.loads(one)["hookSpecificOutput"]["additionalContext"] if one else ""
        )
    state = json.loads((tmp_path / "old" / "s-1.json").read_text())
    assert (state["cadence"]["count"], state["escalation"]["step"]) == (8, 8)


def test_an_earlier_command_names_itself_in_diagnostics(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    done = run([str(BIN / "reflect-cadence-hook")], failure(), env_for(blocker / "state"))
    assert done.stdout == "" and done.stderr.startswith("reflect-cadence-hook: ")


def test_python_dash_m_and_only(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "agent_reflection.hooks.in_loop", "--only", "cadence"]
    env = env_for(tmp_path, REFLECTION_CADENCE="1")
    done = run([*command, "--only", "nothing"], failure(), env)
    assert CHECKPOINT_FLAG in done.stdout
    assert "--only 'nothing' is not one of cadence, escalation; ignored" in done.stderr
    assert set(json.loads((tmp_path / "s-1.json").read_text())) == {"version", "cadence", "updated"}


@pytest.mark.parametrize("bad", ["{", "{} {}", "nul", "[1,]", "{'a': 1}", '{"a": tru}', "\ufeff{}"])
def test_stdin_that_is_not_one_json_document_is_one_line_on_stderr(
    tmp_path: Path, bad: str
) -> None:
    done = run([HOOK], bad, env_for(tmp_path, REFLECTION_CADENCE="1"))
    assert done.stdout == ""
    assert done.stderr.startswith("reflect-in-loop-hook: JSONDecodeError: ")
    assert done.stderr.count("\n") == 1
    assert not tmp_path.exists() or not list(tmp_path.iterdir())


@settings(max_examples=60, deadline=None)
@given(task=st.text(max_size=400), session=st.text(max_size=40))
def test_any_task_and_session_text_makes_one_valid_document(
    tmp_path_factory: pytest.TempPathFactory, task: str, session: str
) -> None:
    """Whatever the prompt and session id hold (quotes, control characters, surrogates'
    neighbours, U+2028), the hook's answer is one JSON document holding the task verbatim."""
    state = tmp_path_factory.mktemp("state")
    env = {"REFLECTION_STATE_DIR": str(state)}
    argv = ["--reflection-cadence", "1"]
    assert handle(json.dumps(prompt(task, session)), argv, env) is None
    out = handle(json.dumps(failure(session)), argv, env)
    assert out is not None
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    if task.strip():
        assert f"\n{clip_task(task)}\n=== END ORIGINAL TASK ===" in context
    (state_file,) = (p for p in state.iterdir() if p.suffix == ".json")
    assert json.loads(state_file.read_text("utf-8"))["cadence"]["task"] == task


def test_non_ascii_is_written_as_is(tmp_path: Path) -> None:
    env = env_for(tmp_path, REFLECTION_CADENCE="1")
    run([HOOK], prompt("répare le test ✓ \u2028 fin"), env)
    out = run([HOOK], failure(), env).stdout
    assert "répare le test ✓" in out and "\\u" not in out.replace("\\u2028", "")
    assert (
        "répare le test ✓ \u2028 fin" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    )


def test_subagent_stop_answers_one_document_with_non_ascii_kept(tmp_path: Path) -> None:
    reply = "output: environment_fix ✓\nLe venv pointe ailleurs: «réinstaller»."
    done = subprocess.run(
        [SUBAGENT_HOOK],
        input=json.dumps(subagent_event(last_assistant_message=reply + "\n<ESCALATION>")),
        capture_output=True,
        text=True,
        env={**os.environ, "REFLECTION_STATE_DIR": str(tmp_path)},
        timeout=30,
    )
    assert done.returncode == 0 and done.stdout.count("\n") == 1
    assert json.loads(done.stdout)["decision"] == "block"
    [line] = (tmp_path / "reflection-agent.jsonl").read_text("utf-8").splitlines()
    assert "«réinstaller»" in line and json.loads(line)["text"].startswith(reply)
