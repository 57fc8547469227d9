"""Tier-1 pass over 1,000,000 synthetic outcomes, as a ratio to one DuckDB scan of the table.

    .venv/bin/python bench/cycle.py [--outcomes 1000000] [--repeat 15]

Synthetic data: 10,000 tasks, outcomes spread over 30 days (about 1/30 inside the 24 h window),
20 % failed, 5 % timeout; 200,000 steps, a tenth of them reading one of 50 skills. Both timings
run in this process on the same in-memory database, taking turns; the median of ``--repeat``
runs of each is used.
Target: ratio <= 5.

The pass is one SQL statement (``sql/cycle/rules.sql``). It reads run_outcomes once, over the
window and the seven lookbacks before it, which settle every task here whose answer lies before
the window (all window outcomes failed, or no result length in the window); the rest of the
history would be read only for tasks they do not settle.
The baseline reads the five columns of run_outcomes the pass reads (task_id, session_id,
status, finished_at, result_length) in one ungrouped scan; the older narrow baseline left out
session_id, which the pass needs for the order of ties, the streak's sessions and the skill join.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime

import duckdb

from agent_reflection.cycle.config import CycleConfig
from agent_reflection.cycle.rules import evaluate
from agent_reflection.store import db

NOW = datetime(2025, 6, 1, tzinfo=UTC)
#: One scan of the columns the rules read from run_outcomes (the baseline of the target).
SCAN = (
    "SELECT count(task_id), count(session_id), count(status), max(finished_at), "
    "sum(result_length) FROM run_outcomes"
)
#: One scan of every column (for context: what reading the whole table costs).
SCAN_ALL = "SELECT count(COLUMNS(*)) FROM run_outcomes"


def build(n: int) -> duckdb.DuckDBPyConnection:
    con = db.connect(":memory:")
    con.execute(
        """INSERT INTO run_outcomes
           SELECT 's' || i, 't' || (hash(i) % 10000),
                  'objective ' || i,
                  CASE WHEN hash(i * 7) % 100 < 20 THEN 'failed'
                       WHEN hash(i * 7) % 100 < 25 THEN 'timeout' ELSE 'completed' END,
                  NULL,
                  ?::TIMESTAMPTZ - to_seconds((hash(i * 13) % (30 * 86400))::BIGINT),
                  (hash(i * 17) % 400)::BIGINT, 0.01, 'jsonl', 'bench', 'task_id', '{}', 0
           FROM range(?) r(i)""",
        [NOW, n],
    )
    con.execute(
        """INSERT INTO run_tasks
           SELECT 't' || i, 'active', 'active', 5, 'prompt ' || i, NULL, FALSE, 'bench', 0
           FROM range(10000) r(i)"""
    )
    con.execute(
        """INSERT INTO run_steps
           SELECT 'k' || i, 's' || (hash(i) % ?), i, NULL, 'tool_call', 'skill', NULL, NULL,
                  CASE WHEN i % 10 = 0 THEN 'skill' || (i % 50) END, 'bench', 0
           FROM range(200000) r(i)""",
        [n],
    )
    return con


def interleaved(fns: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Median seconds of each function, run in turn ``repeat`` times: the machine's load then
    weighs on the pass and its baselines alike."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outcomes", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    con = build(args.outcomes)
    config = CycleConfig()
    findings = len(evaluate(con, NOW, config))  # warm-up
    t = interleaved(
        {
            "scan": lambda: con.execute(SCAN).fetchall(),
            "tier1": lambda: evaluate(con, NOW, config),
            "scan_all": lambda: con.execute(SCAN_ALL).fetchall(),
        },
        args.repeat,
    )
    n = args.repeat
    print(f"outcomes: {args.outcomes:,}; findings per pass: {findings:,}")
    print(f"DuckDB scan of the 5 columns: {t['scan'] * 1000:.1f} ms (median of {n})")
    print(f"Tier-1 pass (4 rules):        {t['tier1'] * 1000:.1f} ms (median of {n})")
    print(f"DuckDB scan of every column:  {t['scan_all'] * 1000:.1f} ms (median of {n})")
    print(f"ratio tier-1 / scan: {t['tier1'] / t['scan']:.1f}x (target <= 5x)")
    print(f"ratio tier-1 / scan of every column: {t['tier1'] / t['scan_all']:.1f}x")


if __name__ == "__main__":
    main()
