"""A process that ran experiments exits as Python does: nothing skips the interpreter's final
collection of reference cycles or ends the process early (real interpreters)."""

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


def test_the_final_collection_runs_after_the_runner_is_used() -> None:
    # the interpreter's final collection finds the cycle
    assert _run("") == ["exiting", "collected"]
    # and still does in a process that loaded the runner and resolved a run's parameters
    use = (
        "from agent_reflection.experiments.runner import split_parameters\n"
        "split_parameters(['p1'], {'p1.seed': 1})\n"
    )
    assert _run(use) == ["exiting", "collected"]
