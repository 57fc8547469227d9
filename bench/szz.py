"""Benchmark: ``reflect load git --szz`` against the plain ``reflect load git``, at several sizes.

Goal: none is set for SZZ in any issue; ``reflect load git --help`` says "about 4x the plain
load on flask", so the verdict line reports the ratio beside that claim, without a pass/fail.

Baseline, stated: the same command without ``--szz``: ``python -m agent_reflection load git
REPO --cache-dir C --db NEW --silent --json [--rev CUT]``, the same flags and revisions on both
sides, each run into a fresh DuckDB file. A bundle is cloned into ``C`` once, untimed, before
the runs (what a user's second load of the same bundle does).

REPO defaults to the flask bundle in ../shared/data/git/ (or $AGENT_REFLECTION_SHARED). Sizes
(``--sizes``, default ``1000,3000,all``): a number N loads ``--rev CUT``, CUT being the N-th
commit of ``git rev-list --reverse --topo-order HEAD`` (``main`` or ``master`` where HEAD names
no commit), so about N commits: CUT and its ancestors; ``all`` loads every ref, as
``reflect load git REPO`` does. For each size, in turns whose order reverses every other turn,
``--repeat`` times each:

  load         the baseline command above (whole process, start-up included);
  load --szz   the same command with ``--szz`` (whole process);
  in process   a fresh child process that times ``load_git_history`` and then
               ``load_fix_inducing`` on the same database, each call alone (imports and
               start-up not counted): the SZZ step's own cost beside the whole processes.

It prints every run with the load average it started at; per size the medians, the ratio
load --szz / load (whole process) and SZZ / load (in process), the time per attributed fix
(whole process: the median difference of the two commands; in process: the SZZ call) and CPU
seconds (the process and its git children, from ``wait4``); then one verdict line.

    python bench/szz.py
    python bench/szz.py ../shared/data/git/sqlite-utils.bundle --sizes 500,all --repeat 5
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
from pathlib import Path
from typing import Any

from _measure import REPO_ROOT, Run, interleaved, load_range, median_wall, run_process

CLAIMED_RATIO = 4.0  # "about 4x the plain load on flask", reflect load git --help


def default_repo() -> Path:
    shared = Path(os.environ.get("AGENT_REFLECTION_SHARED", REPO_ROOT.parent / "shared"))
    return shared / "data" / "git" / "flask.bundle"


def child(repo: str, cache: str, db: str, rev: str) -> dict[str, Any]:
    """In process: the plain load, then SZZ on the same database, each call timed alone."""
    from agent_reflection.load.git.history import load_git_history
    from agent_reflection.load.git.repo import open_repo
    from agent_reflection.load.git.szz import load_fix_inducing
    from agent_reflection.store.db import connect

    source = open_repo(repo, cache_dir=cache)
    con = connect(db)
    started = time.perf_counter()
    summary = load_git_history(con, source, rev=rev or None)
    load = time.perf_counter() - started
    started = time.perf_counter()
    szz = load_fix_inducing(con, source)
    szz_wall = time.perf_counter() - started
    con.close()
    assert szz.reconciles, szz
    return {"load": load, "szz": szz_wall, "commits": summary.read, "fixes": szz.loaded}


def cut_points(repo: Path, cache: Path, sizes: list[str]) -> dict[str, str]:
    """Size label -> the ``--rev`` argument ('' for every ref)."""
    sys.path.insert(0, str(REPO_ROOT / "src"))
    from agent_reflection.load.git.repo import open_repo

    path = open_repo(repo, cache_dir=cache).path  # clones a bundle once, untimed
    branch = next(
        name
        for name in ("HEAD", "main", "master")
        if subprocess.run(
            ["git", "-C", str(path), "rev-parse", "--verify", "-q", f"{name}^{{commit}}"],
            capture_output=True,
        ).returncode
        == 0
    )
    order = subprocess.run(
        ["git", "-C", str(path), "rev-list", "--reverse", "--topo-order", branch],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    cuts: dict[str, str] = {}
    for size in sizes:
        if size == "all":
            cuts[size] = ""
        elif int(size) <= len(order):
            cuts[size] = order[int(size) - 1]
        else:
            print(f"size {size}: HEAD has only {len(order):,} commits; skipped")
    return cuts


class Contenders:
    def __init__(self, repo: Path, cache: Path, workdir: Path, rev: str) -> None:
        self.repo, self.cache, self.workdir, self.rev, self.count = repo, cache, workdir, rev, 0
        self.summaries: dict[str, dict[str, Any]] = {}
        self.szz_in_process: list[float] = []
        self.in_process_info: dict[str, Any] = {}

    def fresh_db(self) -> Path:
        self.count += 1
        return self.workdir / f"run{self.count}.duckdb"

    def cli(self, *flags: str) -> Run:
        command = [sys.executable, "-m", "agent_reflection", "load", "git", str(self.repo)]
        command += ["--cache-dir", str(self.cache), "--db", str(self.fresh_db())]
        command += ["--silent", "--json", *(["--rev", self.rev] if self.rev else []), *flags]
        run = run_process(command)
        self.summaries["szz" if flags else "load"] = json.loads(run.stdout)
        return run

    def in_process(self) -> Run:
        command = [sys.executable, __file__, "--child", str(self.repo), str(self.cache)]
        outer = run_process([*command, str(self.fresh_db()), self.rev])
        result = json.loads(outer.stdout.strip().splitlines()[-1])
        self.szz_in_process.append(result["szz"])
        self.in_process_info = result
        return Run(wall=result["load"], load=outer.load)


LOAD, SZZ, IN_PROCESS = "reflect load git", "reflect load git --szz", "load_git_history (in proc)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("repo", nargs="?", type=Path, help="clone, bare repo or bundle")
    parser.add_argument("--sizes", default="1000,3000,all", help="commit counts and/or 'all'")
    parser.add_argument("--repeat", type=int, default=3, help="turns per size (default 3)")
    parser.add_argument("--no-in-process", action="store_true", help="whole processes only")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0

    repo = args.repo or default_repo()
    if not repo.exists():
        print(f"{repo} not found: pass a REPO or set AGENT_REFLECTION_SHARED", file=sys.stderr)
        return 2
    verdicts: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-szz-") as tmp:
        workdir = Path(tmp)
        cache = workdir / "cache"
        cuts = cut_points(repo, cache, args.sizes.split(","))
        for label, rev in cuts.items():
            c = Contenders(repo, cache, workdir, rev)
            contenders = {LOAD: c.cli, SZZ: lambda c=c: c.cli("--szz")}
            if not args.no_in_process:
                contenders[IN_PROCESS] = c.in_process
            print(f"{repo.name}, size {label} ({'--rev ' + rev[:12] if rev else 'every ref'})")
            runs = interleaved(contenders, args.repeat)
            commits = c.summaries["szz"]["read"]
            szz_summary = c.summaries["szz"]["szz"]
            fixes = szz_summary["loaded"]
            load, szz = median_wall(runs[LOAD]), median_wall(runs[SZZ])
            ratio = szz / load
            cpu = {k: statistics.median(r.cpu for r in runs[k]) for k in (LOAD, SZZ)}
            print(
                f"  {commits:,} commits, {szz_summary['read']:,} fix-like commits, {fixes:,} "
                f"attributed, blame calls {szz_summary['detail'].get('blame_calls', '?')}"
            )
            print(
                f"  whole process, medians of {args.repeat}: load {load:.2f}s, load --szz "
                f"{szz:.2f}s, ratio {ratio:.2f}x; per fix {1000 * (szz - load) / max(fixes, 1):.1f}"
                f" ms; CPU (with git) {cpu[LOAD]:.2f}s vs {cpu[SZZ]:.2f}s  ({load_range(runs)})"
            )
            if not args.no_in_process:
                lib_load = median_wall(runs[IN_PROCESS])
                lib_szz = statistics.median(c.szz_in_process)
                print(
                    f"  in process, medians of {args.repeat}: load_git_history {lib_load:.2f}s, "
                    f"load_fix_inducing {lib_szz:.2f}s, ratio SZZ / load {lib_szz / lib_load:.2f}x"
                    f", (load + SZZ) / load {(lib_load + lib_szz) / lib_load:.2f}x; per fix "
                    f"{1000 * lib_szz / max(fixes, 1):.1f} ms"
                )
            verdicts.append(f"{ratio:.1f}x at {commits:,} commits")
            for db in workdir.glob("run*.duckdb*"):
                db.unlink()
    print(
        f"verdict: no goal is set for SZZ; reflect load git --szz costs {', '.join(verdicts)} "
        f"the plain load of {repo.name} (whole processes, medians); --help claims about "
        f"{CLAIMED_RATIO:.0f}x on flask"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
