"""The hooks' one entry wrapper (hooks/_entry.run_hook), run as Claude Code runs a hook: a real
Python process with the event on stdin, its exit status and both streams read."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import run_git
from hook_harness import hook_env, payload, run_hook


def run_entry(body: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """A process whose ``main`` is ``run_hook("demo-hook", body)``, ``body`` given as source."""
    code = textwrap.dedent(
        """
        import sys
        from agent_reflection.hooks._entry import read_stdin, run_hook

        def body(args):
        {body}

        run_hook("demo-hook", body, fault="nothing done: ")
        sys.stderr.write("after run_hook")
        """
    ).format(body=textwrap.indent(textwrap.dedent(body), "    "))
    return subprocess.run(
        [sys.executable, "-c", code, "--flag"],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_answer_goes_to_stdout_and_the_event_is_read() -> None:
    out = run_entry(
        """
        event = read_stdin("demo-hook")
        return "got " + event + " " + ",".join(args)
        """,
        stdin='{"hook_event_name": "X"}',
    )
    assert (out.returncode, out.stdout, out.stderr) == (
        0,
        'got {"hook_event_name": "X"} --flag',
        "",
    )


def test_a_fault_exits_zero_with_one_line_on_stderr_and_nothing_on_stdout() -> None:
    out = run_entry(
        """
        print("stray output")  # must not reach Claude Code's JSON parser
        raise KeyError("boom")
        """
    )
    assert (out.returncode, out.stdout) == (0, "")
    assert out.stderr == "stray output\ndemo-hook: nothing done: KeyError: 'boom'\n"


def test_even_sys_exit_in_the_body_exits_zero() -> None:
    out = run_entry("raise SystemExit(3)")
    assert (out.returncode, out.stdout) == (0, "")
    assert out.stderr == "demo-hook: nothing done: SystemExit: 3\n"


def test_the_process_ends_at_the_wrapper_with_every_stream_flushed() -> None:
    """``run_hook`` ends the process (no interpreter teardown: 4-8 ms a call): nothing after it
    runs, no exit handler either, and what the body left in a stream's buffer still arrives, a
    large answer whole."""
    out = run_entry(
        """
        import atexit
        atexit.register(lambda: sys.stderr.write("exit handler ran"))
        sys.stderr.write("no newline yet")  # stays in stderr's line buffer until flushed
        return "x" * 300_000  # more than a pipe holds at once
        """
    )
    assert out.returncode == 0
    assert out.stdout == "x" * 300_000
    assert out.stderr == "no newline yet"  # not the exit handler's text, nor sys.exit's


#: Each hook, run as Claude Code runs it, with ``end_process`` replaced by a check of what the
#: interpreter's teardown would have finished: exit handlers (``atexit``, which logging,
#: ``weakref.finalize`` and ``tempfile`` use) and threads still running.
_CHECKED = """
import atexit, sys
import agent_reflection.hooks._entry as entry
end = entry.end_process

def checked():
    threads = sys.modules["threading"].active_count() if "threading" in sys.modules else 1
    sys.stderr.write(f"\\nLEFT atexit={{atexit._ncallbacks()}} threads={{threads}}\\n")
    end()

entry.end_process = checked
from agent_reflection.hooks.{module} import main
main()
"""


@pytest.mark.parametrize(
    ("module", "event"),
    [
        ("stop", "Stop"),
        ("session_start", "SessionStart"),
        ("in_loop", "PostToolUseFailure"),
        ("subagent_stop", "SubagentStop"),
        ("post_commit", None),
    ],
)
def test_a_hook_leaves_nothing_for_the_interpreter_to_finish(
    module: str, event: str | None, git_repo: Path, tmp_path: Path
) -> None:
    """``end_process`` runs no exit handler and waits for no thread: after a real call of each
    hook (a full capture where there is one) none is registered and none runs."""
    env = hook_env(
        tmp_path / "home",
        REFLECTION_MODE="solo",
        REFLECTION_DIR=str(tmp_path / "sidecars"),
        REFLECTION_STATE_DIR=str(tmp_path / "state"),
    )
    (git_repo / "new.py").write_text("x = 1\n")
    stdin: dict[str, object] | bytes = b""
    if event is not None:
        stdin = payload(
            git_repo,
            hook_event_name=event,
            source="startup",
            tool_name="Bash",
            tool_input={"command": "pytest"},
            error="Exit code 1\nE   KeyError: 'user'",
            agent_id="a1",
            last_assistant_message="done",
        )
    else:
        run_git(git_repo, "add", "new.py")
        run_git(git_repo, "commit", "-q", "-m", "a commit")
    code = _CHECKED.format(module=module)
    done = run_hook(stdin, env, git_repo, command=[sys.executable, "-c", code])
    assert done.returncode == 0
    assert done.stderr.splitlines()[-1] == "LEFT atexit=0 threads=1", done.stderr
    if module == "stop":  # the whole capture ran: a sidecar was written
        assert list((tmp_path / "sidecars").glob("*.reflection.json"))
