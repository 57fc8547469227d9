"""The benchmarks keep issue 17's rules in a form a test can check (never their timings).

Every ``bench/*.py`` (the ``_``-prefixed helpers aside) answers ``--help``, states its baseline
and its goal in its docstring, prints no best-of-N, and prints a verdict line: on a tiny
size, run as a real process (those runs are slow, together over a minute).
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT, SHARED_DIR, run_git

BENCH = REPO_ROOT / "bench"
SCRIPTS = sorted(p for p in BENCH.glob("*.py") if not p.name.startswith("_"))
NAMES = [p.name for p in SCRIPTS]
#: a verdict: "verdict: ..." (or "verdict SHAPE: ..." per shape), or a numbered goal line
#: "N. ... -> meets <= GOAL" (load_git.py)
VERDICT = re.compile(r"^verdict\b|\b(meets|misses)\b", re.I | re.M)


def bench_env() -> dict[str, str]:
    paths = [str(REPO_ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def run_bench(name: str, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BENCH / name), *args],
        cwd=REPO_ROOT,
        env=bench_env(),
        capture_output=True,
        text=True,
        timeout=timeout,  # a hang fails the test instead of the suite; not a timing assertion
        check=False,
    )


def docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text("utf-8"))) or ""


def test_the_bench_folder_holds_the_benches_the_readme_lists() -> None:
    listed = set(re.findall(r"^\| `(\w+\.py)` \|", (BENCH / "README.md").read_text(), re.M))
    assert listed == set(NAMES)


@pytest.mark.parametrize("path", SCRIPTS, ids=NAMES)
def test_docstring_names_the_baseline_and_the_goal(path: Path) -> None:
    text = docstring(path).lower()
    assert text, f"{path.name} has no docstring"
    # a bench with an absolute goal (p1.py) has no baseline process; it states its goal
    assert "goal" in text, f"{path.name}: its docstring states no goal"
    assert "baseline" in text or "against" in text, f"{path.name}: its docstring names no baseline"


@pytest.mark.parametrize("path", SCRIPTS, ids=NAMES)
def test_prints_a_verdict_and_no_best_of_n(path: Path) -> None:
    tree = ast.parse(path.read_text("utf-8"))
    literals = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]
    assert any(VERDICT.search(text) for text in literals), f"{path.name} prints no verdict line"
    best = [text for text in literals if re.search(r"\bbest\b", text, re.I)]
    assert not best, f"{path.name} prints a best-of-N: {best}"


@pytest.mark.parametrize("path", SCRIPTS, ids=NAMES)
def test_help(path: Path) -> None:
    done = run_bench(path.name, "--help", timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage:"), done.stdout[:200]


def tiny_history(root: Path) -> Path:
    """A real repository with a bug introduced and then fixed, for the SZZ bench."""
    repo = root / "tiny"
    repo.mkdir()
    run_git(repo, "init", "-q", "-b", "main")
    (repo / "app.py").write_text("def f(x):\n    return x + 1\n")
    run_git(repo, "add", "app.py")
    run_git(repo, "commit", "-q", "-m", "add f")
    (repo / "app.py").write_text("def f(x):\n    return x - 1\n")
    run_git(repo, "commit", "-qam", "refactor f")
    (repo / "app.py").write_text("def f(x):\n    return x + 1\n")
    run_git(repo, "commit", "-qam", "fix: f returned x - 1")
    return repo


def needs_shared() -> None:
    if not (SHARED_DIR / "README.md").is_file():
        pytest.skip(
            f"../shared/ real data not present at {SHARED_DIR} (set AGENT_REFLECTION_SHARED)"
        )


#: the smallest run of each bench that still goes through all its parts; True: needs ../shared/
TINY: dict[str, tuple[list[str], bool]] = {
    "cycle.py": (["--sizes", "2000", "--repeat", "1", "--shapes", "many_tasks"], False),
    "experiments.py": (["--rows", "1000,2000", "--p1-repeat", "1", "--skip-run"], False),
    "hook_latency.py": (["--files", "150,300", "--runs", "1", "--sidecars", "5"], False),
    "in_loop_hook.py": (["--calls", "2"], False),
    "load_board.py": (["--repeat", "1"], True),
    "load_git.py": (["--synthetic", "30", "--repeat", "1", "--no-pydriller"], False),
    "load_labels.py": (["--sizes", "500", "1000", "--repeat", "1"], False),
    "load_sidecars.py": (["--sizes", "100", "200", "--repeat", "1"], False),
    "otlp.py": (
        ["--sizes", "200,400", "--held", "200", "--repeats", "1", "--exporters", "1"],
        False,
    ),
    "p1.py": (["--sizes", "1000", "--repeat", "1", "--no-process"], False),
    "redact.py": (["--repeat", "1", "--scales", "1", "--sidecars", "20"], True),
    "szz.py": (["--synthetic", "0", "--repeat", "1"], False),
}


def test_every_bench_has_a_tiny_run() -> None:
    assert set(TINY) == set(NAMES)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TINY))
def test_tiny_run_prints_a_verdict(name: str, tmp_path: Path) -> None:
    args, shared = TINY[name]
    if shared:
        needs_shared()
    if name == "szz.py":
        args = [str(tiny_history(tmp_path)), *args]
    done = run_bench(name, *args)
    assert done.returncode == 0, f"{name} {args}: {done.stderr[-3000:]}"
    verdicts = [line for line in done.stdout.splitlines() if VERDICT.search(line)]
    assert verdicts, f"{name} printed no verdict line:\n{done.stdout[-3000:]}"


CYCLE_CHECK = """
import sqlite3, sys, tempfile
from dataclasses import replace
from pathlib import Path
import duckdb
import cycle, _cycle_reference
from agent_reflection.cycle.config import CycleConfig
from agent_reflection.cycle.rules import evaluate
for name, shape in cycle.SHAPES.items():
    folder = Path(tempfile.mkdtemp())
    cycle.build(folder / "x.duckdb", 3000, shape)
    _cycle_reference.copy_to_sqlite(folder / "x.duckdb", folder / "x.sqlite")
    config = replace(CycleConfig(), lookback_seconds=shape.lookback_seconds)
    con = duckdb.connect(str(folder / "x.duckdb"), read_only=True)
    ours = {(f.rule, f.subject_id, f.count) for f in evaluate(con, cycle.NOW, config)}
    lite = sqlite3.connect(folder / "x.sqlite")
    theirs = _cycle_reference.evaluate(lite, cycle.NOW, shape.lookback_seconds)
    assert len(theirs) == len(set(theirs)) and ours == set(theirs), name
    print(name, len(ours), sorted({rule for rule, _, _ in ours}))
"""


def test_the_cycle_reference_gives_the_pass_s_findings_on_every_shape() -> None:
    """bench/cycle.py's baseline, the rules in SQLite + Python, finds what the pass finds."""
    done = subprocess.run(
        [sys.executable, "-c", CYCLE_CHECK],
        cwd=BENCH,
        env={**bench_env(), "PYTHONPATH": os.pathsep.join([str(BENCH), bench_env()["PYTHONPATH"]])},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(
        ("many_tasks", "few_tasks_many_findings", "long_lookback")
    )
    # the shapes between them fire three of the four rules (timeout_pattern is rare there)
    assert all(int(line.split()[1]) > 0 for line in lines)
    assert "skill_failure_correlation" in done.stdout and "stale_task" in done.stdout
