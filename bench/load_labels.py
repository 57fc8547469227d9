"""Benchmark: ``load_labels`` against DuckDB's own ``read_json`` over the same JSONL file.

For each size (default 10,000, 100,000 and 1,000,000 rows) it writes a labels file of
``{question_id, confidence, correct, model}`` records (1 in 1,000 invalid, so the reject path
runs too), then times in fresh child processes, alternating, ``--repeat`` times each:

  ours    ``agent_reflection.load.labels.load_labels`` into a fresh DuckDB file
          (decodes, validates and hashes every record, keeps rejects, records the load);
  duckdb  ``CREATE TABLE t AS SELECT * FROM read_json('FILE')`` into a fresh DuckDB file
          (no validation: the floor of what reading this file into DuckDB costs).

It prints every run, the median wall time and rows/s of each, the ratio ours/duckdb, and a
one-line verdict against the goal: >= 100,000 rows/s at 1,000,000 rows.

    python bench/load_labels.py
    python bench/load_labels.py --sizes 100000 --repeat 5
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

GOAL_ROWS_PER_S = 100_000
GOAL_SIZE = 1_000_000
MODELS = ("gpt-4o", "claude-3-5-sonnet", "gemini-1.5-pro", "o1")


def generate(path: Path, n: int, seed: int = 11) -> int:
    """Write ``n`` label records (every 1,000th one invalid); returns the valid count."""
    rnd = random.Random(seed)
    valid = 0
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            if i % 1000 == 999:
                out.write(json.dumps({"question_id": f"q{i}", "confidence": 1.5}) + "\n")
                continue
            record = {
                "question_id": f"q{i:07d}",
                "confidence": round(rnd.random(), 3),
                "correct": rnd.random() < 0.4,
                "model": rnd.choice(MODELS),
            }
            out.write(json.dumps(record) + "\n")
            valid += 1
    return valid


# --- the contenders, each run in a fresh child process -------------------------------------


def run_ours(file: str, db: str) -> dict[str, Any]:
    from agent_reflection.load.labels import load_labels
    from agent_reflection.store.db import connect

    con = connect(db)
    started = time.perf_counter()
    summary = load_labels(con, file)
    wall = time.perf_counter() - started
    con.close()
    assert summary.reconciles, summary
    return {"wall": wall, "rows": summary.read, "loaded": summary.loaded}


def run_duckdb(file: str, db: str) -> dict[str, Any]:
    import duckdb

    con = duckdb.connect(db)
    started = time.perf_counter()
    con.execute("CREATE TABLE t AS SELECT * FROM read_json(?)", [file])
    wall = time.perf_counter() - started
    row = con.execute("SELECT count(*) FROM t").fetchone()
    con.close()
    return {"wall": wall, "rows": row[0] if row else 0, "loaded": row[0] if row else 0}


CONTENDERS = {"ours": run_ours, "duckdb": run_duckdb}


def measure(contender: str, file: Path, workdir: Path) -> dict[str, Any]:
    db = workdir / f"{contender}.duckdb"
    for stale in (db, Path(f"{db}.wal")):
        stale.unlink(missing_ok=True)
    cmd = [sys.executable, __file__, "--child", contender, str(file), str(db)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{contender} failed (exit {done.returncode}): {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, GOAL_SIZE])
    parser.add_argument("--repeat", type=int, default=3, help="runs per contender and size")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        contender, file, db = args.child
        print(json.dumps(CONTENDERS[contender](file, db)))
        return 0

    workdir = Path(tempfile.mkdtemp(prefix="bench-labels-"))
    goal_rate: float | None = None
    for n in args.sizes:
        file = workdir / f"labels-{n}.jsonl"
        valid = generate(file, n)
        print(f"{n:,} rows ({valid:,} valid, {file.stat().st_size / 2**20:,.1f} MiB)")
        walls: dict[str, list[float]] = {name: [] for name in CONTENDERS}
        for attempt in range(args.repeat):
            order = list(CONTENDERS) if attempt % 2 == 0 else list(CONTENDERS)[::-1]
            for name in order:
                r = measure(name, file, workdir)
                walls[name].append(r["wall"])
                print(f"  {name:6s} run {attempt + 1}: {r['wall']:7.2f}s  loaded {r['loaded']:,}")
        ours, duck = (statistics.median(walls[name]) for name in ("ours", "duckdb"))
        rate = n / ours if ours else float("inf")
        print(
            f"  median: ours {ours:.2f}s ({rate:,.0f} rows/s), duckdb read_json {duck:.2f}s "
            f"({n / duck if duck else float('inf'):,.0f} rows/s), ratio ours/duckdb "
            f"{ours / duck if duck else float('inf'):.1f}x"
        )
        if n == GOAL_SIZE:
            goal_rate = rate
        file.unlink()
    if goal_rate is None:
        print(f"verdict: not measured at {GOAL_SIZE:,} rows (pass --sizes {GOAL_SIZE})")
    else:
        met = "meets" if goal_rate >= GOAL_ROWS_PER_S else "misses"
        print(
            f"verdict: {met} the goal: {goal_rate:,.0f} rows/s at {GOAL_SIZE:,} rows "
            f"(goal >= {GOAL_ROWS_PER_S:,})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
