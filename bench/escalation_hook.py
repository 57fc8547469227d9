"""Per-call wall time of ``reflect-escalation-hook`` against a bare ``python3 -c pass`` start.

Baseline, stated: ``python -c pass`` with the same interpreter and environment, a whole
process like the hook. Goal: the hook costs at most 2x the baseline (median wall time), as the
cadence hook. Runs both N times, interleaved, in this one script, and prints medians and their
ratio in wall time and, because a shared machine's load inflates wall time unevenly, in CPU
time, with the load average and a verdict line. One size: the cost is per call. The events
alternate a success and a repeated failure, so the detector reads, counts and rewrites its
state on every call and fires every fourth failure.

    python bench/escalation_hook.py [--calls 40]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(cmd: list[str], stdin: str, env: dict[str, str]) -> tuple[float, float]:
    """Wall time and CPU time (user + sys of the child) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=env, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def hook_command(folder: Path) -> list[str]:
    """The installed console script; else an identical launcher (what pip would write)."""
    script = Path(sys.executable).parent / "reflect-escalation-hook"
    if not script.exists():
        script = folder / "reflect-escalation-hook"
        script.write_text(
            f"#!{sys.executable}\nimport sys\nfrom agent_reflection.hooks.escalation import main\n"
            "sys.exit(main())\n"
        )
        script.chmod(0o755)
    return [str(script)]


def event(n: int) -> dict[str, object]:
    failed = n % 2 == 1
    return {
        "hook_event_name": "PostToolUseFailure" if failed else "PostToolUse",
        "session_id": "bench",
        "tool_name": "Bash" if failed else "Edit",
        "tool_input": {"command": "pytest tests/test_app.py"} if failed else {"file_path": "a.py"},
        "tool_use_id": f"toolu_{n}",
        "error": f"Exit code 1\n  File \"/tmp/run{n}/t.py\", line {n}\nE   KeyError: 'user'",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=40, help="calls of each (default 40)")
    args = parser.parse_args()
    # Without bytecode (PYTHONDONTWRITEBYTECODE, a fresh checkout) every call would compile the
    # package's modules. Compile them once, as an install would.
    import agent_reflection

    compileall.compile_dir(Path(agent_reflection.__file__).parent, quiet=1)
    with tempfile.TemporaryDirectory() as state:
        hook = hook_command(Path(state))
        env = {**os.environ, "REFLECTION_STATE_DIR": state}
        env.pop("REFLECTION_ESCALATION_THRESHOLD", None)
        bare, hooked = [], []
        for n in range(args.calls):
            bare.append(timed([sys.executable, "-c", "pass"], "", env))
            hooked.append(timed(hook, json.dumps(event(n)), env))
    for label, index in (("wall", 0), ("cpu", 1)):
        b = statistics.median(t[index] for t in bare)
        h = statistics.median(t[index] for t in hooked)
        print(
            f"{label}: python -c pass median {b * 1000:6.1f} ms, reflect-escalation-hook "
            f"median {h * 1000:6.1f} ms ({args.calls} calls each)"
        )
        print(f"{label}: ratio hook / bare start: {h / b:.2f}x  (load {os.getloadavg()[0]:.1f})")
        if label == "wall":
            met = "meets" if h / b <= 2.0 else "MISSES"
            verdict = f"verdict: the escalation hook costs {h / b:.2f}x a bare start in wall time"
            print(f"{verdict}, {met} the goal <= 2.00x")


if __name__ == "__main__":
    main()
