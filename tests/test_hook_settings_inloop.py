"""``reflect hook install`` registers the in-loop hooks; the installed commands really run.

Installs into a scratch project, then replays a real transcript's prompts and tool calls
through the exact command lines written to ``.claude/settings.json`` (run by a shell, with
``$CLAUDE_PROJECT_DIR`` set, as Claude Code does).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agent_reflection.cli._groups import cli, register_all_commands
from agent_reflection.hooks.settings import (
    DEFAULT_SPECS,
    IN_LOOP_SPECS,
    SESSION_START_HOOK,
    STOP_HOOK,
    SUBAGENT_STOP_HOOK,
    installed_hooks,
    read_settings,
)
from test_replay_cadence import events


@pytest.fixture(autouse=True)
def _backups_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings backups go to $XDG_STATE_HOME: keep them in this test's folder."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))


def invoke(*args: str) -> Any:
    register_all_commands()
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def handlers(settings: dict[str, Any], event: str) -> list[tuple[str | None, dict[str, Any]]]:
    return [(g.get("matcher"), h) for g in settings["hooks"].get(event, []) for h in g["hooks"]]


def test_install_registers_in_loop_hooks_idempotently(tmp_path: Path) -> None:
    assert invoke("hook", "install", "--project-dir", str(tmp_path)).exit_code == 0
    path = tmp_path / ".claude" / "settings.json"
    settings = read_settings(path)
    found = {h.spec: h for h in installed_hooks(settings, DEFAULT_SPECS)}
    assert set(found) == {SESSION_START_HOOK, STOP_HOOK, SUBAGENT_STOP_HOOK, *IN_LOOP_SPECS}
    assert [s.event for s in IN_LOOP_SPECS] == [
        "PostToolUse",
        "PostToolUseFailure",
        "UserPromptSubmit",
    ]
    # The session-start record goes with the Stop hook: same mode, no matcher (every source).
    assert found[SESSION_START_HOOK].command.endswith("--mode solo")
    assert [m for m, _ in handlers(settings, "SessionStart")] == [None]
    assert all(found[spec].timeout == 10 for spec in IN_LOOP_SPECS)
    assert found[SUBAGENT_STOP_HOOK].timeout == 20
    # both parts in one process: no --only, no --mode
    assert all(found[spec].command.endswith("reflect-in-loop-hook") for spec in IN_LOOP_SPECS)
    [(matcher, _)] = handlers(settings, "SubagentStop")
    assert matcher == "reflection-unblocker"
    # one in-loop hook per event (the cadence and the escalation part), no matcher
    for event in ("PostToolUse", "PostToolUseFailure", "UserPromptSubmit"):
        assert [m for m, _ in handlers(settings, event)] == [None]
    before = path.read_text()
    again = invoke("hook", "install", "--project-dir", str(tmp_path))
    assert "nothing changed" in again.output and path.read_text() == before
    assert invoke("hook", "uninstall", "--project-dir", str(tmp_path)).exit_code == 0
    assert installed_hooks(read_settings(path), DEFAULT_SPECS) == []


def test_timeout_and_mode_stay_with_the_stop_hook(tmp_path: Path) -> None:
    invoke(
        "hook",
        "install",
        "--project-dir",
        str(tmp_path),
        "--timeout",
        "45",
        "--reflection-cadence",
        "3",
    )
    found = {
        h.spec: h
        for h in installed_hooks(
            read_settings(tmp_path / ".claude" / "settings.json"), DEFAULT_SPECS
        )
    }
    stop = next(h for s, h in found.items() if s.event == "Stop")
    assert stop.timeout == 45 and stop.command.endswith("--mode solo")
    for spec in IN_LOOP_SPECS:
        assert found[spec].command.endswith("reflect-in-loop-hook --reflection-cadence 3")
    assert "--reflection-cadence" not in found[SUBAGENT_STOP_HOOK].command


EVENTS = ("PostToolUse", "PostToolUseFailure", "UserPromptSubmit")


def earlier_install(project: Path) -> Path:
    """A project's settings as an earlier version wrote them: two in-loop commands per event,
    beside a teammate's own PostToolUse hook."""
    path = project / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    venv = '"$CLAUDE_PROJECT_DIR"/.venv/bin'
    hooks: dict[str, Any] = {
        event: [
            {"hooks": [{"type": "command", "command": f"{venv}/reflect-cadence-hook"}]},
            {
                "hooks": [
                    {
                        "type": "command",
                        "command": f"{venv}/reflect-escalation-hook --escalation-threshold 5",
                        "timeout": 10,
                    }
                ]
            },
        ]
        for event in EVENTS
    }
    hooks["PostToolUse"].insert(
        0, {"matcher": "Edit", "hooks": [{"type": "command", "command": "fmt"}]}
    )
    path.write_text(json.dumps({"hooks": hooks}))
    return path


def test_install_over_an_earlier_install_replaces_its_two_commands(tmp_path: Path) -> None:
    path = earlier_install(tmp_path)
    status = invoke("hook", "status", "--project-dir", str(tmp_path))
    assert status.output.count("an earlier version's cadence hook") == 3
    assert status.output.count("an earlier version's escalation hook") == 3
    result = invoke("hook", "install", "--project-dir", str(tmp_path), "--only", "cadence")
    assert result.exit_code == 0, result.output
    settings = read_settings(path)
    for event in EVENTS:
        commands = [h["command"] for _, h in handlers(settings, event)]
        # one process per event; --only cadence kept the escalation part and its threshold
        mine = [c for c in commands if c != "fmt"]
        assert len(mine) == 1 and mine[0].endswith("reflect-in-loop-hook --escalation-threshold 5")
    assert [m for m, _ in handlers(settings, "PostToolUse")] == ["Edit", None]  # theirs kept
    assert "earlier version" not in invoke("hook", "status", "--project-dir", str(tmp_path)).output


def test_uninstall_removes_an_earlier_install_and_nothing_else(tmp_path: Path) -> None:
    path = earlier_install(tmp_path)
    result = invoke("hook", "uninstall", "--project-dir", str(tmp_path))
    assert result.exit_code == 0 and "Removed 6 reflection hook(s)" in result.output
    assert read_settings(path) == {
        "hooks": {
            "PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "fmt"}]}]
        }
    }


def test_only_installs_one_part_and_keeps_the_other(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"

    def in_loop_commands() -> set[str]:
        return {h.command for h in installed_hooks(read_settings(path), IN_LOOP_SPECS)}

    invoke("hook", "install", "--project-dir", str(tmp_path), "--only", "escalation")
    [command] = in_loop_commands()
    assert command.endswith("reflect-in-loop-hook --only escalation")
    assert len(installed_hooks(read_settings(path), IN_LOOP_SPECS)) == 3
    invoke(
        "hook",
        "install",
        "--project-dir",
        str(tmp_path),
        "--only",
        "cadence",
        "--reflection-cadence",
        "4",
    )
    [command] = in_loop_commands()
    assert command.endswith("reflect-in-loop-hook --reflection-cadence 4")  # both parts now
    invoke("hook", "install", "--project-dir", str(tmp_path), "--only", "escalation")
    [command] = in_loop_commands()  # the cadence part keeps its option
    assert command.endswith("reflect-in-loop-hook --reflection-cadence 4")
    invoke("hook", "install", "--project-dir", str(tmp_path))  # all: only what is given now
    [command] = in_loop_commands()
    assert command.endswith("reflect-in-loop-hook")


@pytest.mark.shared
def test_installed_commands_replay_a_real_transcript(shared_dir: Path, tmp_path: Path) -> None:
    project = tmp_path / "scratch"
    project.mkdir()
    invoke("hook", "install", "--project-dir", str(project), "--reflection-cadence", "6")
    settings = read_settings(project / ".claude" / "settings.json")
    [tool_hook] = [h for _, h in handlers(settings, "PostToolUse") if "in-loop" in h["command"]]
    [prompt_hook] = [
        h for _, h in handlers(settings, "UserPromptSubmit") if "in-loop" in h["command"]
    ]
    env = {k: v for k, v in os.environ.items() if k != "REFLECTION_CADENCE"}
    env.update(CLAUDE_PROJECT_DIR=str(project), REFLECTION_STATE_DIR=str(tmp_path / "state"))
    # The committed settings name the commands, found on PATH (an activated venv).
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    path = shared_dir / "data" / "claude-code" / "python-to-rust-port.transcript.jsonl"
    fired, calls = [], 0
    for event in events(path):
        hook = tool_hook if event["hook_event_name"] == "PostToolUse" else prompt_hook
        out = subprocess.run(
            ["/bin/sh", "-c", hook["command"]],
            input=json.dumps(event),
            capture_output=True,
            text=True,
            env=env,
            timeout=30,
            cwd=project,
        )
        assert out.returncode == 0, out.stderr
        if event["hook_event_name"] == "PostToolUse":
            calls += 1
            if out.stdout:
                fired.append(calls)
    assert calls > 6
    assert fired == list(range(6, calls + 1, 6))


def test_the_installer_reads_a_command_as_the_hook_does() -> None:
    """The installer keeps a part's option from the command the hook runs: both read it with
    one parser, so a value given twice (``--opt=V`` then ``--opt V``) is the same last one."""
    from agent_reflection.hooks.in_loop import parse_args
    from agent_reflection.hooks.settings import in_loop_parts

    words = ["reflect-in-loop-hook", "--escalation-threshold=3", "--escalation-threshold", "5"]
    args = parse_args(words, ("cadence", "escalation"), lambda _: None)
    assert args.values == {"escalation": "5"}
    group = {"hooks": [{"type": "command", "command": " ".join(words)}]}
    settings = {"hooks": {spec.event: [group] for spec in IN_LOOP_SPECS}}
    assert in_loop_parts(settings) == {"cadence": (), "escalation": ("--escalation-threshold", "5")}
