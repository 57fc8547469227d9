"""Tier-1 rule pass against one scan of five columns, on three data shapes and several sizes.

    .venv/bin/python bench/cycle.py [--sizes 100000,300000,1000000] [--repeat 7]
                                    [--shapes many_tasks,few_tasks_many_findings,long_lookback]
                                    [--profile] [--bounds]

Goal (issue 17): the rule pass costs at most 3x the baseline on every shape.

Baseline, stated: one ungrouped DuckDB scan of the five columns of run_outcomes the pass reads
(task_id, session_id, status, finished_at, result_length), the same database file on both sides:

    SELECT count(task_id), count(session_id), count(status), max(finished_at),
           sum(result_length) FROM run_outcomes

Two figures per shape and size, each the median of ``--repeat`` interleaved runs (pass and
baseline take turns, so the machine's load weighs on both alike):

* whole process, as a user runs it: ``python -m agent_reflection cycle run --db FILE --now ...
  --lookback ...`` (start-up, the pass, storing its findings and events, printing them) against
  ``python -c`` opening the same file read-only and running the scan (start-up included);
* in process: ``cycle.rules.evaluate`` against the scan, on one open connection.

``--profile`` adds where the pass's time goes: the statement's floor (the same pass on an empty
database: parsing, planning and starting every operator, which no data size changes) and, per
shape and size, DuckDB's operators with the most time (summed over threads, so CPU rather than
wall time) from one profiled run after the timed ones.

``--bounds`` adds lower bounds: work that any pass giving these findings must do, each part alone
timed against the same scan (interleaved, medians), on the same database:

* window group-by: one GROUP BY task_id over the window's outcomes (counts, latest time,
  longest result), which every task rule needs;
* skill-read join: the steps that read a skill semi-joined with the failing outcomes of the
  window, grouped by skill (the bare join of ``skill_failure_correlation``, without its
  steps-only fallback, distinct counts or texts);
* window to Arrow: fetching the window's five columns out of DuckDB, the first step of a pass in
  Python (NumPy / Arrow) before any rule is computed;
* NumPy sort: ``np.lexsort`` of the window by task and time (64-bit hashes of the task ids), the
  ordering a Python pass needs for streaks;
* findings to columns: turning the pass's own finding rows into ``Findings`` (the return type
  of ``evaluate``: one column per field, no object per finding), nothing else.

The verdict line per shape is on the in-process pass at every size (the goal's "rule pass"); the
whole-process ratio is printed beside it. The load average is printed with every figure.

Shapes (outcomes spread over the history, 20 % failed, 5 % timeout, lengths 0-399):

* many_tasks: n/10 tasks, 30 days of history, a 1-day window; n/5 steps reading 50 skills.
* few_tasks_many_findings: 100 tasks, 2 days, a 1-day window; n steps reading n/40 skills, so
  most skills are flagged (about 2 % of n findings, most of them skill_failure_correlation).
* long_lookback: 1,000 tasks, 30 days, a 30-day window (every outcome in it); n/5 steps, 50
  skills.
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
from collections.abc import Callable
from dataclasses import astuple, dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from agent_reflection.cycle.config import CycleConfig
from agent_reflection.cycle.findings import Findings
from agent_reflection.cycle.rules import evaluate
from agent_reflection.store import db

NOW = datetime(2025, 6, 1, tzinfo=UTC)
GOAL = 3.0
#: The baseline of the goal: one scan of the columns the rules read from run_outcomes.
SCAN = (
    "SELECT count(task_id), count(session_id), count(status), max(finished_at), "
    "sum(result_length) FROM run_outcomes"
)
DAY = 86_400
#: ``--bounds``: parts of the work any pass must do, each timed alone against SCAN.
WINDOW = "finished_at > $start::TIMESTAMPTZ AND finished_at <= $now::TIMESTAMPTZ"
BOUND_WINDOW_GROUP = f"""
    SELECT count(*), sum(n), sum(failing), max(latest_at), max(longest) FROM (
        SELECT task_id, count(*) AS n,
               count(*) FILTER (WHERE status IN ('failed', 'timeout')) AS failing,
               max(finished_at) AS latest_at, max(result_length) AS longest
        FROM run_outcomes WHERE {WINDOW} GROUP BY task_id)"""
BOUND_SKILL_JOIN = f"""
    SELECT count(*), sum(reads) FROM (
        SELECT s.skill, count(*) AS reads
        FROM run_steps s
        SEMI JOIN (SELECT origin, session_id FROM run_outcomes
                   WHERE status IN ('failed', 'timeout') AND {WINDOW}) o
            ON o.origin = s.origin AND o.session_id = s.session_id
        WHERE s.skill IS NOT NULL AND s.action = 'tool_call'
        GROUP BY s.skill)"""
BOUND_FETCH = (
    "SELECT task_id, session_id, status, finished_at, result_length FROM run_outcomes "
    f"WHERE {WINDOW}"
)
BOUND_SORT_KEYS = (
    f"SELECT hash(task_id) AS task, epoch_us(finished_at) AS at FROM run_outcomes WHERE {WINDOW}"
)


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
    for _ in range(repeat):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def process(args: list[str]) -> Callable[[], object]:
    def run() -> object:
        return subprocess.run(args, check=True, capture_output=True)

    return run


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def operators(node: dict[str, Any]) -> list[tuple[float, str, int]]:
    """(seconds, operator name, rows out) of a DuckDB JSON profile node and every node below."""
    found = [
        (
            float(node.get("operator_timing", 0.0)),
            str(node.get("operator_name", "")),
            int(node.get("operator_cardinality", 0)),
        )
    ]
    for child in node.get("children", []):
        found.extend(operators(child))
    return found


def profile(con: duckdb.DuckDBPyConnection, config: CycleConfig, out: Path) -> str:
    """The pass's five costliest DuckDB operators, from one profiled run."""
    con.execute("PRAGMA enable_profiling = 'json'")
    con.execute(f"PRAGMA profiling_output = '{out}'")
    evaluate(con, NOW, config)
    con.execute("PRAGMA disable_profiling")
    tree = json.loads(out.read_text("utf-8"))
    found = sorted((op for child in tree["children"] for op in operators(child)), reverse=True)
    return (
        f"    profile: latency {tree['latency'] * 1000:.1f} ms, operators' CPU "
        f"{sum(op[0] for op in found) * 1000:.1f} ms; costliest: "
        + "; ".join(f"{name} {t * 1000:.1f} ms ({rows:,} rows)" for t, name, rows in found[:5])
    )


def floor(repeat: int) -> None:
    """Print the pass on an empty database: the cost no data size takes away."""
    con = db.connect(":memory:")
    evaluate(con, NOW, CycleConfig())
    took = interleaved({"pass": lambda: evaluate(con, NOW, CycleConfig())}, repeat)["pass"]
    print(f"statement floor (the pass on an empty database): {took * 1000:.1f} ms ({load()})")
    con.close()


def bounds(
    con: duckdb.DuckDBPyConnection, config: CycleConfig, repeat: int, rows: list[tuple[Any, ...]]
) -> str:
    """Each lower bound of the pass alone, against the scan (interleaved medians)."""
    window = {"start": NOW - timedelta(seconds=config.lookback_seconds), "now": NOW}
    keys = con.execute(BOUND_SORT_KEYS, window).fetchnumpy()
    parts: dict[str, Callable[[], object]] = {
        "scan": lambda: con.execute(SCAN).fetchall(),
        "window group-by": lambda: con.execute(BOUND_WINDOW_GROUP, window).fetchall(),
        "skill-read join": lambda: con.execute(BOUND_SKILL_JOIN, window).fetchall(),
        "window to Arrow": lambda: con.execute(BOUND_FETCH, window).to_arrow_table(),
        "NumPy sort": lambda: np.lexsort((keys["at"], keys["task"])),
        "findings to columns": lambda: Findings.from_rows(rows),
    }
    for part in parts.values():
        part()  # warm-up
    took = interleaved(parts, repeat)
    return (
        "    bounds, each alone against the scan: "
        + "; ".join(
            f"{name} {t * 1000:.1f} ms = {t / took['scan']:.1f}x"
            for name, t in took.items()
            if name != "scan"
        )
        + f" ({load()})"
    )


def measure(
    shape_name: str,
    n: int,
    repeat: int,
    work: Path,
    with_profile: bool = False,
    with_bounds: bool = False,
) -> tuple[float, float, int]:
    """(in-process ratio, whole-process ratio, findings) for one shape at one size."""
    shape = SHAPES[shape_name]
    path = work / f"{shape_name}-{n}.duckdb"
    build(path, n, shape)
    config = replace(CycleConfig(), lookback_seconds=shape.lookback_seconds)
    con = duckdb.connect(str(path), read_only=True)
    found = evaluate(con, NOW, config)  # warm-up
    findings = len(found)
    inner = interleaved(
        {"scan": lambda: con.execute(SCAN).fetchall(), "pass": lambda: evaluate(con, NOW, config)},
        repeat,
    )
    inner_load = load()
    profiled = profile(con, config, work / "profile.json") if with_profile else ""
    bounded = bounds(con, config, repeat, [astuple(f) for f in found]) if with_bounds else ""
    con.close()
    cli = [sys.executable, "-m", "agent_reflection", "cycle", "run", "--db", str(path)]
    cli += ["--now", NOW.isoformat(), "--lookback", str(shape.lookback_seconds)]
    scan_process = [
        sys.executable,
        "-c",
        "import sys, duckdb; "
        "duckdb.connect(sys.argv[1], read_only=True).execute(sys.argv[2]).fetchall()",
        str(path),
        SCAN,
    ]
    whole = interleaved({"scan": process(scan_process), "pass": process(cli)}, repeat)
    whole_load = load()
    in_ratio = inner["pass"] / inner["scan"]
    whole_ratio = whole["pass"] / whole["scan"]
    print(
        f"{shape_name:<24} {n:>9,} {findings:>8,}  in process: pass {inner['pass'] * 1000:7.1f}"
        f" ms, scan {inner['scan'] * 1000:6.1f} ms, {in_ratio:4.1f}x ({inner_load})  "
        f"whole process: cycle run {whole['pass']:5.2f} s, scan {whole['scan']:5.2f} s, "
        f"{whole_ratio:4.1f}x ({whole_load})",
        flush=True,
    )
    if profiled:
        print(profiled, flush=True)
    if bounded:
        print(bounded, flush=True)
    path.unlink()
    return in_ratio, whole_ratio, findings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,300000,1000000")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--profile", action="store_true", help="print where the time goes")
    parser.add_argument(
        "--bounds", action="store_true", help="time the parts any pass must do, against the scan"
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    shapes = args.shapes.split(",")
    print(f"medians of {args.repeat} interleaved runs; machine: {os.cpu_count()} cores")
    if args.profile:
        floor(args.repeat)
    print(f"{'shape':<24} {'outcomes':>9} {'findings':>8}")
    verdicts = []
    with tempfile.TemporaryDirectory() as tmp:
        for shape_name in shapes:
            ratios = [
                measure(shape_name, n, args.repeat, Path(tmp), args.profile, args.bounds)
                for n in sizes
            ]
            worst_in = max(r[0] for r in ratios)
            worst_whole = max(r[1] for r in ratios)
            met = "meets" if worst_in <= GOAL else "MISSES"
            verdicts.append(
                f"verdict {shape_name}: rule pass at most {worst_in:.1f}x the 5-column scan over "
                f"{len(sizes)} sizes, {met} the goal <= {GOAL:g}x "
                f"(whole process: at most {worst_whole:.1f}x)"
            )
    print("\n".join(verdicts))


if __name__ == "__main__":
    main()
