"""Per-call wall time of ``reflect-cadence-hook`` against a bare ``python3 -c pass`` start.

Baseline, stated: ``python -c pass`` with the same interpreter and environment, a whole
process like the hook. Goal: the hook costs at most 2x the baseline (median wall time). Runs
both N times, interleaved, in this one script, and prints medians, their ratio, the load
average and a verdict line. One size: the hook's cost is per call (every 7th call fires).

    python bench/cadence_hook.py [--calls 40]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(cmd: list[str], stdin: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=env, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=40, help="calls of each (default 40)")
    args = parser.parse_args()
    hook = str(Path(sys.executable).parent / "reflect-cadence-hook")
    with tempfile.TemporaryDirectory() as state:
        env = {**os.environ, "REFLECTION_STATE_DIR": state}
        env.pop("REFLECTION_CADENCE", None)
        bare, hooked = [], []
        for n in range(args.calls):
            event = {
                "hook_event_name": "PostToolUse",
                "session_id": "bench",
                "cwd": state,
                "tool_name": "Bash",
                "tool_input": {"command": "true"},
                "tool_use_id": f"toolu_{n}",
            }
            bare.append(timed([sys.executable, "-c", "pass"], "", env))
            hooked.append(timed([hook], json.dumps(event), env))
    b, h = statistics.median(bare), statistics.median(hooked)
    print(f"python -c pass      median {b * 1000:7.1f} ms  ({args.calls} calls)")
    print(f"reflect-cadence-hook median {h * 1000:7.1f} ms  ({args.calls} calls, every 7th fires)")
    print(f"ratio hook / bare start: {h / b:.2f}x  (load {os.getloadavg()[0]:.1f})")
    met = "meets" if h / b <= 2.0 else "MISSES"
    print(f"verdict: the cadence hook costs {h / b:.2f}x a bare start, {met} the goal <= 2.00x")


if __name__ == "__main__":
    main()
