"""Reliability suite, hooks: all three hooks fuzzed as real subprocesses (issue 13, items 7, 8).

Each hook (Stop, the in-loop PostToolUse/UserPromptSubmit hook, SubagentStop) gets its event
JSON on stdin the way Claude Code sends it, plus hostile inputs: special files where a file is
expected (a FIFO with no writer, ``/dev/zero``, ``/dev/urandom``, a folder), symlinks planted
where the hook writes, 10 MB fields, bad JSON, wrong types, stdin that never ends. Every run must

- exit 0 with nothing on stdout but what the hook documents, within a bound far above a normal
  run (30 s: the old SubagentStop hook never returned on a FIFO or /dev/zero), and
- write nothing outside the folders it was given: the whole test folder is snapshotted (paths,
  sizes, mtimes, symlinks not followed) before and after, and any difference outside the
  hook's own output folder fails.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conftest import run_git
from hook_harness import hook_env

HUGE = 10_000_000
#: Far above a normal run (~0.1 s); the old SubagentStop hook never returned at all.
RUN_BOUND_SECONDS = 30

pytestmark = pytest.mark.slow


@dataclass
class World:
    """A test folder: a git repo, a victim folder, HOME, the state folder, special files."""

    root: Path
    repo: Path
    victim: Path
    home: Path
    state: Path
    fifo: Path
    env: dict[str, str] = field(default_factory=dict)


@pytest.fixture
def world(tmp_path: Path) -> World:
    repo = tmp_path / "repo"
    repo.mkdir()
    run_git(repo, "init", "-q", "-b", "main")
    (repo / "app.py").write_text("x = 1\n")
    run_git(repo, "add", "app.py")
    run_git(repo, "commit", "-qm", "initial")
    (repo / "app.py").write_text("x = 2\n")
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("precious\n")
    home = tmp_path / "home"
    home.mkdir()
    fifo = tmp_path / "a.fifo"
    os.mkfifo(fifo)
    state = tmp_path / "state"
    env = hook_env(
        home,
        PYTHONDONTWRITEBYTECODE="1",
        GIT_CEILING_DIRECTORIES=str(tmp_path),
        REFLECTION_STATE_DIR=str(state),
        CLAUDE_PROJECT_DIR=str(repo),
        XDG_CACHE_HOME=str(home / ".cache"),
    )
    return World(tmp_path, repo, victim, home, state, fifo, env)


def snapshot(root: Path) -> dict[str, tuple[str, int, int]]:
    found: dict[str, tuple[str, int, int]] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            st = os.lstat(path)
            kind = "link:" + os.readlink(path) if os.path.islink(path) else oct(st.st_mode)
            if stat.S_ISDIR(st.st_mode):  # a folder's mtime moves when an entry is added
                found[os.path.relpath(path, root)] = (kind, 0, 0)
            else:
                found[os.path.relpath(path, root)] = (kind, st.st_size, st.st_mtime_ns)
    return found


def changes_outside(
    before: dict[str, tuple[str, int, int]],
    after: dict[str, tuple[str, int, int]],
    allowed: tuple[str, ...],
) -> list[str]:
    changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    return sorted(
        p for p in changed if not any(p == a or p.startswith(a + os.sep) for a in allowed)
    )


@dataclass(frozen=True)
class Case:
    name: str
    #: (world) -> (stdin bytes or a path to use as stdin, extra env)
    build: Callable[[World], tuple[bytes | Path, dict[str, str]]]


def run(
    module: str, world: World, stdin: bytes | Path, env: dict[str, str], *args: str
) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-m", module, *args]
    full_env = {**world.env, **env}
    if isinstance(stdin, Path):
        with open(stdin, "rb") as handle:
            return subprocess.run(
                command,
                stdin=handle,
                env=full_env,
                cwd=world.repo,
                capture_output=True,
                timeout=RUN_BOUND_SECONDS,
                check=False,
            )
    return subprocess.run(
        command,
        input=stdin,
        env=full_env,
        cwd=world.repo,
        capture_output=True,
        timeout=RUN_BOUND_SECONDS,
        check=False,
    )


def js(event: dict[str, Any]) -> bytes:
    return json.dumps(event).encode()


def plant_link(at: Path, target: Path) -> None:
    at.parent.mkdir(parents=True, exist_ok=True)
    at.symlink_to(target)


# --- the Stop hook ---------------------------------------------------------------------------


def stop_event(world: World, **fields: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        "session_id": "sess-1",
        "cwd": str(world.repo),
        "transcript_path": str(world.repo / "t.jsonl"),
        "hook_event_name": "Stop",
        "stop_hook_active": False,
    }
    event.update(fields)
    return event


def _stop_outside(w: World) -> tuple[bytes, dict[str, str]]:
    outside = w.root / "outside"
    outside.mkdir()
    return js(stop_event(w, cwd=str(outside))), {}


def _stop_symlinked_out(w: World) -> tuple[bytes, dict[str, str]]:
    plant_link(w.repo / ".reflection", w.victim)
    return js(stop_event(w)), {}


def _stop_lock_link(w: World) -> tuple[bytes, dict[str, str]]:
    plant_link(w.repo / ".reflection" / "sidecars" / "sess-1.lock", w.victim / "precious.txt")
    return js(stop_event(w)), {}


STOP_CASES = [
    Case("plain", lambda w: (js(stop_event(w)), {})),
    Case("input-fifo", lambda w: (js(stop_event(w)), {"REFLECTION_INPUT": str(w.fifo)})),
    Case("input-dev-zero", lambda w: (js(stop_event(w)), {"REFLECTION_INPUT": "/dev/zero"})),
    Case("input-urandom", lambda w: (js(stop_event(w)), {"REFLECTION_INPUT": "/dev/urandom"})),
    Case("input-folder", lambda w: (js(stop_event(w)), {"REFLECTION_INPUT": str(w.victim)})),
    Case("risk-fifo", lambda w: (js(stop_event(w)), {"REFLECTION_RISK_TABLE": str(w.fifo)})),
    Case("risk-dev-zero", lambda w: (js(stop_event(w)), {"REFLECTION_RISK_TABLE": "/dev/zero"})),
    Case("stdin-dev-zero", lambda w: (Path("/dev/zero"), {})),
    Case("stdin-urandom-capped", lambda w: (os.urandom(1 << 20), {})),
    Case("cwd-fifo", lambda w: (js(stop_event(w, cwd=str(w.fifo))), {})),
    Case("cwd-dot-git", lambda w: (js(stop_event(w, cwd=str(w.repo / ".git"))), {})),
    Case("cwd-outside-repo", _stop_outside),
    Case("cwd-victim", lambda w: (js(stop_event(w, cwd=str(w.victim))), {})),
    Case("cwd-huge", lambda w: (js(stop_event(w, cwd="/" + "a" * HUGE)), {})),
    Case("session-huge", lambda w: (js(stop_event(w, session_id="é/" * (HUGE // 2))), {})),
    Case("session-traversal", lambda w: (js(stop_event(w, session_id="../../victim/x")), {})),
    Case("wrong-types", lambda w: (js(stop_event(w, session_id=[1], cwd={"a": 1})), {})),
    Case("bad-json", lambda w: (b'{"session_id": "s", "cwd": ', {})),
    Case("not-an-object", lambda w: (b"[1, 2, 3]", {})),
    Case("nested-deep", lambda w: (b"[" * 100_000 + b"]" * 100_000, {})),
    Case("symlinked-output", _stop_symlinked_out),
    Case("lock-symlink", _stop_lock_link),
    Case("reflection-dir-dot-git", lambda w: (js(stop_event(w)), {"REFLECTION_DIR": ".git/x"})),
]


@pytest.mark.parametrize("case", STOP_CASES, ids=lambda c: c.name)
def test_stop_hook_fuzz(world: World, case: Case) -> None:
    stdin, env = case.build(world)
    before = snapshot(world.root)
    done = run("agent_reflection.hooks.stop", world, stdin, {"REFLECTION_MODE": "solo", **env})
    assert (done.returncode, done.stdout) == (0, b""), done.stderr[-2000:]
    allowed = (os.path.join("repo", ".reflection", "sidecars"),)
    if case.name not in ("symlinked-output",):
        allowed += (os.path.join("repo", ".reflection"),)
    changed = changes_outside(before, snapshot(world.root), allowed)
    # and the hooks' state folder, for the parsed risk table only
    cache = os.path.join("state", "risk-table-")
    assert [p for p in changed if p != "state" and not p.startswith(cache)] == []
    assert (world.victim / "precious.txt").read_text() == "precious\n"


# --- the in-loop hook (PostToolUse, PostToolUseFailure, UserPromptSubmit) ---------------------


def tool_event(**fields: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        "hook_event_name": "PostToolUse",
        "session_id": "sess-1",
        "tool_name": "Bash",
        "tool_input": {"command": "true"},
        "tool_use_id": "toolu_1",
    }
    event.update(fields)
    return event


def _cadence_state_fifo(w: World) -> tuple[bytes, dict[str, str]]:
    w.state.mkdir()
    os.mkfifo(w.state / "sess-1.json")
    return js(tool_event()), {}


def _cadence_lock_fifo(w: World) -> tuple[bytes, dict[str, str]]:
    w.state.mkdir()
    os.mkfifo(w.state / "sess-1.lock")
    return js(tool_event()), {}


def _cadence_state_link(w: World) -> tuple[bytes, dict[str, str]]:
    plant_link(w.state / "sess-1.json", w.victim / "precious.txt")
    return js(tool_event()), {}


def _cadence_pyproject_fifo(w: World) -> tuple[bytes, dict[str, str]]:
    project = w.root / "project"
    project.mkdir()
    os.mkfifo(project / "pyproject.toml")
    return js(tool_event()), {"CLAUDE_PROJECT_DIR": str(project)}


IN_LOOP_CASES = [
    Case("plain", lambda w: (js(tool_event()), {})),
    Case("prompt", lambda w: (js({"hook_event_name": "UserPromptSubmit", "prompt": "x"}), {})),
    Case("session-huge", lambda w: (js(tool_event(session_id="/" * HUGE)), {})),
    Case("tool-use-id-huge", lambda w: (js(tool_event(tool_use_id="t" * HUGE)), {})),
    Case("cwd-huge", lambda w: (js(tool_event(cwd="a" * HUGE)), {"CLAUDE_PROJECT_DIR": ""})),
    Case(
        "prompt-huge",
        lambda w: (js({"hook_event_name": "UserPromptSubmit", "prompt": "p" * HUGE}), {}),
    ),
    Case("state-fifo", _cadence_state_fifo),
    Case("lock-fifo", _cadence_lock_fifo),
    Case("state-symlink", _cadence_state_link),
    Case("pyproject-fifo", _cadence_pyproject_fifo),
    Case("stdin-dev-zero", lambda w: (Path("/dev/zero"), {})),
    Case("bad-json", lambda w: (b'{"hook_event_name": "PostToolUse", ', {})),
    Case("wrong-types", lambda w: (js(tool_event(session_id={"x": 1}, tool_use_id=[1])), {})),
    Case("event-not-a-string", lambda w: (js(tool_event(hook_event_name=7)), {})),
    # the escalation part: a failed call's error and input as they should never come
    Case(
        "failure-error-huge",
        lambda w: (js(tool_event(hook_event_name="PostToolUseFailure", error="E" * HUGE)), {}),
    ),
    Case(
        "failure-command-huge",
        lambda w: (
            js(
                tool_event(
                    hook_event_name="PostToolUseFailure",
                    tool_input={"command": "x <<EOF\n" + "y\n" * (HUGE // 2)},
                )
            ),
            {},
        ),
    ),
    Case(
        "failure-wrong-types",
        lambda w: (
            js(
                tool_event(
                    hook_event_name="PostToolUseFailure",
                    error={"x": [1]},
                    tool_name=5,
                    tool_input=[],
                )
            ),
            {},
        ),
    ),
]


@pytest.mark.parametrize("case", IN_LOOP_CASES, ids=lambda c: c.name)
def test_in_loop_hook_fuzz(world: World, case: Case) -> None:
    stdin, env = case.build(world)
    before = snapshot(world.root)
    done = run("agent_reflection.hooks.in_loop", world, stdin, env)
    assert done.returncode == 0, done.stderr[-2000:]
    if done.stdout:  # a checkpoint: exactly one JSON document
        json.loads(done.stdout)
    assert changes_outside(before, snapshot(world.root), ("state",)) == []
    assert (world.victim / "precious.txt").read_text() == "precious\n"


# --- the SubagentStop hook -------------------------------------------------------------------


def subagent_event(**fields: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        "hook_event_name": "SubagentStop",
        "session_id": "sess-1",
        "agent_id": "agent-1",
        "agent_type": "reflection-unblocker",
    }
    event.update(fields)
    return event


def _subagent_transcript_link(w: World) -> tuple[bytes, dict[str, str]]:
    link = w.root / "transcript.jsonl"
    link.symlink_to(w.victim / "precious.txt")
    return js(subagent_event(agent_transcript_path=str(link))), {}


def _subagent_log_fifo(w: World) -> tuple[bytes, dict[str, str]]:
    w.state.mkdir()
    os.mkfifo(w.state / "reflection-agent.jsonl")
    return js(subagent_event(last_assistant_message="ESCALATION")), {}


def _subagent_log_link(w: World) -> tuple[bytes, dict[str, str]]:
    plant_link(w.state / "reflection-agent.jsonl", w.victim / "precious.txt")
    return js(subagent_event(last_assistant_message="ESCALATION")), {}


def _transcript_huge_line(w: World) -> tuple[bytes, dict[str, str]]:
    big = w.root / "big.jsonl"
    big.write_bytes(b"x" * (30 << 20))  # 30 MB, no newline: read only at the ends
    return js(subagent_event(agent_transcript_path=str(big))), {}


SUBAGENT_CASES = [
    Case("plain", lambda w: (js(subagent_event(last_assistant_message="ESCALATION")), {})),
    Case("transcript-fifo", lambda w: (js(subagent_event(agent_transcript_path=str(w.fifo))), {})),
    Case(
        "transcript-dev-zero", lambda w: (js(subagent_event(agent_transcript_path="/dev/zero")), {})
    ),
    Case(
        "transcript-urandom",
        lambda w: (js(subagent_event(agent_transcript_path="/dev/urandom")), {}),
    ),
    Case(
        "transcript-folder",
        lambda w: (js(subagent_event(agent_transcript_path=str(w.victim))), {}),
    ),
    Case("transcript-symlink", _subagent_transcript_link),
    Case("transcript-huge-line", _transcript_huge_line),
    Case("reply-huge", lambda w: (js(subagent_event(last_assistant_message="r" * HUGE)), {})),
    Case(
        "ids-huge", lambda w: (js(subagent_event(session_id="s" * HUGE, agent_id=["a"] * 1000)), {})
    ),
    Case("log-fifo", _subagent_log_fifo),
    Case("log-symlink", _subagent_log_link),
    Case("stdin-dev-zero", lambda w: (Path("/dev/zero"), {})),
    Case("bad-json", lambda w: (b'{"hook_event_name": "SubagentStop"', {})),
    Case(
        "wrong-types", lambda w: (js(subagent_event(agent_transcript_path=5, agent_type=[1])), {})
    ),
]


@pytest.mark.parametrize("case", SUBAGENT_CASES, ids=lambda c: c.name)
def test_subagent_stop_hook_fuzz(world: World, case: Case) -> None:
    stdin, env = case.build(world)
    before = snapshot(world.root)
    done = run("agent_reflection.hooks.subagent_stop", world, stdin, env)
    assert done.returncode == 0, done.stderr[-2000:]
    # nothing, or one block of an unreadable reply ("ESCALATION" alone keeps no contract)
    assert done.stdout == b"" or json.loads(done.stdout)["decision"] == "block"
    assert changes_outside(before, snapshot(world.root), ("state",)) == []
    assert (world.victim / "precious.txt").read_text() == "precious\n"
    log = world.state / "reflection-agent.jsonl"
    if log.is_file() and not log.is_symlink():
        for line in log.read_text().splitlines():
            record = json.loads(line)
            assert len(line) < 100_000, "a logged record is bounded"
            assert record["session_id"] is None or len(record["session_id"]) <= 256


def test_subagent_stop_special_transcript_is_reported(world: World) -> None:
    """Item 7: a FIFO transcript is refused at once (the old hook blocked on it for ever)."""
    event = js(subagent_event(agent_transcript_path=str(world.fifo)))
    done = run("agent_reflection.hooks.subagent_stop", world, event, {})
    assert done.returncode == 0
    assert b"not a regular file" in done.stderr
    [line] = (world.state / "reflection-agent.jsonl").read_text().splitlines()
    assert json.loads(line)["source"] == "none"


def test_in_loop_state_write_never_follows_a_planted_temp_link(tmp_path: Path) -> None:
    """The temporary file is created exclusively, without following a link planted at its name."""
    from agent_reflection.hooks.in_loop import read_state
    from agent_reflection.hooks.paths import write_json
    from agent_reflection.in_loop.cadence import fresh_state

    victim = tmp_path / "precious.txt"
    victim.write_text("precious\n")
    state_path = tmp_path / "sess-1.json"
    (tmp_path / f"sess-1.json.{os.getpid()}.tmp").symlink_to(victim)
    write_json(str(state_path), {"version": 2, "cadence": fresh_state("task")})
    assert victim.read_text() == "precious\n"
    assert read_state(str(state_path))["cadence"]["task"] == "task"
