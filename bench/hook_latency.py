"""Stop-hook latency: median wall time per stop vs a baseline measured in the same run.

Builds a scratch git repository with N tracked files and a few changed ones (modified,
staged, untracked), then times, interleaved:

- the hook: the installed ``reflect-stop-hook`` console script with a Stop payload on stdin
  and ``REFLECTION_MODE=solo`` (a full capture: git state, self-report, risk floor, write);
- the baseline: a bare ``python -c pass`` start (the same venv Python) plus one
  ``git status --porcelain`` in the same repository;
- for information, the hook with ``REFLECTION_MODE`` unset (the cost of a registered but
  inactive hook);
- the ``SessionStart`` hook (``reflect-session-start-hook``: one ``git rev-parse`` and the
  state file), against the same baseline;
- afterwards, the ``post-commit`` note hook (``reflect-post-commit-hook``) run on a commit of
  the changed files, with the stops' sidecars plus fillers (``--sidecars`` in all) to scan,
  against the same baseline.

Prints the medians and the ratio hook/baseline (goal: ≤ 2.0x), in wall time and, because a
shared machine's load inflates wall time unevenly, in CPU time (user + sys of the children).

It runs at several repository sizes (``--files``, default 1,000, 10,000 and 30,000 tracked
files) and prints one verdict line over all of them (the Stop hook, wall time, every size).

    python bench/hook_latency.py [--files 1000,10000,30000] [--runs 21] [--sidecars 500]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _measure import add_readme_install, as_readme_installs

PYTHON = sys.executable
HOOK = Path(PYTHON).with_name("reflect-stop-hook")
START_HOOK = Path(PYTHON).with_name("reflect-session-start-hook")
COMMIT_HOOK = Path(PYTHON).with_name("reflect-post-commit-hook")


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def build_repo(root: Path, n_files: int) -> Path:
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "bench")
    git(repo, "config", "user.email", "bench@example.com")
    for i in range(n_files):
        folder = repo / "src" / f"pkg{i // 100:03d}"
        if i % 100 == 0:
            folder.mkdir(parents=True)
        (folder / f"module_{i:05d}.py").write_text(f"VALUE = {i}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "ten thousand files")
    (repo / "src" / "pkg000" / "module_00001.py").write_text("VALUE = -1\n")
    (repo / "src" / "pkg001" / "module_00100.py").write_text("VALUE = -2\n")
    (repo / "src" / "auth").mkdir()
    (repo / "src" / "auth" / "session.py").write_text("TTL = 60\n")
    git(repo, "add", "src/auth/session.py")
    (repo / "docs.md").write_text("notes\n")
    (repo / ".reflection").mkdir()
    report = {"confidence": 0.8, "most_likely_wrong": None, "known_not_in_diff": "none"}
    (repo / ".reflection" / "input.json").write_text(json.dumps(report))
    return repo


def timed(action: Callable[[], None]) -> tuple[float, float]:
    """(wall seconds, children's CPU seconds) of one call."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    action()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--files",
        default="1000,10000,30000",
        help="tracked files, one repository per size (default 1000,10000,30000)",
    )
    parser.add_argument("--runs", type=int, default=21, help="timed runs of each (default 21)")
    parser.add_argument(
        "--sidecars", type=int, default=500, help="sidecars the post-commit hook scans"
    )
    add_readme_install(parser)
    opts = parser.parse_args()
    as_readme_installs(opts.readme_install)
    for script in (HOOK, START_HOOK, COMMIT_HOOK):
        if not script.exists():
            print(
                f"{script} not found: install the package (pip install -e .) first", file=sys.stderr
            )
            return 1
    # The package's bytecode, as `reflect hook install` writes it: without it, where
    # PYTHONDONTWRITEBYTECODE is set, an editable install compiles the modules on every call.
    from agent_reflection.hooks.bytecode import compile_package, not_compiled_hint

    if not compile_package():
        print(not_compiled_hint(), file=sys.stderr)
    ratios = {n: run_size(n, opts) for n in (int(k) for k in opts.files.split(","))}
    worst = max(ratios.values())
    met = "meets" if worst <= 2.0 else "MISSES"
    print(
        "verdict: the Stop hook costs "
        + ", ".join(f"{r:.2f}x at {n:,} files" for n, r in ratios.items())
        + f" its baseline in wall time (medians): {met} the goal (<= 2.0x at every size)"
    )
    return 0


def run_size(n_files: int, opts: argparse.Namespace) -> float:
    """Time the hooks in a repository of ``n_files`` tracked files; print; return the Stop
    hook's wall-time ratio to its baseline."""
    with tempfile.TemporaryDirectory(prefix="hook-latency-") as tmp:
        root = Path(tmp)
        repo = build_repo(root, n_files)
        out = root / "sidecars"  # outside the repo: every stop sees the same git status
        env = {
            **os.environ,
            "REFLECTION_MODE": "solo",
            "REFLECTION_DIR": str(out),
            "REFLECTION_STATE_DIR": str(root / "state"),
        }
        event = json.dumps(
            {
                "session_id": "bench",
                "cwd": str(repo),
                "hook_event_name": "Stop",
                "stop_hook_active": False,
                "transcript_path": str(root / "t.jsonl"),
            }
        ).encode()

        off_env = {k: v for k, v in env.items() if k != "REFLECTION_MODE"}

        def run_hook(environment: dict[str, str]) -> None:
            done = subprocess.run(
                [str(HOOK)], input=event, env=environment, cwd=repo, capture_output=True
            )
            if done.returncode or done.stdout:
                raise SystemExit(f"hook misbehaved: {done.returncode} {done.stdout!r}")

        def hook() -> None:
            run_hook(env)

        def hook_off() -> None:
            run_hook(off_env)

        start_event = json.dumps(
            {
                "session_id": "bench",
                "cwd": str(repo),
                "hook_event_name": "SessionStart",
                "source": "startup",
            }
        ).encode()
        state_file = root / "state" / "bench.start.json"

        def session_start() -> None:
            state_file.unlink(missing_ok=True)  # a fresh session each time: the full path
            done = subprocess.run(
                [str(START_HOOK)], input=start_event, env=env, cwd=repo, capture_output=True
            )
            if done.returncode or done.stdout or not state_file.exists():
                raise SystemExit(f"session-start hook misbehaved: {done.stderr!r}")

        def baseline() -> None:
            subprocess.run([PYTHON, "-c", "pass"], check=True)
            subprocess.run(
                ["git", "status", "--porcelain"], cwd=repo, check=True, capture_output=True
            )

        session_start()  # the stops read its record: head_start, session commits
        for _ in range(3):  # warm the page cache and git's index stat data
            hook()
            baseline()
        samples: dict[str, list[tuple[float, float]]] = {
            "hook": [],
            "base": [],
            "off": [],
            "start": [],
            "commit": [],
            "base2": [],
        }
        for _ in range(opts.runs):
            samples["hook"].append(timed(hook))
            samples["base"].append(timed(baseline))
            samples["off"].append(timed(hook_off))
            samples["start"].append(timed(session_start))
        written = len(list(out.glob("*.reflection.json")))
        fill_sidecars(out, opts.sidecars - written)
        git(repo, "add", "-A", "--", "src", "docs.md")
        git(repo, "commit", "-q", "-m", "the session's work, committed")

        def post_commit() -> None:
            done = subprocess.run([str(COMMIT_HOOK)], env=env, cwd=repo, capture_output=True)
            if done.returncode or done.stdout or done.stderr:
                raise SystemExit(f"post-commit hook misbehaved: {done.stderr!r}")

        post_commit()
        note = subprocess.run(
            ["git", "notes", "--ref=refs/notes/reflection", "show", "HEAD"],
            cwd=repo,
            check=True,
            capture_output=True,
        ).stdout
        noted = len(json.loads(note)["sidecars"])
        for _ in range(opts.runs):
            samples["commit"].append(timed(post_commit))
            samples["base2"].append(timed(baseline))
    wall = {k: statistics.median(w for w, _ in v) for k, v in samples.items()}
    cpu = {k: statistics.median(c for _, c in v) for k, v in samples.items()}
    print(f"repo: {n_files} tracked files, 4 changed; {opts.runs} timed runs each")
    scanned = max(opts.sidecars, written)
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for key, label in [
        ("hook", "hook, full capture (reflect-stop-hook)"),
        ("base", "baseline (python -c pass + git status --porcelain)"),
        ("off", "hook, REFLECTION_MODE unset (no-op)"),
    ]:
        print(f"{label}: median {wall[key] * 1000:.1f} ms wall, {cpu[key] * 1000:.1f} ms CPU")
    print(
        f"ratio hook/baseline: {wall['hook'] / wall['base']:.2f}x wall (target <= 2.0x), "
        f"{cpu['hook'] / cpu['base']:.2f}x CPU; sidecars written: {written}"
    )
    ratio: float = wall["hook"] / wall["base"]
    for key, base, label in [
        ("start", "base", "SessionStart hook (reflect-session-start-hook)"),
        ("commit", "base2", f"post-commit hook, {scanned} sidecars scanned, {noted} noted"),
    ]:
        print(
            f"{label}: median {wall[key] * 1000:.1f} ms wall, {cpu[key] * 1000:.1f} ms CPU; "
            f"ratio to baseline {wall[key] / wall[base]:.2f}x wall, "
            f"{cpu[key] / cpu[base]:.2f}x CPU"
        )
    return ratio


def fill_sidecars(out: Path, n: int) -> None:
    """``n`` more sidecars like the first one, from other sessions whose blobs match nothing."""
    template = json.loads(next(out.glob("*.reflection.json")).read_text())
    for i in range(max(0, n)):
        record = {**template, "session_id": f"filler-{i}"}
        record["git"] = {
            **template["git"],
            "uncommitted": [
                {"path": u["path"], "blob": f"{i:040x}"} for u in template["git"]["uncommitted"]
            ],
        }
        (out / f"filler-{i}.reflection.json").write_text(json.dumps(record, indent=2))


if __name__ == "__main__":
    sys.exit(main())
