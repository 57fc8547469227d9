"""Run the real console entry point in-process, as a finished process would report it."""

from __future__ import annotations

import contextlib
import io
import subprocess

from agent_reflection.cli import main


def reflect(*args: str) -> subprocess.CompletedProcess[str]:
    """``reflect ARGS`` through ``main`` (which maps errors to exit codes): exit code, stdout
    and stderr, without the cost of starting a process."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as exc:
            code = int(exc.code or 0)
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())
