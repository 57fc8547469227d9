"""A process that ran experiments leaves its objects to the operating system at exit: the final
collection of reference cycles, 0.3-1 s after a run, is skipped (real interpreters)."""

from __future__ import annotations

import subprocess
import sys

CYCLE = """
import gc, sys
gc.disable()  # the cycle below stays garbage until the interpreter's final collection

class Cycle:
    def __del__(self):
        sys.stdout.write("collected\\n")
        sys.stdout.flush()

a = Cycle()
a.self = a
del a
{call}
print("exiting")
"""


def _run(call: str) -> list[str]:
    code = CYCLE.replace("{call}", call)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_the_final_collection_is_skipped_after_a_run() -> None:
    # without: the interpreter's final collection finds the cycle
    assert _run("") == ["exiting", "collected"]
    # with (called twice, as two runs in one process would): it does not
    skip = (
        "from agent_reflection.experiments.runner import _skip_final_collection_at_exit\n"
        "_skip_final_collection_at_exit()\n"
        "_skip_final_collection_at_exit()\n"
    )
    assert _run(skip) == ["exiting"]
