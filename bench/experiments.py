"""Benchmarks of the Phase-0 experiments, printed as ratios to a baseline run in the same script.

1. P1 at ``--rows`` labelled rows (default 10,000, 100,000 and 1,000,000): DeLong AUC + CI
   alone, and the whole P1 analysis (DeLong, the cluster bootstrap, reliability bins, Brier,
   lift, ROC points), each as a ratio to the baseline, scikit-learn's ``roc_auc_score`` alone
   on the same rows, all three in this process, in turns ``--p1-repeat`` times (medians).
   Goal: DeLong <= 2x the baseline (a verdict line); the whole analysis is printed beside it
   (``bench/p1.py`` judges it, as a whole process too, against its own goal).
2. ``reflect run all`` on the demo database (a fresh kernel per notebook, as pre-registered runs
   use), as a ratio to papermill executing an empty notebook with the same kernel (in this
   process, papermill already imported: the stricter baseline, the one the target is judged
   on). Target: <= 8x. Also the ``papermill`` command on the empty notebook as a whole
   process (for reference), and the CPU seconds of each (all processes: the load of other
   jobs stretches wall time, not CPU time).
   All are run in turn, ``--repeat`` times; each figure is a median, with the 1-minute load
   average the runs started at.

Usage: .venv/bin/python bench/experiments.py [--rows N,N] [--p1-repeat N] [--repeat N] [--skip-run]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import jupytext
import nbformat
import numpy as np
import pandas as pd
import papermill
from sklearn.metrics import roc_auc_score
from traitlets.config import Config

from agent_reflection.execute.kernel import ensure_kernel, ipc_socket_prefix
from agent_reflection.experiments.p1.analysis import analyse_p1
from agent_reflection.experiments.registration import Preregistration, load_preregistration
from agent_reflection.simulate.phase0 import build_demo
from agent_reflection.stats.delong import delong_ci

ROOT = Path(__file__).resolve().parents[1]


DELONG_GOAL = 2.0


def medians_in_turns(fns: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Median seconds of each of ``fns``, run in turns whose order reverses every other turn."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for turn in range(repeat):
        for name in names if turn % 2 == 0 else names[::-1]:
            t = time.perf_counter()
            fns[name]()
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(t) for name, t in times.items()}


def p1_turns(rows: int, prereg: Preregistration, repeat: int) -> dict[str, float]:
    """Medians of the baseline, DeLong and the whole analysis on ``rows`` synthetic rows."""
    rng = np.random.default_rng(0)
    y = rng.random(rows) < 0.6
    conf = 0.8 + 0.2 / (1 + np.exp(-(rng.normal(size=rows) + 0.7 * y)))
    frame = pd.DataFrame({"confidence": conf, "correct": y})
    return medians_in_turns(
        {
            "base": lambda: roc_auc_score(y, conf),
            "delong": lambda: delong_ci(conf, y),
            "full": lambda: analyse_p1(frame, prereg),
        },
        repeat,
    )


def bench_p1(sizes: list[int], repeat: int) -> None:
    prereg = load_preregistration(ROOT / "preregistration.toml")
    ratios: dict[int, float] = {}
    for rows in sizes:
        load = os.getloadavg()[0]
        med = p1_turns(rows, prereg, repeat)
        base, delong, full = med["base"], med["delong"], med["full"]
        ratios[rows] = delong / base
        print(
            f"P1 on {rows:,} rows: sklearn roc_auc_score {base:.3f}s (medians of {repeat} turns, "
            f"load average {load:.1f} at the start)"
        )
        print(f"  DeLong AUC + CI      {delong:.3f}s  ratio {delong / base:.2f}x (goal <= 2x)")
        print(f"  whole P1 analysis    {full:.3f}s  ratio {full / base:.2f}x")
    worst = max(ratios.values())
    met = "meets" if worst <= DELONG_GOAL else "misses"
    print(
        "verdict: DeLong AUC + CI costs "
        + ", ".join(f"{r:.2f}x at {n:,} rows" for n, r in ratios.items())
        + f" roc_auc_score (in process, medians): {met} the goal <= {DELONG_GOAL:.0f}x at every "
        "size"
    )


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds of one call, CPU seconds of the child processes it started and waited
    for; the in-process baseline's kernel is one of them)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    fn()
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu


def bench_run(repeat: int, compare: Path | None = None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        data = build_demo(out / "demo")
        kernel = ensure_kernel()
        empty = out / "empty.py"
        empty.write_text("# %%\n1 + 1\n")
        empty_ipynb = out / "empty.ipynb"
        nbformat.write(jupytext.read(empty), empty_ipynb)  # type: ignore[no-untyped-call]

        def run_empty() -> None:
            # papermill itself, as the baseline says: its own kernel start and client (over
            # IPC sockets, as the runner's kernels talk)
            papermill.execute_notebook(
                str(empty_ipynb),
                str(out / "empty.run.ipynb"),
                kernel_name=kernel,
                progress_bar=False,
                config=Config({"KernelManager": {"transport": "ipc", "ip": ipc_socket_prefix()}}),
            )

        papermill_command = [sys.executable, "-m", "papermill", "-k", kernel, "--no-progress-bar"]
        papermill_command += [str(empty_ipynb), str(out / "empty.out.ipynb")]

        def run_all(*options: str, checkout: Path = ROOT) -> Callable[[], None]:
            command = [sys.executable, "-m", "agent_reflection", "run", "all"]
            command += ["--db", str(data.db_path), "--out", str(out / "reports"), *options]
            # the checkout's package, notebooks and pre-registration (its kernels inherit it)
            env = {**os.environ, "PYTHONPATH": str(checkout / "src")}
            return lambda: subprocess.run(
                command, check=True, capture_output=True, cwd=checkout, env=env
            )

        baseline, goal = "papermill, empty notebook (in process)", "reflect run all (demo db)"
        runs = {
            baseline: run_empty,
            goal: run_all(),
            "papermill command, empty notebook": lambda: subprocess.run(
                papermill_command, check=True, capture_output=True
            ),
        }
        if compare is not None:
            runs[f"reflect run all from {compare}"] = run_all(checkout=compare)
        run_empty()  # warm the file cache
        # in turn, so the machine's load weighs on all alike
        walls: dict[str, list[float]] = {name: [] for name in runs}
        cpus: dict[str, list[float]] = {name: [] for name in runs}
        loads: dict[str, list[float]] = {name: [] for name in runs}
        ratios: list[float] = []  # the goal's run against the baseline run just before it
        for _ in range(repeat):
            for name, fn in runs.items():
                loads[name].append(os.getloadavg()[0])
                wall, cpu = timed(fn)
                walls[name].append(wall)
                cpus[name].append(cpu)
            ratios.append(walls[goal][-1] / walls[baseline][-1])
        base = statistics.median(walls[baseline])
        for name in runs:
            wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
            load = f"load {statistics.median(loads[name]):.2f} ({min(loads[name]):.2f}-"
            load += f"{max(loads[name]):.2f})"
            print(f"{name}: {wall:.2f}s, CPU {cpu:.2f}s, ratio {wall / base:.2f}x, {load}")
        ratio = statistics.median(walls[goal]) / base
        print(
            f"verdict: reflect run all = {ratio:.2f}x an empty papermill notebook (medians of "
            f"{repeat} turns; per-turn ratios {min(ratios):.2f}-{max(ratios):.2f}x, median "
            f"{statistics.median(ratios):.2f}x): {'meets' if ratio <= 8 else 'misses'} the "
            "target <= 8x"
        )
        if compare is not None:
            other = walls[f"reflect run all from {compare}"]
            per_turn = [b / a for a, b in zip(walls[goal], other, strict=True)]
            print(
                f"reflect run all from {compare} / this checkout's: per-turn ratio median "
                f"{statistics.median(per_turn):.2f} ({min(per_turn):.2f}-{max(per_turn):.2f})"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="10000,100000,1000000", help="P1 sizes, comma-separated")
    parser.add_argument("--p1-repeat", type=int, default=3, help="turns of the P1 benchmark")
    parser.add_argument("--repeat", type=int, default=5, help="runs of the notebook benchmark")
    parser.add_argument("--skip-run", action="store_true", help="only the P1 benchmark")
    parser.add_argument(
        "--compare",
        type=Path,
        help="another checkout (src/, notebooks/, preregistration.toml), e.g. an older commit "
        "extracted by git archive: its `reflect run all` runs in turn with the others",
    )
    args = parser.parse_args()
    bench_p1([int(n) for n in args.rows.split(",")], args.p1_repeat)
    if not args.skip_run:
        bench_run(args.repeat, args.compare)


if __name__ == "__main__":
    main()
