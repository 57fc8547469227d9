"""Benchmark: ``reflect load git --szz`` against raw ``git log`` of the same refs, at three sizes.

Goal (issue 36): ``reflect load git --szz`` <= 4x raw ``git log`` of the same refs at every
size, and the cost per fix flat from 1k to 10k commits (here: across the ``--synthetic``
depths, one generator at several sizes, the largest per-fix CPU cost at most 1.5x the
smallest: the CPU seconds of the process and its git children, --szz minus the plain load,
over the fixes; wall time on a shared machine moves with the other jobs). Ratios are judged
unrounded and printed to two decimals.

Baseline, stated: the loader's own ``git log`` (its flags and format, ``--no-renames`` in place of
``-M``, as ``bench/load_git.py`` runs it) over the same revisions the load reads (every branch,
tag and remote-tracking branch, plus HEAD), run on the same clone, its output drained through a
pipe. Beside it, the plain load (``reflect load git`` without ``--szz``): the per-fix cost is
the median difference of the two loads over the fixes SZZ read. Every command is a whole
process (``python -m agent_reflection load git REPO --cache-dir C --db NEW --silent --json
[--szz]``, start-up included), each load into a fresh DuckDB file; a bundle is cloned into ``C``
once, untimed, before the runs (what a user's second load of the same bundle does).

Sizes: each REPO given (a clone, bare repo or bundle), loaded whole. Without REPO: the
sqlite-utils bundle (1,490 commits) and the flask bundle (5,572) in ../shared/data/git/ (or
$AGENT_REFLECTION_SHARED; ``--no-shared`` leaves them out), and ``--synthetic N[,N...]``
repositories (default one of 10,553 commits, issue 36's 10k-commit class; no shared history is
that deep). They are ``bench/load_git.py``'s generator: one linear branch, 2,000 files, two of
its eight subject words ("Fix", "fix(core):") make a fix-like commit (2,661 of 10,553; the
history issue 36 timed had 3,963 fixes, so per-fix figures are not comparable with it).
Several synthetic sizes show whether the cost per fix stays flat as the history deepens (the
flat verdict needs two or more, e.g. ``--synthetic 1000,5000,10553``).

``--code DIR`` times the ``src/`` of another checkout of this project (e.g. ``git archive`` of
an older commit unpacked in DIR), for a before / after comparison with the same bench.

For each repo, in turns whose order reverses every other turn, ``--repeat`` times each; every
run is printed with the load average it started at; per repo the medians, the ratios, the CPU
seconds (the process and its git children, from ``wait4``) and the time per fix; then one
verdict line.

    python bench/szz.py
    python bench/szz.py ../shared/data/git/flask.bundle --repeat 5
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _measure import (
    REPO_ROOT,
    Run,
    checkout_src,
    child_env,
    interleaved,
    load_range,
    median_wall,
    run_process,
)

RATIO_GOAL = 4.0
FLAT_GOAL = 1.5  # largest per-fix cost / smallest, across the synthetic depths
DEFAULT_SYNTHETIC = 10_553


def shared_repos() -> list[Path]:
    shared = Path(os.environ.get("AGENT_REFLECTION_SHARED", REPO_ROOT.parent / "shared"))
    found = [shared / "data" / "git" / f"{n}.bundle" for n in ("sqlite-utils", "flask")]
    return [p for p in found if p.exists()]


def raw_git_log(repo: Path, cache: Path) -> list[str]:
    """The loader's ``git log`` over the refs it loads, on the clone the load reads."""
    sys.path.insert(0, str(REPO_ROOT / "src"))
    from agent_reflection.load.git.log import LOG_FLAGS, LOG_FORMAT
    from agent_reflection.load.git.repo import open_repo, revisions

    source = open_repo(repo, cache_dir=cache)  # clones a bundle once, untimed
    flags = [f for f in LOG_FLAGS if f != "-M"]
    revs = revisions(source, None)
    log = ["git", "-C", str(source.path), "log", *flags, "--no-renames"]
    return [*log, f"--format={LOG_FORMAT}", *revs, "--"]


class Contenders:
    def __init__(self, repo: Path, cache: Path, workdir: Path, env: dict[str, str]) -> None:
        self.repo, self.cache, self.workdir, self.env, self.count = repo, cache, workdir, env, 0
        self.summaries: dict[str, dict[str, Any]] = {}
        self.git_log = raw_git_log(repo, cache)

    def fresh_db(self) -> Path:
        self.count += 1
        return self.workdir / f"run{self.count}.duckdb"

    def cli(self, *flags: str) -> Run:
        command = [sys.executable, "-m", "agent_reflection", "load", "git", str(self.repo)]
        command += ["--cache-dir", str(self.cache), "--db", str(self.fresh_db())]
        command += ["--silent", "--json", *flags]
        run = run_process(command, env=self.env)
        self.summaries["szz" if flags else "load"] = json.loads(run.stdout)
        for db in self.workdir.glob("run*.duckdb*"):
            db.unlink()
        return run

    def raw(self) -> Run:
        return run_process(self.git_log, env=self.env)


GIT_LOG, LOAD, SZZ = "raw git log", "reflect load git", "reflect load git --szz"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("repos", nargs="*", type=Path, help="clone, bare repo or bundle")
    parser.add_argument(
        "--synthetic",
        default=None,
        metavar="N[,N...]",
        help=f"add synthetic repos of N commits each (default {DEFAULT_SYNTHETIC} when no REPO "
        "is given; 0: none)",
    )
    parser.add_argument(
        "--no-shared", action="store_true", help="without REPO: only the synthetic repos"
    )
    parser.add_argument("--repeat", type=int, default=3, help="turns per repo (default 3)")
    parser.add_argument("--code", type=Path, default=REPO_ROOT, help="checkout whose src/ runs")
    args = parser.parse_args(argv)

    repos = list(args.repos) or ([] if args.no_shared else shared_repos())
    given = args.synthetic if args.synthetic is not None else ("0" if args.repos else "")
    synthetic = [int(n) for n in (given or str(DEFAULT_SYNTHETIC)).split(",") if int(n)]
    src = checkout_src(args.code)
    env = child_env(src)
    print(f"timing the code in {src}")
    per_fix_cpu: dict[str, float] = {}
    verdicts: list[str] = []
    ratios: list[float] = []
    synthetic_cpu: dict[int, float] = {}  # per-fix CPU ms by depth: the same generator
    with tempfile.TemporaryDirectory(prefix="bench-szz-") as tmp:
        workdir = Path(tmp)
        cache = workdir / "cache"
        from load_git import synthesize

        made = [synthesize(workdir / f"synthetic-{n}.git", n) for n in synthetic]
        repos += made
        for repo in repos:
            c = Contenders(repo, cache, workdir, env)
            contenders: dict[str, Callable[[], Run]] = {
                GIT_LOG: c.raw,
                LOAD: c.cli,
                SZZ: functools.partial(c.cli, "--szz"),
            }
            print(f"{repo.name}, every ref")
            runs = interleaved(contenders, args.repeat)
            commits = c.summaries["szz"]["read"]
            szz_summary = c.summaries["szz"]["szz"]
            fixes = szz_summary["read"]
            raw, load, szz = (median_wall(runs[k]) for k in (GIT_LOG, LOAD, SZZ))
            cpu = {k: statistics.median(r.cpu for r in runs[k]) for k in contenders}
            cost = 1000 * (szz - load) / max(fixes, 1)
            per_fix_cpu[repo.name] = 1000 * (cpu[SZZ] - cpu[LOAD]) / max(fixes, 1)
            detail = szz_summary["detail"]
            print(
                f"  {commits:,} commits, {fixes:,} fix-like commits and reverts read, "
                f"{szz_summary['loaded']:,} attributed, blame calls "
                f"{detail.get('blame_calls', '?')}, methods {detail.get('methods', '?')}"
            )
            print(
                f"  medians of {args.repeat}: raw git log {raw:.2f}s, load {load:.2f}s, load "
                f"--szz {szz:.2f}s; --szz / git log {szz / raw:.2f}x, --szz / load "
                f"{szz / load:.2f}x; per fix {cost:.1f} ms wall, "
                f"{per_fix_cpu[repo.name]:.1f} ms CPU; CPU (with git) "
                f"{cpu[GIT_LOG]:.2f}s / {cpu[LOAD]:.2f}s / {cpu[SZZ]:.2f}s, --szz / git log "
                f"{cpu[SZZ] / cpu[GIT_LOG]:.2f}x  ({load_range(runs)})"
            )
            ratios.append(szz / raw)
            verdicts.append(f"{szz / raw:.2f}x at {commits:,} commits ({fixes:,} fixes)")
            if repo in made:
                synthetic_cpu[commits] = per_fix_cpu[repo.name]
    ratios_ok = all(r <= RATIO_GOAL for r in ratios)
    # Flat with depth: judged across the synthetic sizes only (one generator at several
    # depths); a fix's cost differs between repositories with the size of their files.
    if len(synthetic_cpu) >= 2:
        costs = synthetic_cpu.values()
        spread = max(costs) / max(min(costs), 1e-9)
        flat = (
            f"largest / smallest across the synthetic depths {spread:.2f} (flat goal <= "
            f"{FLAT_GOAL}: {'meets' if spread <= FLAT_GOAL else 'misses'})"
        )
    else:
        flat = "flat with depth: not judged (give --synthetic two or more sizes)"
    print(
        f"verdict: reflect load git --szz costs {', '.join(verdicts)} raw git log of the same refs "
        f"(goal <= {RATIO_GOAL:.0f}x: {'meets' if ratios_ok else 'misses'}); per fix "
        + ", ".join(f"{v:.1f} ms CPU ({k})" for k, v in per_fix_cpu.items())
        + f"; {flat}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
