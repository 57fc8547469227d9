"""Hooks never hold up or fail the session (issue 34, items 7 and 10): a stdin that never
closes is given up after the read deadline, a reader that went away (broken pipe) still means
exit 0, and a relative REFLECTION_DIR cannot lead out of the work tree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_reflection.hooks._entry import STDIN_DEADLINE_SECONDS
from conftest import run_git
from hook_harness import hook_command, hook_env, payload, run_hook, sidecars

pytestmark = pytest.mark.adversarial

HOOKS = {
    "stop": "reflect-stop-hook",
    "in-loop": "reflect-in-loop-hook",
    "subagent-stop": "reflect-subagent-stop-hook",
    "session-start": "reflect-session-start-hook",
}


def script(name: str) -> list[str]:
    path = Path(sys.executable).with_name(name)
    if not path.exists():
        pytest.skip(f"{name} is not installed in this environment")
    return [str(path)]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    run_git(path, "init", "-q", "-b", "main")
    run_git(path, "commit", "-q", "--allow-empty", "-m", "init")
    return path


@pytest.mark.slow
def test_a_stdin_that_never_closes_is_given_up(repo: Path, tmp_path: Path) -> None:
    """Each hook, all four at once (each waits out its own deadline; together they wait once)."""
    env = hook_env(tmp_path / "home", REFLECTION_MODE="solo")
    started = time.monotonic()
    procs = {
        name: subprocess.Popen(
            script(HOOKS[name]),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=repo,
            env=env,
        )
        for name in sorted(HOOKS)
    }
    for proc in procs.values():
        assert proc.stdin is not None
        proc.stdin.write(b'{"session_id": "s", ')  # half an event, and the pipe stays open
        proc.stdin.flush()
    ended: dict[str, tuple[int, bytes, bytes, float]] = {}
    give_up = started + STDIN_DEADLINE_SECONDS + 30
    try:
        while len(ended) < len(procs) and time.monotonic() < give_up:
            for name, proc in procs.items():  # each hook's own exit time, not the test's turn
                if name not in ended and proc.poll() is not None:
                    waited = time.monotonic() - started
                    out, err = proc.communicate()  # stdin still open: the hook has exited
                    ended[name] = (proc.returncode, out, err, waited)
            time.sleep(0.02)
        late = sorted(set(procs) - set(ended))
        if late:
            pytest.fail(f"{', '.join(late)} waited on stdin past the deadline")
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
            proc.wait()
    for name, (returncode, out, err, waited) in ended.items():
        assert (name, returncode, out) == (name, 0, b"")
        assert waited >= STDIN_DEADLINE_SECONDS, name
        assert b"did not end within" in err, name


def test_a_reader_that_went_away_still_means_exit_0(repo: Path, tmp_path: Path) -> None:
    """Ask mode writes a block to stdout; the reader closed its end first (a broken pipe)."""
    env = hook_env(tmp_path / "home", REFLECTION_MODE="solo", REFLECTION_ASK="1")
    read_end, write_end = os.pipe()
    os.close(read_end)
    done = subprocess.run(
        hook_command(),
        input=json.dumps(payload(repo)).encode(),
        stdout=write_end,
        stderr=subprocess.PIPE,
        cwd=repo,
        env=env,
        timeout=60,
        check=False,
    )
    os.close(write_end)
    assert done.returncode == 0, done.stderr
    assert b"BrokenPipeError" in done.stderr  # said, not raised


def test_a_relative_reflection_dir_cannot_leave_the_work_tree(repo: Path, tmp_path: Path) -> None:
    env = hook_env(tmp_path / "home", REFLECTION_MODE="solo", REFLECTION_DIR="../escaped")
    run = run_hook(payload(repo), env, repo)
    assert run.returncode == 0 and run.stdout == b""
    assert not (tmp_path / "escaped").exists()
    assert len(sidecars(repo / ".reflection" / "sidecars")) == 1
    assert "REFLECTION_DIR=../escaped leads out of the work tree" in run.stderr
    # inside the work tree it is honoured
    env["REFLECTION_DIR"] = "notes/sidecars"
    assert run_hook(payload(repo, "s-2"), env, repo).returncode == 0
    assert len(sidecars(repo / "notes" / "sidecars")) == 1
