"""Benchmark: ``load_sidecars`` against DuckDB's own ``read_json`` over the same files.

Generates N reflection.v1 sidecars (default 100,000) into a temporary folder, then, in the same
run, times in fresh child processes, alternating, ``--repeat`` times each:

  ours    ``agent_reflection.load.sidecars.loader.load_sidecars`` into a fresh DuckDB file
          (validates every record, hashes it, keeps the raw JSON, records the load);
  duckdb  ``CREATE TABLE t AS SELECT * FROM read_json('DIR/**/*.reflection.json')`` into a
          fresh DuckDB file, with ``SET preserve_insertion_order = false`` (with the default it
          needs over 13 GiB for 100k files).

It prints each run, the ratio ours/duckdb of the median wall times (target <= 1.0x), the load
average after each run, and the peak
memory of each contender: the largest total RSS of the contender's whole process tree (main
process plus parser workers), sampled every 20 ms from /proc (target <= 1 GiB).

    python bench/load_sidecars.py                 # 100,000 files
    python bench/load_sidecars.py --n 20000 --repeat 3
    python bench/load_sidecars.py --n 1000000 --only ours   # bounded memory at 1M files
    python bench/load_sidecars.py --dir /tmp/sidecars       # reuse (or create) a folder
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SURFACES = ("auth", "data", "infra", "ui", "build", "test", "docs", "none")
GLOB = "**/*.reflection.json"
GIB = 2**30


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


# --- the contenders, each run in a fresh child process -------------------------------------


def run_ours(folder: str, db: str) -> dict[str, Any]:
    from agent_reflection.load.sidecars.loader import load_sidecars
    from agent_reflection.store.db import connect

    con = connect(db)
    started = time.perf_counter()
    summary = load_sidecars(con, [folder])
    wall = time.perf_counter() - started
    con.close()
    assert summary.reconciles, summary
    return {"wall": wall, "rows": summary.loaded, "detail": summary.detail}


def run_duckdb(folder: str, db: str) -> dict[str, Any]:
    import duckdb

    con = duckdb.connect(db)
    con.execute("SET preserve_insertion_order = false")
    started = time.perf_counter()
    con.execute(f"CREATE TABLE t AS SELECT * FROM read_json('{Path(folder) / GLOB}')")
    wall = time.perf_counter() - started
    rows = con.execute("SELECT count(*) FROM t").fetchone()
    con.close()
    return {"wall": wall, "rows": rows[0] if rows else 0}


CONTENDERS = {"ours": run_ours, "duckdb": run_duckdb}


def _child_main(contender: str, folder: str, db: str) -> None:
    result = CONTENDERS[contender](folder, db)
    print(json.dumps(result, default=str))


# --- measuring a child process tree ---------------------------------------------------------


def _tree_rss(root: int) -> int:
    """Total resident memory (bytes) of ``root`` and all its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(entry), int(fields[1])
        children.setdefault(ppid, []).append(pid)
        rss[pid] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, ()))
    return total


def measure(contender: str, folder: Path, workdir: Path) -> dict[str, Any]:
    db = workdir / f"{contender}.duckdb"
    for stale in (db, Path(f"{db}.wal")):
        stale.unlink(missing_ok=True)
    cmd = [sys.executable, __file__, "--child", contender, str(folder), str(db)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, _tree_rss(proc.pid))
        time.sleep(0.02)
    out = proc.stdout.read() if proc.stdout else ""
    if proc.returncode != 0:
        raise SystemExit(f"{contender} failed (exit {proc.returncode})")
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    result["peak_rss"] = peak
    result["db_bytes"] = db.stat().st_size
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="sidecars to generate")
    parser.add_argument("--repeat", type=int, default=3, help="runs per contender (medians)")
    parser.add_argument("--dir", type=Path, help="folder of sidecars to reuse or create")
    parser.add_argument("--only", choices=sorted(CONTENDERS), help="run one contender only")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child_main(*args.child)
        return 0

    workdir = Path(tempfile.mkdtemp(prefix="bench-sidecars-"))
    folder = args.dir or workdir / "sidecars"
    try:
        if not folder.exists() or not any(folder.iterdir()):
            started = time.perf_counter()
            size = generate(folder, args.n)
            print(
                f"generated {args.n:,} sidecars ({size / 2**20:,.0f} MiB) in "
                f"{time.perf_counter() - started:.1f}s under {folder}"
            )
        contenders = [args.only] if args.only else ["ours", "duckdb"]
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in contenders}
        for attempt in range(args.repeat):
            for name in contenders if attempt % 2 == 0 else contenders[::-1]:
                r = measure(name, folder, workdir)
                print(
                    f"  {name:6s} run {attempt + 1}: {r['wall']:7.2f}s  rows {r['rows']:,}  "
                    f"peak RSS {r['peak_rss'] / 2**20:,.0f} MiB  (load {os.getloadavg()[0]:.1f})"
                )
                runs[name].append(r)
        wall = {name: statistics.median(r["wall"] for r in rs) for name, rs in runs.items()}
        for name, rs in runs.items():
            peak = max(r["peak_rss"] for r in rs)  # the worst run: memory is a bound
            rate = rs[0]["rows"] / wall[name] if wall[name] else 0.0
            print(
                f"{name:6s} median {wall[name]:.2f}s of {len(rs)} ({rate:,.0f} files/s), "
                f"peak memory {peak / 2**20:,.0f} MiB "
                f"({'ok' if peak <= GIB else 'OVER'} vs 1 GiB target)"
            )
        if len(wall) == 2:
            ratio = wall["ours"] / wall["duckdb"]
            verdict = "meets" if ratio <= 1.0 else "MISSES"
            print(
                f"verdict: ours/duckdb {ratio:.2f}x at {args.n:,} files, medians of "
                f"{args.repeat} interleaved runs ({verdict} the <= 1.0x target)"
            )
        print(
            f"(max RSS of this bench process: "
            f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB)"
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
