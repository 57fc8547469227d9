"""Tier-1 rule pass against the design's rules written in SQLite and plain Python, on three data
shapes and several sizes.

    .venv/bin/python bench/cycle.py [--sizes 100000,300000,1000000] [--repeat 5]
                                    [--shapes many_tasks,few_tasks_many_findings,long_lookback]

Goal (issue 36's anchor): the rule pass costs at most what a user's own implementation would,
1.0x, on every shape and size.

Baseline, stated: ``bench/_cycle_reference.py``, the four rules as ``docs/cycle.md`` words them,
written the way a user would without this package: the standard library's ``sqlite3`` (the
three tables the rules read, copied into a SQLite file with the indexes a user would add; the
copy is not timed) and plain Python, one query per task. Before any timing, both must give the
same findings (rule, subject, count) on the shape and size, or the bench stops.

Two figures per shape and size, each the median of ``--repeat`` interleaved runs (the order
reversed every other turn):

* whole process, as a user runs it: ``python -m agent_reflection cycle run --db FILE --now ...
  --lookback ...`` (start-up, the pass, storing its findings and events, printing them) against
  ``python bench/_cycle_reference.py FILE.sqlite NOW LOOKBACK`` (start-up, the pass, printing);
* in process: ``cycle.rules.evaluate`` on an open DuckDB connection against the reference's
  ``evaluate`` on an open SQLite connection.

The verdict line per shape is on the rule pass (in process) at every size, as the retired goal
was; the whole-process ratio is printed beside it: there the package's start-up (DuckDB, the
CLI: about 0.25 s) weighs on small sizes, where the reference starts in 0.03 s. The load
average is printed with every figure.

Shapes (outcomes spread over the history, 20 % failed, 5 % timeout, lengths 0-399):

* many_tasks: n/10 tasks, 30 days of history, a 1-day window; n/5 steps reading 50 skills.
* few_tasks_many_findings: 100 tasks, 2 days, a 1-day window; n steps reading n/40 skills, so
  most skills are flagged (about 2 % of n findings, most of them skill_failure_correlation).
* long_lookback: 1,000 tasks, 30 days, a 30-day window (every outcome in it); n/5 steps, 50
  skills.

(The goal of issues 17 and 28, the pass at most 3x one scan of five columns, is retired with its
lower bounds and profile: the pass beats the rules' own plain implementation instead.)
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from _cycle_reference import copy_to_sqlite
from _cycle_reference import evaluate as reference
from agent_reflection.cycle.config import CycleConfig
from agent_reflection.cycle.rules import evaluate
from agent_reflection.store import db

NOW = datetime(2025, 6, 1, tzinfo=UTC)
GOAL = 1.0
DAY = 86_400
REFERENCE = Path(__file__).with_name("_cycle_reference.py")


@dataclass(frozen=True)
class Shape:
    tasks: Callable[[int], int]
    history_days: int
    lookback_seconds: int
    steps: Callable[[int], int]
    skills: Callable[[int], int]


SHAPES = {
    "many_tasks": Shape(lambda n: n // 10, 30, DAY, lambda n: n // 5, lambda n: 50),
    "few_tasks_many_findings": Shape(lambda n: 100, 2, DAY, lambda n: n, lambda n: n // 40),
    "long_lookback": Shape(lambda n: 1000, 30, 30 * DAY, lambda n: n // 5, lambda n: 50),
}


def build(path: Path, n: int, shape: Shape) -> None:
    con = db.connect(path)
    con.execute(
        """INSERT INTO run_outcomes
           SELECT 's' || i, 't' || (hash(i) % $tasks), 'objective ' || i,
                  CASE WHEN hash(i * 7) % 100 < 20 THEN 'failed'
                       WHEN hash(i * 7) % 100 < 25 THEN 'timeout' ELSE 'completed' END,
                  NULL,
                  $now::TIMESTAMPTZ - to_seconds((hash(i * 13) % ($days * 86400))::BIGINT),
                  (hash(i * 17) % 400)::BIGINT, 0.01, 'jsonl', 'bench', 'task_id', '{}', 0
           FROM range($n) r(i)""",
        {"tasks": shape.tasks(n), "now": NOW, "days": shape.history_days, "n": n},
    )
    con.execute(
        """INSERT INTO run_tasks
           SELECT 't' || i, 'active', 'active', 5, 'prompt ' || i, NULL, FALSE, 'bench', 0
           FROM range($tasks) r(i)""",
        {"tasks": shape.tasks(n)},
    )
    con.execute(
        """INSERT INTO run_steps
           SELECT 'k' || i, 's' || (hash(i) % $n), i, NULL, 'tool_call', 'skill', NULL, NULL,
                  'skill' || (hash(i * 3) % $skills), 'bench', 0
           FROM range($steps) r(i)""",
        {"n": n, "steps": shape.steps(n), "skills": shape.skills(n)},
    )
    con.close()


def interleaved(fns: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Median seconds of each function, run in turn ``repeat`` times."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for turn in range(repeat):
        for name in names if turn % 2 == 0 else names[::-1]:
            start = time.perf_counter()
            fns[name]()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def process(args: list[str]) -> Callable[[], object]:
    def run() -> object:
        return subprocess.run(args, check=True, capture_output=True)

    return run


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def measure(shape_name: str, n: int, repeat: int, work: Path) -> tuple[float, float, int]:
    """(whole-process ratio, in-process ratio, findings) for one shape at one size."""
    shape = SHAPES[shape_name]
    path = work / f"{shape_name}-{n}.duckdb"
    lite = path.with_suffix(".sqlite")
    build(path, n, shape)
    copy_to_sqlite(path, lite)
    config = replace(CycleConfig(), lookback_seconds=shape.lookback_seconds)
    con = duckdb.connect(str(path), read_only=True)
    ref = sqlite3.connect(lite)
    ours = evaluate(con, NOW, config)
    theirs = reference(ref, NOW, shape.lookback_seconds)
    if {(f.rule, f.subject_id, f.count) for f in ours} != set(theirs):
        raise SystemExit(f"{shape_name} at {n:,}: the pass and the reference disagree; no timing")
    inner = interleaved(
        {
            "reference": lambda: reference(ref, NOW, shape.lookback_seconds),
            "pass": lambda: evaluate(con, NOW, config),
        },
        repeat,
    )
    inner_load = load()
    con.close()
    ref.close()
    cli = [sys.executable, "-m", "agent_reflection", "cycle", "run", "--db", str(path)]
    cli += ["--now", NOW.isoformat(), "--lookback", str(shape.lookback_seconds)]
    plain = [sys.executable, str(REFERENCE), str(lite), NOW.isoformat()]
    plain += [str(shape.lookback_seconds)]
    whole = interleaved({"reference": process(plain), "pass": process(cli)}, repeat)
    whole_load = load()
    in_ratio = inner["pass"] / inner["reference"]
    whole_ratio = whole["pass"] / whole["reference"]
    print(
        f"{shape_name:<24} {n:>9,} {len(ours):>8,}  whole process: cycle run {whole['pass']:5.2f}"
        f" s, reference {whole['reference']:5.2f} s, {whole_ratio:4.2f}x ({whole_load})  "
        f"in process: pass {inner['pass'] * 1000:7.1f} ms, reference "
        f"{inner['reference'] * 1000:7.1f} ms, {in_ratio:4.2f}x ({inner_load})",
        flush=True,
    )
    path.unlink()
    lite.unlink()
    return whole_ratio, in_ratio, len(ours)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,300000,1000000")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    shapes = args.shapes.split(",")
    print(f"medians of {args.repeat} interleaved runs; machine: {os.cpu_count()} cores")
    print(f"{'shape':<24} {'outcomes':>9} {'findings':>8}")
    verdicts = []
    with tempfile.TemporaryDirectory() as tmp:
        for shape_name in shapes:
            ratios = [measure(shape_name, n, args.repeat, Path(tmp)) for n in sizes]
            worst_whole = max(r[0] for r in ratios)
            worst_in = max(r[1] for r in ratios)
            met = "meets" if worst_in <= GOAL else "MISSES"
            verdicts.append(
                f"verdict {shape_name}: the rule pass at most {worst_in:.2f}x the SQLite + Python "
                f"reference over {len(sizes)} sizes (same findings), {met} the goal <= {GOAL:g}x "
                f"(whole process, start-up included: at most {worst_whole:.2f}x)"
            )
    print("\n".join(verdicts))


if __name__ == "__main__":
    main()
