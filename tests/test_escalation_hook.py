"""The in-loop hook's escalation part (the anti-loop detector) as Claude Code runs it: a
subprocess with the event on stdin, ``--only escalation`` (the cadence part is tested in
``test_hooks_cadence.py``, both together in ``test_hooks_in_loop.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_reflection.hooks.settings import IN_LOOP_SPECS, installed_hooks, read_settings
from agent_reflection.in_loop.escalation_contract import parse_escalations, validate_trigger
from cli_inprocess import reflect

SCRIPT = Path(sys.executable).parent / "reflect-in-loop-hook"
COMMAND = [
    *(
        [str(SCRIPT)]
        if SCRIPT.exists()
        else [sys.executable, "-m", "agent_reflection.hooks.in_loop"]
    ),
    "--only",
    "escalation",
]


def run(event: dict[str, Any] | str, state: Path, *args: str, **env_extra: str) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFLECTION_")}
    env.update(REFLECTION_STATE_DIR=str(state), **env_extra)
    data = event if isinstance(event, str) else json.dumps(event)
    return subprocess.run(
        [*COMMAND, *args], input=data, capture_output=True, text=True, env=env, timeout=30
    )


_ids = iter(range(10**6))


def failure(command: str, error: str, **extra: Any) -> dict[str, Any]:
    return {
        "hook_event_name": "PostToolUseFailure",
        "session_id": "s-1",
        "cwd": "/repo",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": f"toolu_{next(_ids)}",
        "error": error,
        "is_interrupt": False,
        **extra,
    }


def success(tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {
        "hook_event_name": "PostToolUse",
        "session_id": "s-1",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": f"toolu_{next(_ids)}",
        "tool_response": {"success": True},
    }


def prompt(text: str) -> dict[str, Any]:
    return {"hook_event_name": "UserPromptSubmit", "session_id": "s-1", "prompt": text}


def outputs(events: list[dict[str, Any]], state: Path, *args: str) -> list[str]:
    outs = []
    for event in events:
        done = run(event, state, *args)
        assert done.returncode == 0, done.stderr
        outs.append(done.stdout)
    return outs


def test_streak_injects_the_escalation_payload(tmp_path: Path) -> None:
    events = [prompt("Make the login test pass without touching the fixtures.")]
    for n in range(4):
        events.append(success("Edit", {"file_path": "/repo/src/auth.py"}))
        error = f"Exit code 1\n  File \"/tmp/run{n}/t.py\", line {n}\nE   KeyError: 'user'"
        events.append(failure("pytest tests/test_login.py", error))
    outs = outputs(events, tmp_path)
    fired = [i for i, out in enumerate(outs) if out]
    assert fired == [len(events) - 1]  # the 4th same failure, not before
    answer = json.loads(outs[-1])
    assert list(answer) == ["hookSpecificOutput"]
    hook = answer["hookSpecificOutput"]
    assert hook["hookEventName"] == "PostToolUseFailure"
    context = hook["additionalContext"]
    assert "[ATTEMPT: 4]" in context and "reflection-unblocker" in context
    (block,) = parse_escalations(context)
    assert validate_trigger(block) == () and block.attempt == 4
    assert block.first("original_task") == "Make the login test pass without touching the fixtures."
    assert block.values("files") == ("/repo/src/auth.py",)
    assert block.first("error_signature") == "KeyError: 'user'"
    assert block.first("failing_command") == "pytest tests/test_login.py"
    assert "run0" not in context  # no failed transcript, no raw error text


def test_different_errors_do_not_escalate(tmp_path: Path) -> None:
    errors = ["KeyError: 'a'", "TypeError: x", "ImportError: y", "SyntaxError: z", "OSError: w"]
    outs = outputs([failure("python app.py", f"Exit code 1\n{e}") for e in errors], tmp_path)
    assert outs == [""] * len(errors)


def test_success_of_the_same_command_resets(tmp_path: Path) -> None:
    def same() -> list[dict[str, Any]]:
        return [failure("make test", "Exit code 2\nmake: *** [test] Error 1") for _ in range(3)]

    events = [*same(), success("Bash", {"command": "make test"}), *same()]
    assert outputs(events, tmp_path) == [""] * len(events)
    # another command's success does not reset: the fourth failure escalates
    assert run(success("Bash", {"command": "ls"}), tmp_path).stdout == ""
    assert "[ATTEMPT: 4]" in run(same()[0], tmp_path).stdout


def test_new_prompt_starts_a_new_task(tmp_path: Path) -> None:
    def fails() -> list[dict[str, Any]]:
        error = "Exit code 101\nerror: linker `cc` not found"
        return [failure("cargo build", error) for _ in range(3)]

    outs = outputs([*fails(), prompt("now something else"), *fails()], tmp_path)
    assert outs == [""] * 7
    # without the new prompt the same six failures escalate (control)
    control = outputs([*fails(), *fails()], tmp_path / "control")
    assert [bool(o) for o in control] == [False, False, False, True, False, False]


def test_interrupts_and_repeated_ids_do_not_count(tmp_path: Path) -> None:
    event = failure("npm test", "Exit code 1\nfailed")
    interrupted = [failure("npm test", "Exit code 1\nfailed", is_interrupt=True) for _ in range(5)]
    outs = outputs([event, event, event, event, *interrupted], tmp_path)
    assert outs == [""] * 9  # one call reported four times counts once


def test_threshold_from_flag_and_environment(tmp_path: Path) -> None:
    events = [failure("tox", "Exit code 1\nERROR: InvocationError") for _ in range(2)]
    outs = outputs(events, tmp_path / "flag", "--escalation-threshold", "2")
    assert [bool(o) for o in outs] == [False, True]
    env_run = [
        run(e | {"tool_use_id": f"e{i}"}, tmp_path / "env", REFLECTION_ESCALATION_THRESHOLD="0")
        for i, e in enumerate(events * 3)
    ]
    assert all(done.stdout == "" for done in env_run)  # 0 disables


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"[]",
        b'{"version": 2, "escalation": {"step": -3}}',
        b'{"version": 2, "escalation": '
        b'{"step": 2, "streaks": {"Bash | x | exit 1": {"count": "many"}}}}',
        b'{"version": 2, "escalation": {"step": 2, "streaks": {"Bash | x | exit 1": []}}}',
        b'{"version": 1, "step": 2, "streaks": {"Bash | x | exit 1": {"count": 3}}}',
        b"\xff\xfe",
    ],
)
def test_corrupt_state_exits_zero_and_starts_afresh(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "s-1.json").write_bytes(content)
    events = [failure("x", "Exit code 1") for _ in range(4)]
    outs = outputs(events, tmp_path)
    assert [bool(o) for o in outs] == [False, False, False, True]


@pytest.mark.parametrize(
    "stdin", ["", "garbage", "[1, 2]", json.dumps({"hook_event_name": "Stop"})]
)
def test_other_input_prints_nothing(tmp_path: Path, stdin: str) -> None:
    done = run(stdin, tmp_path)
    assert (done.returncode, done.stdout) == (0, "")


def test_unwritable_state_dir_exits_zero(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    done = run(failure("x", "Exit code 1"), blocker / "state")
    assert (done.returncode, done.stdout) == (0, "")
    assert "reflect-in-loop-hook" in done.stderr


def test_hook_imports_only_the_standard_library(tmp_path: Path) -> None:
    done = run(failure("x", "Exit code 1"), tmp_path, PYTHONPROFILEIMPORTTIME="1")
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "agent_reflection.in_loop.loop_detector" in imported
    heavy = {"pandas", "numpy", "duckdb", "click", "dataclasses", "typing", "inspect", "tomllib"}
    assert not {n.strip() for n in imported} & heavy


def test_installed_command_escalates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``reflect hook install`` registers the hook; its written command line, run by a shell as
    Claude Code runs it, escalates at the installed threshold."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    project = tmp_path / "project"
    project.mkdir()
    done = reflect(
        "hook",
        "install",
        "--local",
        "--project-dir",
        str(project),
        "--escalation-threshold",
        "5",
        "--only",
        "escalation",
    )
    assert done.returncode == 0, done.stderr
    settings = read_settings(project / ".claude" / "settings.local.json")
    found = {h.spec.event: h for h in installed_hooks(settings, IN_LOOP_SPECS)}
    assert set(found) == {"PostToolUse", "PostToolUseFailure", "UserPromptSubmit"}
    assert set(settings["hooks"]) == set(found)  # --only escalation: nothing else
    command = found["PostToolUseFailure"].command
    assert command.endswith("--only escalation --escalation-threshold 5")
    assert found["PostToolUse"].timeout == 10
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFLECTION_")}
    env.update(CLAUDE_PROJECT_DIR=str(project), REFLECTION_STATE_DIR=str(tmp_path / "state"))
    outs = []
    for _ in range(5):
        event = failure("go test ./...", "Exit code 1\n--- FAIL: TestParse (0.00s)")
        out = subprocess.run(
            ["/bin/sh", "-c", command],
            input=json.dumps(event),
            text=True,
            capture_output=True,
            env=env,
            cwd=project,
            timeout=30,
        )
        assert out.returncode == 0, out.stderr
        outs.append(out.stdout)
    assert [bool(o) for o in outs] == [False] * 4 + [True]
    assert "[ATTEMPT: 5]" in json.loads(outs[-1])["hookSpecificOutput"]["additionalContext"]


def test_parallel_failures_count_once_each(tmp_path: Path) -> None:
    """Claude Code runs the hooks of parallel tool calls at once: 8 concurrent failures of one
    signature fire exactly twice (at 4 and 8), none lost to a race."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFLECTION_")}
    env["REFLECTION_STATE_DIR"] = str(tmp_path)
    procs = []
    for _ in range(8):
        proc = subprocess.Popen(
            COMMAND,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        procs.append(proc)
    for proc in procs:  # every process has its event before any is waited for
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(failure("cargo test", "Exit code 101")))
        proc.stdin.close()
    outs = []
    for proc in procs:
        assert proc.stdout is not None and proc.stderr is not None
        proc.wait(timeout=60)
        out, err = proc.stdout.read(), proc.stderr.read()
        assert proc.returncode == 0, err
        outs.append(out)
    attempts = sorted(
        parse_escalations(json.loads(o)["hookSpecificOutput"]["additionalContext"])[0].attempt
        for o in outs
        if o
    )
    assert attempts == [4, 8]


def test_a_traceback_behind_exit_zero_counts_live(tmp_path: Path) -> None:
    """``python app.py | tail -3`` exits 0; the text in ``tool_response`` shows the failure."""
    shown = {"stdout": "  File \"app.py\", line 9, in main\nKeyError: 'user'\n", "stderr": ""}
    events = [
        {**success("Bash", {"command": "python app.py | tail -3"}), "tool_response": shown}
        for _ in range(4)
    ]
    outs = outputs(events, tmp_path)
    assert [bool(out) for out in outs] == [False, False, False, True]
    (block,) = parse_escalations(json.loads(outs[-1])["hookSpecificOutput"]["additionalContext"])
    assert block.first("error_signature") == "KeyError: 'user'"


def _hook_events(path: Path) -> list[dict[str, Any]]:
    """A transcript's tool calls as the hook events Claude Code sends for them."""
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    results: dict[str, tuple[dict[str, Any], Any]] = {}
    for record in records:
        content = (record.get("message") or {}).get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                results[block["tool_use_id"]] = (block, record.get("toolUseResult"))
    events = []
    for record in records:
        content = (record.get("message") or {}).get("content")
        for block in content if isinstance(content, list) else []:
            if not (isinstance(block, dict) and block.get("type") == "tool_use"):
                continue
            result, response = results.get(block["id"], ({}, None))
            text = result.get("content")
            text = (
                text
                if isinstance(text, str)
                else "\n".join(b.get("text", "") for b in text or [] if isinstance(b, dict))
            )
            event = {
                "session_id": "replay",
                "tool_name": block["name"],
                "tool_input": block.get("input") or {},
                "tool_use_id": block["id"],
            }
            if result.get("is_error"):
                event.update(hook_event_name="PostToolUseFailure", error=text)
            else:
                event.update(hook_event_name="PostToolUse", tool_response=response)
            events.append(event)
    return events


@pytest.mark.shared
@pytest.mark.slow
def test_real_transcripts_read_the_same_live_and_in_replay(
    shared_dir: Path, tmp_path: Path
) -> None:
    """Each call of the five real transcripts, sent to the real hook as Claude Code sends it,
    is read (kind and cause, from the hook's state file) exactly as the replay reads it."""
    from agent_reflection.hooks.paths import session_key
    from agent_reflection.in_loop import loop_detector
    from agent_reflection.in_loop.loop_replay import call_text, read_transcript

    paths = sorted((shared_dir / "data" / "claude-code").glob("*.transcript.jsonl"))
    assert len(paths) == 5
    calls = 0
    for path in paths:
        state_dir = tmp_path / path.stem
        events = _hook_events(path)
        session = read_transcript(path)
        assert len(events) == len(session.calls)
        replay_state = loop_detector.fresh_state()
        state_file = state_dir / f"{session_key('replay')}.json"
        for event, call in zip(events, session.calls, strict=True):
            done = run(event, state_dir)
            assert done.returncode == 0, done.stderr
            live = json.loads(state_file.read_text())["escalation"]["last"]
            loop_detector.observe(
                replay_state,
                tool=call.tool,
                tool_input=call.tool_input,
                failed=call.failed,
                output=call_text(call),
            )
            assert live == replay_state["last"], (path.name, call.step)
            assert done.stdout == ""  # no transcript repeats a failure: nothing escalates
            calls += 1
    assert calls == sum(len(read_transcript(p).calls) for p in paths)
