"""Benchmark: ``reflect load sidecars`` against DuckDB's own ``read_json`` over the same files.

Goal (issue 17): as a whole process (start-up included), ``reflect load sidecars`` takes
<= 1.0x the baseline's wall time at 100,000 files, and its whole process tree (main process
plus parser workers) never holds more than 1 GiB resident, at any size.

Baseline, stated: ``CREATE TABLE t AS SELECT * FROM read_json('DIR/**/*.reflection.json')``
into a fresh DuckDB file with ``SET preserve_insertion_order = false`` (with the default it
needs over 13 GiB for 100k files), run as a whole process too (``python -c`` with the venv's
duckdb Python client; no duckdb command-line tool), its progress bar off (it prints to stdout
after 2 s; ours runs ``--silent``). Ours runs with its defaults, as a user
runs it: redaction on, parser workers as the loader picks them. The baseline validates,
hashes, redacts and records nothing: it is the floor.

For each size (default 1,000, 10,000 and 100,000 files; ``--with-1m`` adds 1,000,000, which
takes long) it generates that many varied, valid reflection.v1 sidecars (untimed), then times,
in turns whose order reverses every other turn, ``--repeat`` times each, every run into a
fresh DuckDB file:

  reflect      ``python -m agent_reflection load sidecars DIR --db NEW --silent --json``;
  python -c    the baseline above;
  in process   ``load_sidecars`` and the same ``read_json``, each timed inside a fresh child
               process around the call alone (start-up and imports not counted).

Peak memory of a whole-process run is the largest total RSS of its process tree, sampled every
20 ms from /proc, and ``ru_maxrss`` of its largest single process (from ``wait4``, which a
sample can miss); the goal is judged on the larger of the two, in the worst run. It prints
every run with the load average it started at, the medians, files/s, the ratio
reflect / baseline per size and one verdict line.

    python bench/load_sidecars.py
    python bench/load_sidecars.py --sizes 1000 20000 --repeat 5
    python bench/load_sidecars.py --with-1m --repeat 1 --no-in-process
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _measure import GIB, MIB, Run, interleaved, load_range, median_wall, run_process

SURFACES = ("auth", "data", "infra", "ui", "build", "test", "docs", "none")
GLOB = "**/*.reflection.json"
GOAL_RATIO = 1.0
GOAL_SIZE = 100_000
#: the baseline as a whole process: argv[1] the database, argv[2] the glob
BASELINE_CODE = (
    "import sys, duckdb\n"
    "con = duckdb.connect(sys.argv[1])\n"
    "con.execute('SET enable_progress_bar = false')\n"
    "con.execute('SET preserve_insertion_order = false')\n"
    'glob = sys.argv[2].replace("\'", "\'\'")\n'
    "con.execute(f\"CREATE TABLE t AS SELECT * FROM read_json('{glob}')\")\n"
    "print(con.execute('SELECT count(*) FROM t').fetchone()[0])\n"
    "con.close()\n"
)


def generate(folder: Path, n: int, seed: int = 7) -> int:
    """Write ``n`` varied, valid sidecars as the Stop hook would (indent 2), 1,000 per folder."""
    rnd = random.Random(seed)
    total = 0
    for i in range(n):
        day = folder / f"2026-{1 + i // 28000 % 12:02d}-{1 + i // 1000 % 28:02d}"
        if i % 1000 == 0:
            day.mkdir(parents=True, exist_ok=True)
        session = f"{rnd.getrandbits(64):016x}-{i:07d}"
        confident = rnd.random() < 0.7
        record = {
            "schema": "reflection.v1",
            "task_ref": f"PROJ-{rnd.randrange(1, 5000)}",
            "agent": rnd.choice(("claude-code", "codex", "reviewer", "unknown")),
            "session_id": session,
            "timestamp": f"{day.name}T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z",
            "repo": rnd.choice(("flask", "kafka", "agent-reflection", "webapp")),
            "confidence": round(rnd.random(), 2) if confident else None,
            "most_likely_wrong": {
                "surface": rnd.choice(SURFACES),
                "description": "token refresh may race with logout when two tabs are open",
            }
            if confident
            else None,
            "known_not_in_diff": "ran the migration by hand on staging" if i % 5 == 0 else None,
            "risk": {
                "needs_review": i % 3 == 0,
                "score": round(rnd.random(), 3),
                "surface": rnd.choice(SURFACES),
                "reason": "touches src/auth/session.py (auth surface)",
            },
            "files_changed": [f"src/pkg{j}/module_{rnd.randrange(500)}.py" for j in range(i % 7)],
            "provenance": {
                "source": "stop-hook",
                "reflection_attempt": 1 + i % 2,
                "degraded": not confident,
                "reflection_mode": rnd.choice(("solo", "orchestrated")),
            },
        }
        text = json.dumps(record, indent=2, ensure_ascii=False) + "\n"
        (day / f"{session}-{day.name}.reflection.json").write_text(text, "utf-8")
        total += len(text)
    return total


# --- the in-process figures, each timed inside a fresh child process -----------------------


def child_ours(folder: str, db: str) -> dict[str, Any]:
    from agent_reflection.load.sidecars.loader import load_sidecars
    from agent_reflection.store.db import connect

    con = connect(db)
    started = time.perf_counter()
    summary = load_sidecars(con, [folder])
    wall = time.perf_counter() - started
    con.close()
    assert summary.reconciles, summary
    return {"wall": wall, "rows": summary.loaded}


def child_duckdb(folder: str, db: str) -> dict[str, Any]:
    import duckdb

    con = duckdb.connect(db)
    con.execute("SET enable_progress_bar = false")  # it prints to stdout after 2 s
    con.execute("SET preserve_insertion_order = false")
    started = time.perf_counter()
    con.execute(f"CREATE TABLE t AS SELECT * FROM read_json('{Path(folder) / GLOB}')")
    wall = time.perf_counter() - started
    rows = con.execute("SELECT count(*) FROM t").fetchone()
    con.close()
    return {"wall": wall, "rows": rows[0] if rows else 0}


CHILDREN = {"ours": child_ours, "duckdb": child_duckdb}


class Contenders:
    """The timed commands for one folder of ``n`` sidecars; each run writes a fresh database."""

    def __init__(self, folder: Path, workdir: Path, n: int) -> None:
        self.folder, self.workdir, self.n, self.count = folder, workdir, n, 0

    def fresh_db(self) -> Path:
        self.count += 1
        return self.workdir / f"run{self.count}.duckdb"

    def reflect(self) -> Run:
        command = [sys.executable, "-m", "agent_reflection", "load", "sidecars", str(self.folder)]
        command += ["--db", str(self.fresh_db()), "--silent", "--json"]
        run = run_process(command, sample_memory=True)
        (summary,) = json.loads(run.stdout)["loads"]
        if summary["loaded"] != self.n:
            raise SystemExit(f"reflect load sidecars loaded {summary}, not {self.n}")
        return run

    def baseline(self) -> Run:
        glob = str(self.folder / GLOB)
        run = run_process(
            [sys.executable, "-c", BASELINE_CODE, str(self.fresh_db()), glob], sample_memory=True
        )
        if int(run.stdout) != self.n:
            raise SystemExit(f"read_json made {run.stdout.strip()} rows, not {self.n}")
        return run

    def in_process(self, which: str) -> Run:
        command = [sys.executable, __file__, "--child", which, str(self.folder)]
        outer = run_process([*command, str(self.fresh_db())])
        result = json.loads(outer.stdout.strip().splitlines()[-1])
        if result["rows"] != self.n:
            raise SystemExit(f"{which} in process loaded {result['rows']}, not {self.n}")
        return Run(wall=result["wall"], load=outer.load)


REFLECT, BASELINE = "reflect load sidecars", "python -c read_json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[1_000, 10_000, GOAL_SIZE], help="files"
    )
    parser.add_argument("--with-1m", action="store_true", help="add 1,000,000 files (long)")
    parser.add_argument("--repeat", type=int, default=3, help="turns per size (default 3)")
    parser.add_argument("--no-in-process", action="store_true", help="whole processes only")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        which, folder, db = args.child
        print(json.dumps(CHILDREN[which](folder, db)))
        return 0

    sizes = [*args.sizes, *([1_000_000] if args.with_1m else [])]
    ratios: dict[int, float] = {}
    peaks: dict[int, int] = {}
    with tempfile.TemporaryDirectory(prefix="bench-sidecars-") as tmp:
        workdir = Path(tmp)
        for n in sizes:
            folder = workdir / f"sidecars-{n}"
            started = time.perf_counter()
            size = generate(folder, n)
            print(
                f"{n:,} sidecars ({size / MIB:,.0f} MiB), generated in "
                f"{time.perf_counter() - started:.1f}s (untimed)",
                flush=True,
            )
            c = Contenders(folder, workdir, n)
            contenders = {REFLECT: c.reflect, BASELINE: c.baseline}
            if not args.no_in_process:
                contenders["load_sidecars (in process)"] = lambda c=c: c.in_process("ours")
                contenders["read_json (in process)"] = lambda c=c: c.in_process("duckdb")
            runs = interleaved(contenders, args.repeat)
            ours, base = median_wall(runs[REFLECT]), median_wall(runs[BASELINE])
            # memory is a bound: the worst run counts
            peak = {k: max(r.tree_rss for r in runs[k]) for k in (REFLECT, BASELINE)}
            one = {k: max(r.max_rss for r in runs[k]) for k in (REFLECT, BASELINE)}
            ratios[n], peaks[n] = ours / base, max(peak[REFLECT], one[REFLECT])
            print(
                f"  whole process, medians of {args.repeat}: {REFLECT} {ours:.2f}s "
                f"({n / ours:,.0f} files/s), {BASELINE} {base:.2f}s, ratio {ours / base:.2f}x; "
                f"peak tree RSS {peak[REFLECT] / MIB:,.0f} MiB vs {peak[BASELINE] / MIB:,.0f} MiB "
                f"(largest single process {one[REFLECT] / MIB:,.0f} vs "
                f"{one[BASELINE] / MIB:,.0f} MiB)  ({load_range(runs)})",
                flush=True,
            )
            if not args.no_in_process:
                lib = median_wall(runs["load_sidecars (in process)"])
                duck = median_wall(runs["read_json (in process)"])
                print(
                    f"  in process, medians of {args.repeat}: load_sidecars {lib:.2f}s, "
                    f"read_json {duck:.2f}s, ratio {lib / duck:.2f}x"
                )
            shutil.rmtree(folder)
            for db in workdir.glob("run*.duckdb*"):
                db.unlink()
    per_size = ", ".join(
        f"{ratios[n]:.2f}x / {peaks[n] / MIB:,.0f} MiB at {n:,}" for n in sorted(ratios)
    )
    worst_peak = max(peaks.values())
    memory = f"peak RSS {worst_peak / MIB:,.0f} MiB ({per_size})"
    if GOAL_SIZE not in ratios:
        within = "within" if worst_peak <= GIB else "OVER"
        print(
            f"verdict: not judged on time (the goal is at {GOAL_SIZE:,} files: pass --sizes "
            f"{GOAL_SIZE}); {memory}, {within} 1 GiB"
        )
        return 0
    met = "meets" if ratios[GOAL_SIZE] <= GOAL_RATIO and worst_peak <= GIB else "MISSES"
    print(
        f"verdict: reflect load sidecars as a whole process, {ratios[GOAL_SIZE]:.2f}x the "
        f"baseline at {GOAL_SIZE:,} files, {memory}: {met} the goal <= {GOAL_RATIO:.1f}x and "
        "<= 1 GiB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
