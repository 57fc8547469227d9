"""Benchmarks of the Phase-0 experiments, printed as ratios to a baseline run in the same script.

1. P1 on 1,000,000 labelled rows: DeLong AUC + CI alone, and the whole P1 analysis (DeLong,
   reliability bins, Brier, lift, ROC points; the bootstrap is skipped above its pre-registered
   row limit), each as a ratio to scikit-learn's ``roc_auc_score`` alone on the same rows.
   Target: <= 2x.
2. ``reflect run all`` on the demo database (a fresh kernel per notebook, as pre-registered runs
   use), as a ratio to papermill executing an empty notebook with the same kernel. Target: <= 8x.
   Also ``reflect run all --warm`` (one kept kernel per lane), and the CPU seconds of each (all
   processes: the load of other jobs on the machine stretches wall time, not CPU time).

Usage: .venv/bin/python bench/experiments.py [--rows N] [--skip-run]
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

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

from agent_reflection.experiments.kernel import ensure_kernel
from agent_reflection.experiments.p1 import analyse_p1
from agent_reflection.experiments.preregistration import load_preregistration
from agent_reflection.experiments.runner import execute_notebook
from agent_reflection.simulate.phase0 import build_demo
from agent_reflection.stats.delong import delong_ci

ROOT = Path(__file__).resolve().parents[1]


def best_of(fn: Callable[[], object], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def bench_p1(rows: int) -> None:
    rng = np.random.default_rng(0)
    y = rng.random(rows) < 0.6
    conf = 0.8 + 0.2 / (1 + np.exp(-(rng.normal(size=rows) + 0.7 * y)))
    frame = pd.DataFrame({"confidence": conf, "correct": y})
    prereg = load_preregistration(ROOT / "preregistration.toml")
    base = best_of(lambda: roc_auc_score(y, conf))
    delong = best_of(lambda: delong_ci(conf, y))
    full = best_of(lambda: analyse_p1(frame, prereg), repeat=2)
    print(f"P1 on {rows:,} rows: sklearn roc_auc_score {base:.3f}s")
    print(f"  DeLong AUC + CI      {delong:.3f}s  ratio {delong / base:.2f}x (target <= 2x)")
    print(f"  whole P1 analysis    {full:.3f}s  ratio {full / base:.2f}x")


def cpu_seconds_of(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child processes fn started and waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = best_of(fn, 1)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu


def bench_run(repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        data = build_demo(out / "demo")
        kernel = ensure_kernel()
        empty = out / "empty.py"
        empty.write_text("# %%\n1 + 1\n")

        def run_empty() -> None:
            execute_notebook(empty, out / "empty", {}, kernel=kernel, html=False)

        def run_all(*options: str) -> Callable[[], None]:
            command = [sys.executable, "-m", "agent_reflection", "run", "all"]
            command += ["--db", str(data.db_path), "--out", str(out / "reports"), *options]
            return lambda: subprocess.run(command, check=True, capture_output=True, cwd=ROOT)

        runs = {
            "papermill, empty notebook": run_empty,
            "reflect run all (demo db)": run_all(),
            "reflect run all --warm": run_all("--warm"),
        }
        run_empty()  # warm the file cache
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        # in turn, so the machine's load weighs on all alike
        walls: dict[str, list[float]] = {name: [] for name in runs}
        cpus: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(repeat):
            for name, fn in runs.items():
                wall, cpu = cpu_seconds_of(fn)
                walls[name].append(wall)
                cpus[name].append(cpu)
        base = statistics.median(walls.pop("papermill, empty notebook"))
        print(f"papermill, empty notebook: {base:.2f}s")
        for name in walls:  # CPU of the whole reflect process tree (it waits for its kernels)
            wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
            target = " (target <= 8x)" if name == "reflect run all (demo db)" else ""
            print(f"{name}: {wall:.2f}s, CPU {cpu:.2f}s  ratio {wall / base:.2f}x{target}")
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5, help="runs of the notebook benchmark")
    parser.add_argument("--skip-run", action="store_true", help="only the P1 benchmark")
    args = parser.parse_args()
    bench_p1(args.rows)
    if not args.skip_run:
        bench_run(args.repeat)


if __name__ == "__main__":
    main()
