"""Benchmark: the P1 analysis at 1e3 to 1e6 labelled rows, against the goal "<= 2 s at every n".

P1's primary interval is the seeded cluster bootstrap (2,000 resamples, as pre-registered,
drawn as ``[p1] bootstrap_draws`` says: multinomial type counts) while resamples x (cluster
types + keys) stays within ``[p1] bootstrap_budget``; above it the clustered stratified DeLong
interval is primary and the bootstrap is not run. Each line says which was primary.

For each size and data shape it writes a labels JSONL file and loads it with
``reflect load labels`` into a fresh DuckDB file (setup, not timed), then times, interleaved
(size after size, shape after shape, ``--repeat`` rounds, so the machine's load weighs on all
alike):

  analysis   ``experiments.p1.analysis.analyse_p1`` in this process on the same rows
             (every P1 number: stratified AUC with its cluster bootstrap and clustered DeLong
             intervals, pooled AUC, per-stratum table, groups, ROC, reliability, lift);
  reflect    ``reflect run p1 --db DB --out DIR`` as a user runs it, start-up, notebook kernel
             and HTML report included (a whole process; ``--no-process`` skips it).

Shapes (all confidences in [0.8, 1], so every row is in P1's self-rated-high subset; about
30% correct):

  questions  8 models (strata) answer each question (cluster): n / 8 clusters of 8 rows,
             like the HLE calibration corpus; confidences stated to two decimals;
  single     4 models, every row its own cluster (no cluster column), confidences to two
             decimals: single-row clusters sharing a (model, score, class) are one type;
  untied     as single, but confidences continuous (not rounded): no two rows tie, so every
             row is a cluster type of its own (the most types a bootstrap can meet).

It prints every run's median wall time, and the median CPU time of the same runs (what the
process itself used: less inflated when other jobs share the 2 cores), with the load average
beside them, one verdict line per shape and one overall line against the goal (the in-process
analysis's wall time; the whole process is shown beside it).

    python bench/p1.py
    python bench/p1.py --sizes 1000 100000 --repeat 5 --shapes questions
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

import numpy as np
import pandas as pd

from agent_reflection.experiments.p1.analysis import analyse_p1
from agent_reflection.experiments.registration import load_preregistration

ROOT = Path(__file__).resolve().parents[1]
GOAL_SECONDS = 2.0
SHAPES = ("questions", "single", "untied")


def labels(n: int, shape: str, seed: int = 17) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    correct = rng.random(n) < 0.3
    noise = rng.normal(0.0, 0.07, n)
    continuous = np.clip(0.85 + 0.05 * correct + noise, 0.8, 1.0)
    if shape == "untied":
        # clipping ties the rows at 0.8 and 1.0: spread those over the range instead
        edge = (continuous <= 0.8) | (continuous >= 1.0)
        continuous[edge] = rng.uniform(0.8, 1.0, int(edge.sum()))
        model = np.array(["a", "b", "c", "d"])[rng.integers(0, 4, n)]
        return pd.DataFrame({"model": model, "confidence": continuous, "correct": correct})
    confidence = np.round(continuous, 2)
    if shape == "questions":
        model = np.array([f"model-{i % 8}" for i in range(n)])
        question = np.array([f"q{i // 8:07d}" for i in range(n)])
        return pd.DataFrame(
            {"question_id": question, "model": model, "confidence": confidence, "correct": correct}
        )
    model = np.array(["a", "b", "c", "d"])[rng.integers(0, 4, n)]
    return pd.DataFrame({"model": model, "confidence": confidence, "correct": correct})


def load_db(frame: pd.DataFrame, folder: Path) -> tuple[Path, float]:
    """The rows loaded by ``reflect load labels`` into a fresh database; (db, seconds)."""
    file, db = folder / "labels.jsonl", folder / "p1.duckdb"
    with file.open("w", encoding="utf-8") as out:
        for record in frame.to_dict(orient="records"):
            out.write(
                json.dumps({k: (bool(v) if k == "correct" else v) for k, v in record.items()})
            )
            out.write("\n")
    started = time.perf_counter()
    command = [sys.executable, "-m", "agent_reflection", "load", "labels", str(file)]
    subprocess.run([*command, "--db", str(db)], check=True, capture_output=True, cwd=ROOT)
    return db, time.perf_counter() - started


def children_cpu() -> float:
    """CPU seconds used by finished child processes (and theirs, e.g. the notebook kernel)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def load_average() -> float:
    """The 1-minute load average (2 cores: above 2 the runs share the CPU)."""
    return os.getloadavg()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000, 1_000_000])
    parser.add_argument("--shapes", nargs="+", choices=SHAPES, default=list(SHAPES))
    parser.add_argument("--repeat", type=int, default=3, help="interleaved rounds (median)")
    parser.add_argument("--no-process", action="store_true", help="skip `reflect run p1`")
    args = parser.parse_args()
    prereg = load_preregistration(ROOT / "preregistration.toml")
    with tempfile.TemporaryDirectory() as tmp:
        cases: dict[tuple[str, int], tuple[pd.DataFrame, Path | None]] = {}
        for shape in args.shapes:
            for n in args.sizes:
                frame = labels(n, shape)
                db = None
                if not args.no_process:
                    folder = Path(tmp) / f"{shape}-{n}"
                    folder.mkdir()
                    db, seconds = load_db(frame, folder)
                    print(f"setup {shape} n={n:,}: reflect load labels {seconds:.1f}s", flush=True)
                cases[shape, n] = (frame, db)
        analyse_p1(cases[next(iter(cases))][0], prereg)  # imports and first-call costs
        # per case and run: (wall seconds, CPU seconds, load average)
        analysis: dict[tuple[str, int], list[tuple[float, float, float]]] = {c: [] for c in cases}
        process: dict[tuple[str, int], list[tuple[float, float, float]]] = {c: [] for c in cases}
        # which interval was primary: the cluster bootstrap, or DeLong above the budget
        method: dict[tuple[str, int], str] = {}
        for round_ in range(args.repeat):
            for case, (frame, db) in cases.items():
                started, cpu = time.perf_counter(), time.process_time()
                result = analyse_p1(frame, prereg)
                wall, cpu = time.perf_counter() - started, time.process_time() - cpu
                analysis[case].append((wall, cpu, load_average()))
                if round_ == 0:
                    primary = result.details["primary_interval"]
                    assert primary["method"] == result.metric.ci_method, case
                    method[case] = "bootstrap" if result.details["bootstrap"] else "DeLong"
                    if result.details["bootstrap"]:
                        draws = result.details["bootstrap"]["draws"]
                        assert draws == prereg.p1.bootstrap_draws, (case, draws)
                if db is not None:
                    out = Path(tmp) / "reports"
                    command = [sys.executable, "-m", "agent_reflection", "run", "p1"]
                    started, cpu = time.perf_counter(), children_cpu()
                    subprocess.run(
                        [*command, "--db", str(db), "--out", str(out)],
                        check=True,
                        capture_output=True,
                        cwd=ROOT,
                    )
                    wall, cpu = time.perf_counter() - started, children_cpu() - cpu
                    process[case].append((wall, cpu, load_average()))
        print(
            f"P1 analysis, median of {args.repeat} interleaved runs (goal <= {GOAL_SECONDS} s); "
            f"draws {prereg.p1.bootstrap_draws}; bootstrap budget "
            f"{prereg.p1.bootstrap_budget:,} resamples x (cluster types + keys) (0: none)"
        )
        slowest = 0.0
        for shape in args.shapes:
            worst = 0.0
            for n in args.sizes:
                runs = analysis[shape, n]
                median = statistics.median(t for t, _, _ in runs)
                cpu = statistics.median(c for _, c, _ in runs)
                worst = max(worst, median)
                line = (
                    f"  {shape:9s} n={n:>9,}  primary {method[shape, n]:9s}  "
                    f"analysis {median:6.2f}s (cpu {cpu:5.2f}s)"
                )
                if process[shape, n]:
                    whole = statistics.median(t for t, _, _ in process[shape, n])
                    whole_cpu = statistics.median(c for _, c, _ in process[shape, n])
                    line += f"  reflect run p1 {whole:6.2f}s (cpu {whole_cpu:5.2f}s)"
                loads = [la for _, _, la in runs] + [la for _, _, la in process[shape, n]]
                print(f"{line}  (load average {min(loads):.2f}-{max(loads):.2f})")
            verdict = "MEETS" if worst <= GOAL_SECONDS else "MISSES"
            print(
                f"verdict {shape}: {verdict} <= {GOAL_SECONDS} s at every n "
                f"(slowest median {worst:.2f}s, in-process analysis)"
            )
            slowest = max(slowest, worst)
        verdict = "MEETS" if slowest <= GOAL_SECONDS else "MISSES"
        print(
            f"verdict: {verdict} <= {GOAL_SECONDS} s at every n in every shape "
            f"(slowest median {slowest:.2f}s, in-process analysis, wall)"
        )


if __name__ == "__main__":
    main()
