"""Per-call wall time of ``reflect-in-loop-hook`` against a bare ``python3 -c pass`` start.

Baseline, stated: ``python -c pass`` with the same interpreter and environment, a whole
process like the hook. Goal: the hook costs at most 2x the baseline (median wall time). Runs
both N times, interleaved, in this one script, and prints medians and their ratio in wall time
and, because a shared machine's load inflates wall time unevenly, in CPU time, with the load
average and a verdict line. One size: the cost is per call. The events alternate a success and
a repeated failure, so both parts read, count and rewrite their state on every call: the
cadence checkpoint fires every 7th call, the anti-loop detector every fourth failure.
``--only cadence`` or ``--only escalation`` times the hook with one part, as the commands of
earlier installs (``reflect-cadence-hook``, ``reflect-escalation-hook``) run it.

    python bench/in_loop_hook.py [--calls 40] [--only cadence|escalation]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _measure import add_readme_install, as_readme_installs


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
    script = Path(sys.executable).parent / "reflect-in-loop-hook"
    if not script.exists():
        script = folder / "reflect-in-loop-hook"
        script.write_text(
            f"#!{sys.executable}\nimport sys\nfrom agent_reflection.hooks.in_loop import main\n"
            "sys.exit(main())\n"
        )
        script.chmod(0o755)
    return [str(script)]


def event(n: int, cwd: str) -> dict[str, object]:
    failed = n % 2 == 1
    return {
        "hook_event_name": "PostToolUseFailure" if failed else "PostToolUse",
        "session_id": "bench",
        "cwd": cwd,
        "tool_name": "Bash" if failed else "Edit",
        "tool_input": {"command": "pytest tests/test_app.py"} if failed else {"file_path": "a.py"},
        "tool_use_id": f"toolu_{n}",
        "error": f"Exit code 1\n  File \"/tmp/run{n}/t.py\", line {n}\nE   KeyError: 'user'",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=40, help="calls of each (default 40)")
    parser.add_argument(
        "--only", choices=["cadence", "escalation"], help="time the hook with this part alone"
    )
    add_readme_install(parser)
    args = parser.parse_args()
    as_readme_installs(args.readme_install)
    # The package's bytecode, as `reflect hook install` writes it: without it, where
    # PYTHONDONTWRITEBYTECODE is set, an editable install compiles the modules on every call.
    from agent_reflection.hooks.bytecode import compile_package, not_compiled_hint

    if not compile_package():
        print(not_compiled_hint(), file=sys.stderr)
    label = f"reflect-in-loop-hook{f' --only {args.only}' if args.only else ''}"
    with tempfile.TemporaryDirectory() as state:
        hook = hook_command(Path(state)) + (["--only", args.only] if args.only else [])
        env = {k: v for k, v in os.environ.items() if not k.startswith("REFLECTION_")}
        env["REFLECTION_STATE_DIR"] = state
        env.pop("CLAUDE_PROJECT_DIR", None)
        bare, hooked = [], []
        for n in range(args.calls):
            bare.append(timed([sys.executable, "-c", "pass"], "", env))
            hooked.append(timed(hook, json.dumps(event(n, state)), env))
    for kind, index in (("wall", 0), ("cpu", 1)):
        b = statistics.median(t[index] for t in bare)
        h = statistics.median(t[index] for t in hooked)
        print(
            f"{kind}: python -c pass median {b * 1000:6.1f} ms, {label} "
            f"median {h * 1000:6.1f} ms ({args.calls} calls each)"
        )
        print(f"{kind}: ratio hook / bare start: {h / b:.2f}x  (load {os.getloadavg()[0]:.1f})")
        if kind == "wall":
            met = "meets" if h / b <= 2.0 else "MISSES"
            verdict = f"verdict: the in-loop hook costs {h / b:.2f}x a bare start in wall time"
            print(f"{verdict}, {met} the goal <= 2.00x")


if __name__ == "__main__":
    main()
