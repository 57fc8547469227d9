"""Benchmark ``reflect load git`` as a user runs it: whole processes, medians of interleaved runs.

    python bench/load_git.py [REPO] [--synthetic N] [--repeat K]

REPO (a clone, bare repo or bundle; a bundle is cloned first, untimed) defaults to the flask
bundle in ../shared/data/git/ (or $AGENT_REFLECTION_SHARED). ``--synthetic N`` builds an
N-commit repository with ``git fast-import`` instead. For a one-commit repository and for REPO,
alternating K times, it times

  * baseline: raw ``git log --no-renames`` with the loader's other flags and revisions, its
    output drained through a pipe (the anchor of the issue: the loader adds rename detection,
    Python and DuckDB on top);
  * load: ``python -m agent_reflection load git REPO --db NEW --silent`` into a fresh file;
  * re-load: the same command again on that file, nothing changed (incremental: git stops at
    the tips the load recorded);

and prints one verdict line per goal: the fixed cost of a load (the one-commit load, <= 0.15 s),
the load on REPO against its baseline (<= 1.3x) and the no-change re-load against the full load
(<= 0.1x).
"""

from __future__ import annotations

import argparse
import io
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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
    subprocess.run(
        ["git", "-C", str(target), "fast-import", "--quiet"], input=out.getvalue(), check=True
    )
    return target


def one_commit_repo(target: Path) -> Path:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "B",
        "GIT_AUTHOR_EMAIL": "b@example.com",
        "GIT_COMMITTER_NAME": "B",
        "GIT_COMMITTER_EMAIL": "b@example.com",
    }
    subprocess.run(["git", "init", "-q", "-b", "main", str(target)], check=True)
    (target / "README.md").write_text("one\n")
    subprocess.run(["git", "-C", str(target), "add", "README.md"], check=True)
    subprocess.run(["git", "-C", str(target), "commit", "-q", "-m", "one"], check=True, env=env)
    return target


def baseline_command(repo: Path) -> list[str]:
    """The loader's ``git log`` (flags, format, default revisions) with ``--no-renames``."""
    from agent_reflection.load.git.log import LOG_FLAGS, LOG_FORMAT
    from agent_reflection.load.git.repo import open_repo, revisions

    flags = [f for f in LOG_FLAGS if f != "-M"]
    revs = revisions(open_repo(repo), None)  # HEAD only when it resolves, as the loader does
    return [
        "git",
        "-C",
        str(repo),
        "log",
        *flags,
        "--no-renames",
        f"--format={LOG_FORMAT}",
        *revs,
        "--",
    ]


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:6])} failed: {done.stderr.decode()[-500:]}")
    return elapsed


def measure(repo: Path, tmp: Path, repeat: int) -> dict[str, list[float]]:
    """Interleaved whole-process timings: baseline, full load, no-change re-load."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src"), "CI": "1"}
    env.pop("REFLECT_DB", None)
    times: dict[str, list[float]] = {"baseline": [], "load": [], "reload": []}
    for i in range(repeat):
        db = tmp / f"{repo.name}-{i}.duckdb"
        load = [
            sys.executable,
            "-m",
            "agent_reflection",
            "load",
            "git",
            str(repo),
            "--db",
            str(db),
            "--silent",
        ]
        times["baseline"].append(timed(baseline_command(repo), env))
        times["load"].append(timed(load, env))
        times["reload"].append(timed(load, env))
        db.unlink()
    return times


def commits_in(repo: Path) -> int:
    from agent_reflection.load.git.repo import count_commits

    return count_commits(repo)


def verdict(ok: bool) -> str:
    return "meets" if ok else "MISSES"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo", nargs="?", help="clone, bare repo or bundle (default: flask)")
    parser.add_argument("--synthetic", type=int, metavar="N", help="build an N-commit repo")
    parser.add_argument("--repeat", type=int, default=9, help="interleaved runs (default 9)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-load-git-") as tmp_dir:
        tmp = Path(tmp_dir)
        if args.synthetic:
            repo = synthesize(tmp / "synthetic.git", args.synthetic)
        else:
            given = Path(args.repo) if args.repo else default_repo()
            if not given.exists():
                raise SystemExit(f"{given} not found: pass a REPO or set AGENT_REFLECTION_SHARED")
            repo = given
            if given.is_file():  # a bundle: clone it once, untimed
                repo = tmp / given.name.removesuffix(".bundle")
                subprocess.run(["git", "clone", "-q", str(given), str(repo)], check=True)
        tiny = one_commit_repo(tmp / "one-commit")
        results = {}
        for name, path in (("one-commit", tiny), (repo.name, repo)):
            results[name] = measure(path, tmp, args.repeat)
        size = commits_in(repo)

    print(f"medians of {args.repeat} interleaved runs, whole processes (wall seconds)")
    for name, times in results.items():
        med = {k: statistics.median(v) for k, v in times.items()}
        print(
            f"{name:>12}: git log --no-renames {med['baseline']:.3f}  load {med['load']:.3f}  "
            f"no-change re-load {med['reload']:.3f}"
        )
    tiny_med = {k: statistics.median(v) for k, v in results["one-commit"].items()}
    big = {k: statistics.median(v) for k, v in results[repo.name].items()}
    fixed = tiny_med["load"]
    ratio = big["load"] / big["baseline"]
    reload_ratio = big["reload"] / big["load"]
    print(
        f"fixed cost of a load (1-commit repo): {fixed:.3f}s -> {verdict(fixed <= 0.15)} <= 0.15 s"
    )
    print(
        f"load {repo.name} ({size:,} commits) vs raw git log: {ratio:.2f}x -> "
        f"{verdict(ratio <= 1.3)} <= 1.3x"
    )
    print(
        f"no-change re-load vs full load ({repo.name}): {reload_ratio:.3f}x -> "
        f"{verdict(reload_ratio <= 0.1)} <= 0.1x"
    )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
