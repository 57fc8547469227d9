"""Benchmark: ``reflect load labels`` against DuckDB's own ``read_json`` of the same JSONL file.

Goal (issue 36): ``reflect load labels`` of a 1,000,000-row file takes <= 2x the time and <= 2x
the memory of the baseline below, both as whole processes (start-up included): the median wall
time of each, and the largest peak RSS of any run of each (memory is a bound: the worst run
counts). The verdict line is on those two ratios. (Issue 17's goal, >= 100,000 rows/s, is
printed beside them as rows/s.)

Baseline, stated: DuckDB's ``read_json`` of the same file with its default options, into a
table of a fresh DuckDB file, run as a whole process too (``python -c`` with the venv's duckdb
Python client; no duckdb command-line tool is used). The path is written into the SQL, not
bound as a parameter, so the baseline does not pay the client's pandas import on a
parametrised ``execute``: the stricter floor. DuckDB's progress bar is off (it prints to
stdout after 2 s; ours runs ``--silent``). It validates, hashes and records nothing.

For each size (default 10,000, 100,000 and 1,000,000 rows) it writes a labels file of
``{question_id, confidence, correct, model}`` records (1 in 1,000 invalid, so the reject path
runs too), then times, in turns whose order reverses every other turn, ``--repeat`` times each,
every run into a fresh DuckDB file:

  reflect        ``python -m agent_reflection load labels FILE --db NEW --silent``;
  python -c      the baseline above;
  in process     ``load_labels`` and the same ``read_json``, each timed inside a fresh child
                 process around the call alone (start-up and imports not counted): the
                 figure beside the whole-process one.

It prints every run with the load average it started at, the medians, rows/s, the peaks and the
ratios reflect / baseline per size, and one verdict line.

    python bench/load_labels.py
    python bench/load_labels.py --sizes 10000 100000 --repeat 5
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from _measure import MIB, Run, interleaved, load_range, median_wall, run_process

#: the most ``reflect load labels`` may take of the baseline's time, and of its peak memory
GOAL_RATIO = 2.0
GOAL_SIZE = 1_000_000
REFLECT, BASELINE = "reflect load labels", "python -c read_json"
MODELS = ("gpt-4o", "claude-3-5-sonnet", "gemini-1.5-pro", "o1")
#: the baseline as a whole process: argv[1] the database, argv[2] the file
BASELINE_CODE = (
    "import sys, duckdb\n"
    "con = duckdb.connect(sys.argv[1])\n"
    "con.execute('SET enable_progress_bar = false')\n"
    'path = sys.argv[2].replace("\'", "\'\'")\n'
    "con.execute(f\"CREATE TABLE t AS SELECT * FROM read_json('{path}')\")\n"
    "print(con.execute('SELECT count(*) FROM t').fetchone()[0])\n"
    "con.close()\n"
)


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


# --- the in-process figures, each timed inside a fresh child process -----------------------


def child_ours(file: str, db: str) -> dict[str, Any]:
    from agent_reflection.load.labels import load_labels
    from agent_reflection.store.db import connect

    con = connect(db)
    started = time.perf_counter()
    summary = load_labels(con, file)
    wall = time.perf_counter() - started
    con.close()
    assert summary.reconciles, summary
    return {"wall": wall, "read": summary.read, "loaded": summary.loaded}


def child_duckdb(file: str, db: str) -> dict[str, Any]:
    import duckdb

    con = duckdb.connect(db)
    con.execute("SET enable_progress_bar = false")  # it prints to stdout after 2 s
    path = file.replace("'", "''")
    started = time.perf_counter()
    con.execute(f"CREATE TABLE t AS SELECT * FROM read_json('{path}')")
    wall = time.perf_counter() - started
    row = con.execute("SELECT count(*) FROM t").fetchone()
    con.close()
    return {"wall": wall, "read": row[0] if row else 0, "loaded": row[0] if row else 0}


CHILDREN = {"ours": child_ours, "duckdb": child_duckdb}


class Contenders:
    """The four timed commands for one file; each run writes a fresh database."""

    def __init__(self, file: Path, workdir: Path, rows: int, valid: int) -> None:
        self.file, self.workdir, self.count = file, workdir, 0
        self.rows, self.valid = rows, valid

    def fresh_db(self) -> Path:
        self.count += 1
        return self.workdir / f"run{self.count}.duckdb"

    def reflect(self) -> Run:
        command = [sys.executable, "-m", "agent_reflection", "load", "labels", str(self.file)]
        run = run_process([*command, "--db", str(self.fresh_db()), "--silent", "--json"])
        (summary,) = json.loads(run.stdout)["loads"]
        if (summary["read"], summary["loaded"]) != (self.rows, self.valid):
            raise SystemExit(
                f"reflect load labels read/loaded {summary}, not {self.rows}/{self.valid}"
            )
        return run

    def baseline(self) -> Run:
        command = [sys.executable, "-c", BASELINE_CODE, str(self.fresh_db()), str(self.file)]
        run = run_process(command)
        if int(run.stdout) != self.rows:
            raise SystemExit(f"read_json made {run.stdout.strip()} rows, not {self.rows}")
        return run

    def in_process(self, which: str) -> Run:
        command = [sys.executable, __file__, "--child", which, str(self.file), str(self.fresh_db())]
        outer = run_process(command)
        result = json.loads(outer.stdout.strip().splitlines()[-1])
        return Run(wall=result["wall"], load=outer.load)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, GOAL_SIZE])
    parser.add_argument("--repeat", type=int, default=3, help="turns per size (default 3)")
    parser.add_argument("--no-in-process", action="store_true", help="whole processes only")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        which, file, db = args.child
        print(json.dumps(CHILDREN[which](file, db)))
        return 0

    judged: tuple[float, float] | None = None  # (time ratio, memory ratio) at GOAL_SIZE
    with tempfile.TemporaryDirectory(prefix="bench-labels-") as tmp:
        workdir = Path(tmp)
        for n in args.sizes:
            file = workdir / f"labels-{n}.jsonl"
            valid = generate(file, n)
            print(f"{n:,} rows ({valid:,} valid, {file.stat().st_size / MIB:,.1f} MiB)")
            c = Contenders(file, workdir, n, valid)
            contenders: dict[str, Callable[[], Run]] = {REFLECT: c.reflect, BASELINE: c.baseline}
            if not args.no_in_process:
                contenders["load_labels (in process)"] = partial(c.in_process, "ours")
                contenders["read_json (in process)"] = partial(c.in_process, "duckdb")
            runs = interleaved(contenders, args.repeat)
            ours, base = median_wall(runs[REFLECT]), median_wall(runs[BASELINE])
            # memory is a bound: the worst run of each counts
            peak_ours, peak_base = (max(r.max_rss for r in runs[k]) for k in (REFLECT, BASELINE))
            print(
                f"  whole process, medians of {args.repeat}: {REFLECT} {ours:.2f}s "
                f"({n / ours:,.0f} rows/s), {BASELINE} {base:.2f}s ({n / base:,.0f} rows/s), "
                f"ratio {ours / base:.1f}x; peak RSS {peak_ours / MIB:,.0f} MiB vs "
                f"{peak_base / MIB:,.0f} MiB, ratio {peak_ours / peak_base:.1f}x  "
                f"({load_range(runs)})"
            )
            if not args.no_in_process:
                lib, duck = (
                    median_wall(runs[k])
                    for k in ("load_labels (in process)", "read_json (in process)")
                )
                print(
                    f"  in process, medians of {args.repeat}: load_labels {lib:.2f}s "
                    f"({n / lib:,.0f} rows/s), read_json {duck:.2f}s, ratio {lib / duck:.1f}x"
                )
            if n == GOAL_SIZE:
                judged = (ours / base, peak_ours / peak_base)
            for db in workdir.glob("run*.duckdb*"):
                db.unlink()
            file.unlink()
    goal = f"<= {GOAL_RATIO:g}x {BASELINE}'s time and peak RSS at {GOAL_SIZE:,} rows"
    if judged is None:
        print(f"verdict: not judged: the goal is {goal} (pass --sizes {GOAL_SIZE})")
    else:
        time_ratio, memory_ratio = judged
        met = "meets" if max(judged) <= GOAL_RATIO else "MISSES"
        print(
            f"verdict: {REFLECT} as a whole process, {time_ratio:.2f}x the time and "
            f"{memory_ratio:.2f}x the peak RSS at {GOAL_SIZE:,} rows: {met} the goal {goal}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
