"""The hooks' one entry wrapper (hooks/_entry.run_hook), run as Claude Code runs a hook: a real
Python process with the event on stdin, its exit status and both streams read."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import agent_reflection


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


def test_the_hooks_modules_leave_nothing_for_the_interpreter_to_finish() -> None:
    """``end_process`` runs no exit handler and waits for no thread: the modules the hooks
    import use neither (a hook that needed one would have to finish it before its body
    returns, or lose its work)."""
    package = Path(agent_reflection.__file__).parent
    modules = [
        *(package / "hooks").glob("*.py"),
        *(package / "in_loop").glob("*.py"),
        *(package / "reflection").glob("*.py"),
        *(package / name for name in ("__init__.py", "config.py", "errors.py", "names.py")),
        package / "redact.py",
    ]
    users = [
        f"{path.relative_to(package)}: {word}"
        for path in modules
        for word in ("atexit", "threading", "Thread(", "weakref.finalize")
        if word in path.read_text("utf-8")
    ]
    assert not users, users
