"""Tier-1 pass over 1,000,000 synthetic outcomes, as a ratio to one DuckDB scan of the table.

    .venv/bin/python bench/cycle.py [--outcomes 1000000] [--repeat 3]

Synthetic data: 10,000 tasks, outcomes spread over 30 days (about 1/30 inside the 24 h window),
20 % failed, 5 % timeout; 200,000 steps, a tenth of them reading one of 50 skills. Both timings
run in this process on the same in-memory database; the median of ``--repeat`` runs is used.
Target: ratio <= 5.

The pass materialises the window (``cycle_window``), then reads older history only for tasks
whose streak may reach back before the window (all their window outcomes failed) or whose
recent results are unknown inside it; the baseline is an ungrouped aggregate, so each grouped
step of the rules costs about one to two baseline scans.
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import UTC, datetime

from agent_reflection import db
from agent_reflection.cycle.config import CycleConfig
from agent_reflection.cycle.rules import evaluate

NOW = datetime(2025, 6, 1, tzinfo=UTC)
#: One scan of the columns the rules read (the baseline of the target).
SCAN = (
    "SELECT count(status), sum(result_length), max(finished_at), count(task_id) FROM run_outcomes"
)
#: One scan of every column (for context: what reading the whole table costs).
SCAN_ALL = "SELECT count(COLUMNS(*)) FROM run_outcomes"


def build(n: int) -> object:
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


def timed(fn: object, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outcomes", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    con = build(args.outcomes)
    config = CycleConfig()
    scan = timed(lambda: con.execute(SCAN).fetchall(), args.repeat)  # type: ignore[attr-defined]
    scan_all = timed(lambda: con.execute(SCAN_ALL).fetchall(), args.repeat)  # type: ignore[attr-defined]
    findings: list[int] = []
    tier1 = timed(lambda: findings.append(len(evaluate(con, NOW, config))), args.repeat)  # type: ignore[arg-type]
    print(f"outcomes: {args.outcomes:,}; findings per pass: {findings[-1]:,}")
    print(f"DuckDB scan of run_outcomes:  {scan * 1000:.1f} ms (median of {args.repeat})")
    print(f"Tier-1 pass (4 rules):        {tier1 * 1000:.1f} ms (median of {args.repeat})")
    print(f"DuckDB scan of every column:  {scan_all * 1000:.1f} ms (median of {args.repeat})")
    print(f"ratio tier-1 / scan: {tier1 / scan:.1f}x (target <= 5x)")
    print(f"ratio tier-1 / scan of every column: {tier1 / scan_all:.1f}x")


if __name__ == "__main__":
    main()
