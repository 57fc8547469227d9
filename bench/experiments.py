"""Benchmarks of the Phase-0 experiments, printed as ratios to a baseline run in the same script.

1. P1 at ``--rows`` labelled rows (default 10,000, 100,000 and 1,000,000): DeLong AUC + CI
   alone, and the whole P1 analysis (DeLong, the cluster bootstrap, reliability bins, Brier,
   lift, ROC points), each as a ratio to the baseline, scikit-learn's ``roc_auc_score`` alone
   on the same rows, all three in this process, in turns ``--p1-repeat`` times (medians).
   Goal: DeLong <= 2x the baseline (a verdict line); the whole analysis is printed beside it
   (``bench/p1.py`` judges it, as a whole process too, against its own goal).
2. ``reflect run all`` on the demo database as a whole process, as a ratio to what a user
   would run instead: the papermill CLI on the same notebooks, one after the other, with the
   parameters ``reflect run all`` gave each (read from the notebooks it executed), each
   ``py:percent`` file turned into a notebook by jupytext on the way (docs/experiments.md's
   recipe), in one shell script. Goal: <= 1.0x (the runner, its kernel pool and its HTML
   reports cost nothing over doing it by hand). The CPU seconds of each are printed too (all
   processes: the load of other jobs stretches wall time, not CPU time). Both run in turns
   (the order reversed every other turn), ``--repeat`` times; each figure is a median, with
   the 1-minute load average the runs started at.

Usage: .venv/bin/python bench/experiments.py [--rows N,N] [--p1-repeat N] [--repeat N] [--skip-run]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the measured libraries are imported where they are used: --help is quick
    from agent_reflection.experiments.registration import Preregistration

ROOT = Path(__file__).resolve().parents[1]


DELONG_GOAL = 2.0
#: `reflect run all` should cost no more than running the same notebooks by hand.
RUN_GOAL = 1.0


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
    import numpy as np
    import pandas as pd
    from sklearn.metrics import roc_auc_score

    from agent_reflection.experiments.p1.analysis import analyse_p1
    from agent_reflection.stats.delong import delong_ci

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
    from agent_reflection.experiments.registration import load_preregistration

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


def executed_parameters(reports: Path) -> list[tuple[str, dict[str, object]]]:
    """(notebook file name, parameters) of each notebook a ``reflect run all`` executed, in
    the order it ran them (the experiments, then the summary), from papermill's metadata."""
    import nbformat

    found = []
    for path in sorted(reports.glob("*/*/*.ipynb")):
        if path.name.endswith(".input.ipynb"):
            continue
        meta = nbformat.read(path, as_version=4).metadata.get("papermill", {})  # type: ignore[no-untyped-call]
        found.append((path.stem + ".py", dict(meta.get("parameters") or {})))
    # the summary reads the experiments' results: it runs last
    return sorted(found, key=lambda item: item[0] == "phase0_summary.py")


def papermill_script(
    notebooks: list[tuple[str, dict[str, object]]], kernel: str, out: Path, checkout: Path
) -> str:
    """The shell script a user would write instead of ``reflect run all``: each notebook
    through the papermill CLI (jupytext turning the ``py:percent`` file into a notebook on
    the way, docs/experiments.md's recipe) with the same parameters, its outputs under
    ``out``."""
    lines = ["set -e"]
    for name, params in notebooks:
        folder = out / name.removesuffix(".py")
        moved = dict(params, output_dir=str(folder))
        if "results_dir" in moved:
            moved["results_dir"] = str(out)
        lines.append(f"mkdir -p {shlex.quote(str(folder))}")
        lines.append(
            f"{shlex.quote(sys.executable)} -m jupytext --to ipynb -o - "
            f"{shlex.quote(str(checkout / 'notebooks' / name))} | "
            f"{shlex.quote(sys.executable)} -m papermill - "
            f"{shlex.quote(str(folder / name.replace('.py', '.ipynb')))} -k {shlex.quote(kernel)}"
            f" --no-progress-bar -y {shlex.quote(json.dumps(moved))}"
        )
    return "\n".join(lines)


def bench_run(repeat: int, compare: Path | None = None) -> None:
    """``reflect run all`` on the demo database against the papermill CLI running the same
    notebooks with the same parameters, one after the other, as a user would without it."""
    from agent_reflection.execute.kernel import ensure_kernel
    from agent_reflection.simulate.phase0 import build_demo

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        data = build_demo(out / "demo")
        kernel = ensure_kernel()

        def run_all(*options: str, checkout: Path = ROOT) -> Callable[[], object]:
            command = [sys.executable, "-m", "agent_reflection", "run", "all"]
            command += ["--db", str(data.db_path), "--out", str(out / "reports"), *options]
            # the checkout's package, notebooks and pre-registration (its kernels inherit it)
            env = {**os.environ, "PYTHONPATH": str(checkout / "src")}
            return lambda: subprocess.run(
                command, check=True, capture_output=True, cwd=checkout, env=env
            )

        run_all()()  # warms the file cache, and says which notebooks run with which parameters
        notebooks = executed_parameters(out / "reports")
        script = papermill_script(notebooks, kernel, out / "papermill", ROOT)
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        baseline = f"papermill CLI, the same {len(notebooks)} notebooks in turn"
        goal = "reflect run all (demo db)"
        runs = {
            baseline: lambda: subprocess.run(
                ["bash", "-c", script], check=True, capture_output=True, cwd=ROOT, env=env
            ),
            goal: run_all(),
        }
        if compare is not None:
            runs[f"reflect run all from {compare}"] = run_all(checkout=compare)
        # in turn, so the machine's load weighs on all alike
        walls: dict[str, list[float]] = {name: [] for name in runs}
        cpus: dict[str, list[float]] = {name: [] for name in runs}
        loads: dict[str, list[float]] = {name: [] for name in runs}
        for turn in range(repeat):
            for name in list(runs) if turn % 2 == 0 else list(runs)[::-1]:
                loads[name].append(os.getloadavg()[0])
                wall, cpu = timed(runs[name])
                walls[name].append(wall)
                cpus[name].append(cpu)
        base = statistics.median(walls[baseline])
        for name in runs:
            wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
            load = f"load {statistics.median(loads[name]):.2f} ({min(loads[name]):.2f}-"
            load += f"{max(loads[name]):.2f})"
            print(f"{name}: {wall:.2f}s, CPU {cpu:.2f}s, ratio {wall / base:.2f}x, {load}")
        ratio = statistics.median(walls[goal]) / base
        per_turn = [a / b for a, b in zip(walls[goal], walls[baseline], strict=True)]
        print(
            f"verdict: reflect run all = {ratio:.2f}x the papermill CLI on the same notebooks "
            f"(medians of {repeat} turns; per-turn {min(per_turn):.2f}-{max(per_turn):.2f}x): "
            f"{'meets' if ratio <= RUN_GOAL else 'misses'} the goal <= {RUN_GOAL:.1f}x"
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
