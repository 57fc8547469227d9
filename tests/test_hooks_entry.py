"""The hooks' one entry wrapper (hooks/_entry.run_hook), run as Claude Code runs a hook: a real
Python process with the event on stdin, its exit status and both streams read."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run_entry(body: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """A process whose ``main`` is ``run_hook("demo-hook", body)``, ``body`` given as source."""
    code = textwrap.dedent(
        """
        import sys
        from agent_reflection.hooks._entry import read_stdin, run_hook

        def body(args):
        {body}

        sys.exit(run_hook("demo-hook", body, fault="nothing done: "))
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
