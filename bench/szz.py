"""Benchmark the SZZ step (``reflect load git --szz``) against the plain git load.

    python bench/szz.py [REPO] [--repeat K] [--workers W]

REPO defaults to the flask bundle in ../shared/data/git/ (or $AGENT_REFLECTION_SHARED).

K times, alternating in the same process, into a fresh DuckDB file each time:
  * load: ``load_git_history`` (connect + load + close), the plain ``reflect load git``;
  * szz: ``load_fix_inducing`` on the database just loaded (connect + SZZ + close).
It prints medians (and bests) of both, the ratio szz / load, the time per fix and per blame
(one ``git blame`` per changed code file of a fix), CPU seconds of git + this process, and
the SZZ counts of the last run. Library imports are warmed first and not timed.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def default_repo() -> Path:
    shared = Path(os.environ.get("AGENT_REFLECTION_SHARED", REPO_ROOT.parent / "shared"))
    return shared / "data" / "git" / "flask.bundle"


def cpu_seconds() -> float:
    """User + system CPU of this process and its waited-for children (git)."""
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo", nargs="?", help="clone, bare repo or bundle (default: flask)")
    parser.add_argument("--repeat", type=int, default=3, help="alternating runs (default 3)")
    parser.add_argument("--workers", type=int, default=None, help="SZZ worker threads")
    args = parser.parse_args()

    t0 = time.perf_counter()
    import duckdb  # noqa: F401
    import pyarrow

    from agent_reflection.load.git.history import load_git_history, open_repo
    from agent_reflection.load.git.szz import DEFAULT_WORKERS, load_fix_inducing
    from agent_reflection.store.db import connect

    pyarrow.array([1])  # pyarrow imports pandas lazily on first use
    workers = args.workers or DEFAULT_WORKERS
    print(f"imports (not timed below): {time.perf_counter() - t0:.2f}s")

    with tempfile.TemporaryDirectory(prefix="bench-szz-") as tmp_dir:
        tmp = Path(tmp_dir)
        repo = Path(args.repo) if args.repo else default_repo()
        if not repo.exists():
            raise SystemExit(f"{repo} not found: pass a REPO or set AGENT_REFLECTION_SHARED")
        source = open_repo(repo, cache_dir=tmp / "cache")  # clones a bundle once, untimed

        load_times, szz_times, load_cpu, szz_cpu = [], [], [], []
        summary = szz = None
        for i in range(args.repeat):
            db = tmp / f"run{i}.duckdb"
            t, c = time.perf_counter(), cpu_seconds()
            con = connect(db)
            summary = load_git_history(con, source.path, name=source.name)
            con.close()
            load_times.append(time.perf_counter() - t)
            load_cpu.append(cpu_seconds() - c)

            t, c = time.perf_counter(), cpu_seconds()
            con = connect(db)
            szz = load_fix_inducing(con, source.path, name=source.name, workers=workers)
            con.close()
            szz_times.append(time.perf_counter() - t)
            szz_cpu.append(cpu_seconds() - c)
            db.unlink()
        assert summary is not None and szz is not None and szz.reconciles

    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    load_med, szz_med = statistics.median(load_times), statistics.median(szz_times)
    fixes = szz.loaded
    blames = int(szz.detail["blame_calls"])
    print(
        f"repo: {repo}  commits: {summary.read:,}  "
        f"fix-like non-merge commits + reverts: {szz.read:,}  workers: {workers}"
    )
    print(f"methods: {szz.detail['methods']}  blame calls: {blames:,}  rejected: {szz.rejected}")
    print(f"git load   median {load_med:.2f}s  best {min(load_times):.2f}s")
    print(f"SZZ        median {szz_med:.2f}s  best {min(szz_times):.2f}s")
    print(
        f"ratio SZZ / git load (median/median): {szz_med / load_med:.1f}x   "
        f"load --szz / load: {(load_med + szz_med) / load_med:.1f}x"
    )
    print(
        f"per fix: {1000 * szz_med / max(fixes, 1):.1f} ms   "
        f"per blame call: {1000 * szz_med / max(blames, 1):.1f} ms (upper bound: includes "
        "diffs and blob reads)"
    )
    print(
        f"CPU seconds (git + this process, median): load {statistics.median(load_cpu):.2f}s, "
        f"SZZ {statistics.median(szz_cpu):.2f}s"
    )
    print(f"peak memory (ru_maxrss of this process): {peak_mib:.0f} MiB")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
