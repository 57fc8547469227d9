"""Benchmark ``load_git_history`` against the bare ``git log -z --numstat`` of the same range.

    python bench/load_git.py [REPO] [--synthetic N] [--repeat K] [--rev RANGE] [--since DATE]

REPO defaults to the flask bundle in ../shared/data/git/ (or $AGENT_REFLECTION_SHARED).
``--synthetic N`` builds an N-commit repository with ``git fast-import`` instead.

In the same process, alternating K times, it times
  * baseline: the exact ``git log`` the loader runs (same revs and flags), its pipe drained;
  * load: ``load_git_history`` into a fresh DuckDB file (connect + load + close);
and prints the ratio of the best runs (targets: <= 1.6x on flask-sized repos, <= 1.3x on
20,000+ commits), commits/second and the peak RSS of this process. Library imports are
warmed before timing (printed separately): the ratio measures the load, not Python start-up.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import cast

REPO_ROOT = Path(__file__).resolve().parents[1]


def default_repo() -> Path:
    shared = Path(os.environ.get("AGENT_REFLECTION_SHARED", REPO_ROOT.parent / "shared"))
    return shared / "data" / "git" / "flask.bundle"


def synthesize(target: Path, commits: int, seed: int = 7) -> Path:
    """An N-commit repo (text edits, renames, binaries, PR merges' wording) via fast-import."""
    rng = random.Random(seed)
    subprocess.run(["git", "init", "-q", "--bare", str(target)], check=True)
    files = [f"src/pkg{i % 40}/module_{i}.py" for i in range(2000)]
    contents: dict[str, list[str]] = {}
    words = ["Fix", "Add", "Refactor", "feat(api):", "fix(core):", "Update", "Revert", "docs:"]
    out = io.BytesIO()
    when = 1_500_000_000
    for n in range(1, commits + 1):
        when += rng.randint(60, 7200)
        out.write(b"commit refs/heads/main\n")
        out.write(f"mark :{n}\n".encode())
        tz = rng.choice(["+0000", "+0200", "-0700", "+0530"])
        out.write(f"author Dev {n % 97} <dev{n % 97}@example.com> {when} {tz}\n".encode())
        out.write(f"committer Dev {n % 31} <c{n % 31}@example.com> {when} {tz}\n".encode())
        subject = f"{rng.choice(words)} thing {n} (#{n})"
        message = f"{subject}\n\nBody of commit {n}.\n".encode()
        out.write(f"data {len(message)}\n".encode() + message)
        if n > 1:
            out.write(f"from :{n - 1}\n".encode())
        for _ in range(rng.randint(1, 4)):
            path = rng.choice(files)
            lines = contents.setdefault(path, [f"line {i}\n" for i in range(rng.randint(5, 60))])
            for _ in range(rng.randint(1, 6)):
                lines.insert(rng.randrange(len(lines) + 1), f"edit {n} {rng.random()}\n")
            if rng.random() < 0.1 and len(lines) > 5:
                del lines[: rng.randint(1, 5)]
            blob = "".join(lines).encode()
            out.write(f"M 100644 inline {path}\ndata {len(blob)}\n".encode() + blob + b"\n")
        if n % 200 == 0:
            blob = bytes(rng.randrange(256) for _ in range(512))
            out.write(f"M 100644 inline assets/img{n}.bin\ndata {len(blob)}\n".encode())
            out.write(blob + b"\n")
        if n % 150 == 0:
            old = rng.choice([f for f in files if f in contents])
            new = old.replace("module_", f"renamed_{n}_")
            out.write(f"R {old} {new}\n".encode())
            files[files.index(old)] = new
            contents[new] = contents.pop(old)
        out.write(b"\n")
    subprocess.run(["git", "-C", str(target), "fast-import", "--quiet"], input=out.getvalue(),
                   check=True)  # fmt: skip
    return target


def cpu_seconds() -> float:
    """User + system CPU of this process and its waited-for children (git)."""
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def baseline(source_path: Path, revs: list[str], since: str | None) -> int:
    from agent_reflection.load.git_log import LOG_FLAGS, LOG_FORMAT

    cmd = ["git", "-C", str(source_path), "log", *LOG_FLAGS, f"--format={LOG_FORMAT}"]
    cmd += [f"--since={since}"] if since else []
    proc = subprocess.Popen([*cmd, *revs, "--"], stdout=subprocess.PIPE)
    pipe = cast(io.BufferedReader, proc.stdout)
    total = 0
    while chunk := pipe.read1(1 << 20):
        total += len(chunk)
    if proc.wait() != 0:
        raise SystemExit("baseline git log failed")
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo", nargs="?", help="clone, bare repo or bundle (default: flask)")
    parser.add_argument("--synthetic", type=int, metavar="N", help="build an N-commit repo")
    parser.add_argument("--repeat", type=int, default=3, help="alternating runs (default 3)")
    parser.add_argument("--rev", help="revision or range (default: all branches and tags)")
    parser.add_argument("--since", help="only commits newer than this date")
    args = parser.parse_args()

    t0 = time.perf_counter()
    import duckdb  # noqa: F401
    import pyarrow

    from agent_reflection.db import connect
    from agent_reflection.load.git import load_git_history, open_repo, revisions

    pyarrow.array([1])  # pyarrow imports pandas lazily on first use
    print(f"imports (not timed below): {time.perf_counter() - t0:.2f}s")

    with tempfile.TemporaryDirectory(prefix="bench-load-git-") as tmp_dir:
        tmp = Path(tmp_dir)
        if args.synthetic:
            t = time.perf_counter()
            repo = synthesize(tmp / "synthetic.git", args.synthetic)
            print(f"synthesized {args.synthetic:,} commits in {time.perf_counter() - t:.1f}s")
        else:
            repo = Path(args.repo) if args.repo else default_repo()
            if not repo.exists():
                raise SystemExit(f"{repo} not found: pass a REPO or set AGENT_REFLECTION_SHARED")
        source = open_repo(repo, cache_dir=tmp / "cache")  # clones a bundle once, untimed
        revs = revisions(source, args.rev)

        base_times, load_times, base_cpu, load_cpu = [], [], [], []
        summary = None
        for i in range(args.repeat):
            t, c = time.perf_counter(), cpu_seconds()
            size = baseline(source.path, revs, args.since)
            base_times.append(time.perf_counter() - t)
            base_cpu.append(cpu_seconds() - c)

            db = tmp / f"run{i}.duckdb"
            t, c = time.perf_counter(), cpu_seconds()
            con = connect(db)
            summary = load_git_history(con, source.path, rev=args.rev, since=args.since,
                                       name=source.name)  # fmt: skip
            con.close()
            load_times.append(time.perf_counter() - t)
            load_cpu.append(cpu_seconds() - c)
            db.unlink()
        assert summary is not None and summary.reconciles

    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    best_base, best_load = min(base_times), min(load_times)
    print(f"repo: {repo}  revs: {' '.join(revs)}  commits: {summary.read:,}  "
          f"git output: {size / 1e6:.1f} MB")  # fmt: skip
    print(f"baseline git log  best {best_base:.2f}s  median {statistics.median(base_times):.2f}s")
    print(f"load_git_history  best {best_load:.2f}s  median {statistics.median(load_times):.2f}s")
    print(
        f"ratio (best/best): {best_load / best_base:.2f}x   "
        f"(median/median: {statistics.median(load_times) / statistics.median(base_times):.2f}x)"
    )
    print(
        f"CPU seconds (git + this process): baseline {min(base_cpu):.2f}s, load "
        f"{min(load_cpu):.2f}s -> {min(load_cpu) / min(base_cpu):.2f}x (work, not wall time)"
    )
    print(f"commits/second: {summary.read / best_load:,.0f}")
    print(f"peak memory (ru_maxrss of this process): {peak_mib:.0f} MiB")
    target = 1.3 if summary.read >= 20_000 else 1.6
    verdict = "meets" if best_load / best_base <= target else "MISSES"
    print(f"target <= {target}x: {verdict}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
