"""The in-loop hook's cadence part, run as the real console script with JSON on stdin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agent_reflection.hooks.paths import STALE_AFTER_SECONDS, remove_stale, session_key
from agent_reflection.in_loop.cadence import CHECKPOINT_FLAG

HOOK = str(Path(sys.executable).parent / "reflect-in-loop-hook")


def hook_env(state: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("REFLECTION_CADENCE",)}
    env.pop("CLAUDE_PROJECT_DIR", None)
    env["REFLECTION_STATE_DIR"] = str(state)
    env.update(extra)
    return env


def run_hook(
    event: dict[str, Any] | str, env: dict[str, str], *args: str
) -> subprocess.CompletedProcess[str]:
    data = event if isinstance(event, str) else json.dumps(event)
    return subprocess.run(
        [HOOK, *args], input=data, capture_output=True, text=True, env=env, timeout=30
    )


def post(session: str, n: int, cwd: Path) -> dict[str, Any]:
    return {
        "hook_event_name": "PostToolUse",
        "session_id": session,
        "cwd": str(cwd),
        "tool_name": "Bash",
        "tool_input": {"command": f"echo {n}"},
        "tool_response": {"stdout": str(n)},
        "tool_use_id": f"toolu_{n}",
    }


def prompt(session: str, text: str, cwd: Path) -> dict[str, Any]:
    return {
        "hook_event_name": "UserPromptSubmit",
        "session_id": session,
        "cwd": str(cwd),
        "prompt": text,
    }


def cadence_state(path: Path) -> dict[str, Any]:
    """The cadence part of a session's state file."""
    state = json.loads(path.read_text())
    assert state["version"] == 2
    return state["cadence"]  # type: ignore[no-any-return]


def fired_at(outputs: list[subprocess.CompletedProcess[str]]) -> list[int]:
    return [i + 1 for i, out in enumerate(outputs) if out.stdout.strip()]


def test_fires_every_seven_calls_by_default_with_exact_output(tmp_path: Path) -> None:
    env = hook_env(tmp_path / "state")
    assert run_hook(prompt("s1", "fix the auth token refresh loop", tmp_path), env).stdout == ""
    outs = [run_hook(post("s1", n, tmp_path), env) for n in range(1, 16)]
    assert all(o.returncode == 0 for o in outs)
    assert fired_at(outs) == [7, 14]
    doc = json.loads(outs[6].stdout)  # exactly one JSON document, nothing else
    assert list(doc) == ["hookSpecificOutput"]
    spec = doc["hookSpecificOutput"]
    assert spec["hookEventName"] == "PostToolUse"
    context = spec["additionalContext"]
    assert context.startswith(CHECKPOINT_FLAG)
    assert "fix the auth token refresh loop" in context
    assert "7 steps" in context
    assert outs[6].stdout.count("\n") == 1


def test_new_prompt_resets_count_marker_and_task(tmp_path: Path) -> None:
    env = hook_env(tmp_path / "state")
    run_hook(prompt("s1", "first task", tmp_path), env)
    first = [run_hook(post("s1", n, tmp_path), env) for n in range(1, 6)]
    run_hook(prompt("s1", "second task", tmp_path), env)
    second = [run_hook(post("s1", n, tmp_path), env) for n in range(6, 14)]
    assert fired_at(first) == []
    assert fired_at(second) == [7]
    context = json.loads(second[6].stdout)["hookSpecificOutput"]["additionalContext"]
    assert "second task" in context and "first task" not in context


def test_without_a_prompt_event_the_goal_is_asked_for(tmp_path: Path) -> None:
    env = hook_env(tmp_path / "state")
    outs = [run_hook(post("s2", n, tmp_path), env) for n in range(1, 8)]
    context = json.loads(outs[-1].stdout)["hookSpecificOutput"]["additionalContext"]
    assert "ORIGINAL TASK" not in context
    assert "Restate the original goal" in context


def test_cli_flag_env_and_config_file(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".agent-reflection.toml").write_text("reflection_cadence = 3\n")
    env = hook_env(tmp_path / "state")
    outs = [run_hook(post("cfg", n, project), env) for n in range(1, 7)]
    assert fired_at(outs) == [3, 6]
    env_outs = [
        run_hook(post("env", n, project), {**env, "REFLECTION_CADENCE": "2"}) for n in range(1, 5)
    ]
    assert fired_at(env_outs) == [2, 4]
    cli_outs = [
        run_hook(
            post("cli", n, project), {**env, "REFLECTION_CADENCE": "2"}, "--reflection-cadence", "4"
        )
        for n in range(1, 9)
    ]
    assert fired_at(cli_outs) == [4, 8]


def test_config_change_is_picked_up_mid_session(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    conf = project / ".agent-reflection.toml"
    conf.write_text("reflection_cadence = 0\n")
    env = hook_env(tmp_path / "state")
    assert fired_at([run_hook(post("chg", n, project), env) for n in range(1, 5)]) == []
    conf.write_text("reflection_cadence = 5\n")  # new mtime: the cache key changes
    outs = [run_hook(post("chg", n, project), env) for n in range(5, 7)]
    assert fired_at(outs) == [1]  # call 5 of the session: 5 since marker 0


def test_project_dir_env_wins_over_cwd(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[tool.agent-reflection]\nreflection_cadence = 2\n")
    env = hook_env(tmp_path / "state", CLAUDE_PROJECT_DIR=str(project))
    outs = [run_hook(post("pd", n, tmp_path), env) for n in range(1, 5)]
    assert fired_at(outs) == [2, 4]


def test_failed_calls_count_and_answer_with_their_own_event(tmp_path: Path) -> None:
    env = hook_env(tmp_path / "state", REFLECTION_CADENCE="3")
    failed = {
        **post("fail", 2, tmp_path),
        "hook_event_name": "PostToolUseFailure",
        "error": "exit 1",
        "is_interrupt": False,
    }
    failed.pop("tool_response")
    outs = [
        run_hook(post("fail", 1, tmp_path), env),
        run_hook(failed, env),
        run_hook({**failed, "tool_use_id": "toolu_3"}, env),
    ]
    assert fired_at(outs) == [3]
    assert json.loads(outs[2].stdout)["hookSpecificOutput"]["hookEventName"] == (
        "PostToolUseFailure"
    )
    # a call reported by both events counts once
    again = run_hook({**post("fail", 2, tmp_path)}, env)
    assert again.stdout == ""
    assert cadence_state(tmp_path / "state" / "fail.json")["count"] == 3


def test_duplicate_tool_use_id_counts_once(tmp_path: Path) -> None:
    env = hook_env(tmp_path / "state", REFLECTION_CADENCE="3")
    outs = []
    for n in (1, 1, 2, 2, 3):
        outs.append(run_hook(post("dup", n, tmp_path), env))
    assert fired_at(outs) == [5]
    assert cadence_state(tmp_path / "state" / "dup.json")["count"] == 3


def test_parallel_tool_hooks_count_every_call_once(tmp_path: Path) -> None:
    env = hook_env(tmp_path / "state", REFLECTION_CADENCE="5")
    procs = [
        subprocess.Popen(
            [HOOK],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(20)
    ]
    outs = [
        p.communicate(json.dumps(post("par", n, tmp_path)), timeout=60)[0]
        for n, p in enumerate(procs)
    ]
    assert all(p.returncode == 0 for p in procs)
    fired = [o for o in outs if o.strip()]
    assert len(fired) == 4
    deltas = sorted(
        json.loads(o)["hookSpecificOutput"]["additionalContext"].split("\n")[1] for o in fired
    )
    assert all(d.startswith("5 tool calls") for d in deltas)
    state = cadence_state(tmp_path / "state" / "par.json")
    assert (state["count"], state["last"], state["fired"]) == (20, 20, [5, 10, 15, 20])
    assert not list((tmp_path / "state").glob("*.tmp"))


@pytest.mark.parametrize(
    "stdin",
    [
        "",
        "not json",
        "[1, 2]",
        '{"hook_event_name": "PostToolUse", "session_id": 5}',
        '{"hook_event_name": "Stop", "session_id": "x"}',
    ],
)
def test_bad_or_foreign_input_exits_zero_silently(tmp_path: Path, stdin: str) -> None:
    out = run_hook(stdin, hook_env(tmp_path / "state", REFLECTION_CADENCE="1"))
    assert out.returncode == 0
    assert out.stdout == "" or "hookSpecificOutput" in json.loads(out.stdout)


def test_numeric_session_id_still_counts(tmp_path: Path) -> None:
    env = hook_env(tmp_path / "state", REFLECTION_CADENCE="1")
    out = run_hook('{"hook_event_name": "PostToolUse", "session_id": 5}', env)
    assert json.loads(out.stdout)["hookSpecificOutput"]["hookEventName"] == "PostToolUse"


def test_unwritable_state_dir_exits_zero_with_empty_stdout(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    out = run_hook(post("s", 1, tmp_path), hook_env(blocker / "state", REFLECTION_CADENCE="1"))
    assert (out.returncode, out.stdout) == (0, "")
    assert "reflect-in-loop-hook" in out.stderr


def test_corrupt_state_file_starts_over(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "bad.json").write_text('{"version": 2, "cadence": {"count": -4, "last": "x"}}')
    outs = [
        run_hook(post("bad", n, tmp_path), hook_env(state, REFLECTION_CADENCE="2")) for n in (1, 2)
    ]
    assert fired_at(outs) == [2]


def test_bad_config_falls_back_to_default_and_says_why(tmp_path: Path) -> None:
    (tmp_path / ".agent-reflection.toml").write_text("reflection_cadence = -3\n")
    env = hook_env(tmp_path / "state")
    outs = [run_hook(post("badcfg", n, tmp_path), env) for n in range(1, 8)]
    assert fired_at(outs) == [7]
    assert "reflection_cadence" in outs[0].stderr


@pytest.mark.parametrize("sid", ["../../etc/passwd", "a/b", "", "ünï", "x" * 300])
def test_session_ids_are_sanitised(tmp_path: Path, sid: str) -> None:
    state = tmp_path / "state"
    run_hook(post(sid, 1, tmp_path), hook_env(state))
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert files and all(p.parent == state for p in files)
    assert session_key(sid) != session_key(sid + "_")
    assert len(session_key(sid)) <= 90


def test_stale_state_files_are_removed_on_new_prompt(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    old = time.time() - STALE_AFTER_SECONDS - 60
    for name in ("old.json", "old.lock", "old.json.123.tmp"):
        (state / name).write_text("{}")
        os.utime(state / name, (old, old))
    (state / "recent.json").write_text("{}")
    (state / "notes.txt").write_text("keep")
    os.utime(state / "notes.txt", (old, old))
    run_hook(prompt("new", "task", tmp_path), hook_env(state))
    assert sorted(p.name for p in state.iterdir()) == [
        "new.json",
        "new.lock",
        "notes.txt",
        "recent.json",
    ]


def test_stale_files_are_removed_on_a_new_sessions_first_call(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    old = time.time() - STALE_AFTER_SECONDS - 60
    (state / "gone.json").write_text("{}")
    os.utime(state / "gone.json", (old, old))
    env = hook_env(state)
    run_hook(post("fresh", 1, tmp_path), env)
    assert not (state / "gone.json").exists()
    (state / "late.json").write_text("{}")
    os.utime(state / "late.json", (old, old))
    run_hook(post("fresh", 2, tmp_path), env)  # not the first call: no scan
    assert (state / "late.json").exists()


def test_remove_stale_keeps_the_current_session(tmp_path: Path) -> None:
    (tmp_path / "me.json").write_text("{}")
    old = time.time() - STALE_AFTER_SECONDS - 1
    os.utime(tmp_path / "me.json", (old, old))
    assert remove_stale(str(tmp_path), keep="me") == 0
    assert remove_stale(str(tmp_path)) == 1


HEAVY = ("pandas", "numpy", "duckdb", "click", "jsonschema", "scipy", "sklearn", "tqdm", "yaml")


def imported_modules(stderr: str) -> set[str]:
    return {
        line.rsplit("|", 1)[1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def test_hook_imports_only_the_standard_library(tmp_path: Path) -> None:
    env = hook_env(tmp_path / "state", REFLECTION_CADENCE="1", PYTHONPROFILEIMPORTTIME="1")
    out = run_hook(post("imp", 1, tmp_path), env)
    assert "hookSpecificOutput" in out.stdout
    imported = imported_modules(out.stderr)
    assert "agent_reflection.hooks.in_loop" in imported  # the profile recorded the hook
    assert not {n.split(".")[0] for n in imported} & set(HEAVY)
    ours = {n for n in imported if n.startswith("agent_reflection")}
    assert ours == {
        "agent_reflection",
        "agent_reflection.config",
        "agent_reflection.errors",
        "agent_reflection.hooks",
        "agent_reflection.hooks._entry",
        "agent_reflection.hooks.in_loop",
        "agent_reflection.hooks.paths",
        "agent_reflection.in_loop",
        "agent_reflection.in_loop.cadence",
        "agent_reflection.in_loop.error_signature",
        "agent_reflection.in_loop.loop_detector",
    }
    # start-up cost: config parsing (tomllib) only when a project file exists; no typing layer
    assert not {"tomllib", "dataclasses", "pathlib", "typing", "inspect"} & imported
