"""A seeded Phase-0 simulator with known truth, and ``run_demo``.

It writes the files a team would load, and loads them with the loaders ``reflect load`` runs,
so that every experiment's true answer is known:

- ``labels.jsonl``: a calibration corpus whose confidence has a true AUC of 0.70 on the
  self-rated-high subset (binormal scores mapped monotonically into [0.8, 1.0]), loaded by the
  labels loader;
- a small **real** git repository built on the fly (features, fixes within and outside the
  window, a merged PR, reverts), loaded by the git loader (``load_git_history``);
- ``board.jsonl``: a board export with a known number of detectable, undetectable and
  right-censored tasks, loaded as ``reflect load board --format jsonl`` loads it; every task
  has an event history and a commit naming it (the task matcher links them), so each task
  carries the channels P3 requires;
- ``reflections``: sidecar records (the typed reflection.v1 model) whose confidence tracks the
  tasks' outcomes, stored through the sidecar loader's own row and insert.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import norm

from agent_reflection.experiments.p2.buckets import BUCKETS
from agent_reflection.experiments.p2.raters import GATE_COLUMNS
from agent_reflection.load.sidecars.loader import insert_records
from agent_reflection.reflection.record import Reflection, validate_sidecar
from agent_reflection.simulate.session import commit_env, git, write_files

#: What the ``loads`` row that marks the demo's database as simulated says made it.
SIMULATED_BY = "reflect demo: the seeded Phase-0 world (simulate/phase0.py), seed {seed}"


# --------------------------------------------------------------------------- records


def sim_reflection(
    task_ref: str,
    confidence: float | None,
    *,
    when: datetime,
    agent: str = "sim-agent",
    repo: str = "demo-repo",
    files: Sequence[str] = (),
) -> Reflection:
    """One simulated sidecar record; its risk floor is the production one of ``files``."""
    from agent_reflection.reflection.risk_floor import evaluate_risk_floor

    return validate_sidecar(
        {
            "schema": "reflection.v1",
            "task_ref": task_ref,
            "agent": agent,
            "session_id": f"sim-{task_ref}",
            "timestamp": when.astimezone(UTC).isoformat(),
            "repo": repo,
            "confidence": confidence,
            "most_likely_wrong": None,
            "known_not_in_diff": None,
            "risk": evaluate_risk_floor(files).to_dict(),
            "files_changed": list(files),
            "provenance": {
                "source": "stop-hook",
                "reflection_attempt": 1,
                "degraded": confidence is None,
                "reflection_mode": "solo",
            },
        }
    )


# --------------------------------------------------------------------------- the simulation

BASE = datetime(2024, 1, 1, 9, 0, tzinfo=UTC)
REPO_NAME = "demo-repo"
#: The simulated true AUC of confidence for correctness on the self-rated-high subset.
TRUE_AUC = 0.70
ONLY_SELF, REVIEW = "only-self-reflection", "human-review"


@dataclass(frozen=True)
class DemoTruth:
    auc: float
    p2_buckets: dict[str, int]
    p3_detectable: int
    p3_eligible: int
    p3_censored: int


@dataclass(frozen=True)
class DemoData:
    db_path: Path
    repo_path: Path
    board_path: Path
    labels_path: Path
    truth: DemoTruth
    # the simulator's true gate of each counted P2 signal, as the team's own gate labels
    gate_labels_path: Path | None = None


@dataclass(frozen=True)
class DemoResult:
    data: DemoData
    report: Any  # runner.RunReport

    def describe(self) -> str:
        t = self.data.truth
        return (
            f"simulated truth: P1 AUC {t.auc:.2f}; P2 buckets {t.p2_buckets}; P3 "
            f"{t.p3_detectable}/{t.p3_eligible} detectable ({t.p3_censored} censored)\n"
            f"database: {self.data.db_path}\ngit repo: {self.data.repo_path}\n"
            f"board export: {self.data.board_path}"
        )


def _day(d: float) -> datetime:
    return BASE + timedelta(days=d)


class _Git:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self("init", "-q", "-b", "main")

    def __call__(self, *args: str, when: datetime | None = None) -> str:
        env = {**os.environ, **commit_env("Demo Dev", "dev@example.com", when)}
        return git(self.path, args, env)

    def commit(self, day: float, message: str, changes: dict[str, str]) -> str:
        write_files(self.path, changes)
        self("add", *changes)
        self("commit", "-q", "-m", message, when=_day(day))
        return self("rev-parse", "HEAD")

    def revert(self, day: float, sha: str) -> str:
        self("revert", "--no-edit", sha, when=_day(day))
        return self("rev-parse", "HEAD")


def _edit(rel: str, tag: str) -> dict[str, str]:
    return {rel: f"# {rel}\n# revision: {tag}\n"}


def build_git_repo(
    path: Path, reverted_tasks: tuple[str, str], task_work: Mapping[str, float] | None = None
) -> dict[str, str]:
    """The demo repository; returns the true gate of each P2 signal by fixing commit (every
    one is a real failure, made to be caught by that gate). The two commits that are later
    reverted name ``reverted_tasks`` (the board's tasks of that work) in their messages; each
    other task of ``task_work`` (task -> day) gets one commit naming it, on a file of its own
    that nothing later touches (so it adds no P2 or P3 signal)."""
    g = _Git(path)
    migration_task, colour_task = (f"\n\nTask: {ref}" for ref in reverted_tasks)
    truth: dict[str, str] = {}
    initial = {
        p: f"# {p}\n"
        for p in (
            "README.md",
            "src/report.py",
            "src/cli.py",
            "src/auth/login.py",
            "src/search.py",
            "tests/test_report.py",
            "migrations/001_init.sql",
        )
    }
    g.commit(0, "Initial import", initial)
    g.commit(2, "feat: totals in report", _edit("src/report.py", "totals"))
    truth[
        g.commit(
            3,
            "fix: rounding in totals",
            {**_edit("src/report.py", "rounding"), **_edit("tests/test_report.py", "t1")},
        )
    ] = ONLY_SELF  # the fix adds a test, so CI had not caught it
    g.commit(10, "feat: login throttle", _edit("src/auth/login.py", "throttle"))
    truth[g.commit(12, "fix: throttle resets too early", _edit("src/auth/login.py", "reset"))] = (
        REVIEW
    )
    g.commit(20, "feat: csv export", _edit("src/report.py", "csv"))
    truth[g.commit(22, "fix: csv export drops last row", _edit("src/report.py", "csv2"))] = (
        ONLY_SELF
    )
    g.commit(30, "feat(cli): verbose flag", _edit("src/cli.py", "verbose"))
    truth[g.commit(31, "hotfix: verbose flag crash", _edit("src/cli.py", "verbose2"))] = ONLY_SELF
    g.commit(40, "feat: pdf export", _edit("src/report.py", "pdf"))
    g.commit(49, "fix: pdf margins", _edit("src/report.py", "pdf2"))  # 9 days: no signal
    migration = g.commit(
        50, f"Add user index migration{migration_task}", _edit("migrations/002_index.sql", "i")
    )
    truth[g.revert(52, migration)] = REVIEW  # a data surface
    colour = g.commit(60, f"feat: colour output{colour_task}", _edit("src/cli.py", "colour"))
    truth[g.revert(61, colour)] = ONLY_SELF
    g.commit(70, "fix: typo in readme", _edit("README.md", "typo"))  # no feature: no signal
    g.commit(80, "feat: summary page", _edit("src/report.py", "summary"))
    truth[g.commit(82, "fix: failing test in summary", _edit("src/report.py", "summary2"))] = "ci"
    g("checkout", "-q", "-b", "search")
    g.commit(85, "Add search", _edit("src/search.py", "search"))
    g("checkout", "-q", "main")
    g(
        "merge",
        "--no-ff",
        "-q",
        "-m",
        "Merge pull request #12 from demo/search",
        "search",
        when=_day(86),
    )
    truth[g.commit(88, "fix: search crash on empty query", _edit("src/search.py", "empty"))] = (
        ONLY_SELF
    )
    for i in range(12):  # enough signals for a P2 verdict (p2.min_signals = 20)
        widget = f"src/widgets/w{i}.py"
        g.commit(100 + 3 * i, f"feat: widget {i}", _edit(widget, "new"))
        truth[g.commit(101 + 3 * i, f"fix: widget {i} crash", _edit(widget, "fixed"))] = ONLY_SELF
    for ref, day in sorted((task_work or {}).items(), key=lambda item: item[1]):
        if ref not in reverted_tasks:
            g.commit(day, f"docs: notes\n\nTask: {ref}", _edit(f"notes/{ref}.md", "work"))
    return truth


def write_gate_labels(path: Path, truth: Mapping[str, str]) -> Path:
    """The simulator's true gates as a team's own P2 gate labels (the second rater's columns),
    once per simulated rater: two raters who both read the truth, as a confirmatory P2 verdict
    needs two ([p2] own_labels_min_raters)."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow([*GATE_COLUMNS, "rater"])
        for rater in SIMULATED_RATERS:
            for sha, gate in truth.items():
                writer.writerow([REPO_NAME, sha, "yes", "yes", gate, "simulated truth", rater])
    return path


#: the demo's gate raters: both read the simulator's truth, so they agree on every signal
SIMULATED_RATERS = ("simulated-rater-1", "simulated-rater-2")


#: The board's plan: how many tasks of each kind (the rest of the 50 have no signal).
BOARD_PLAN = (
    ("reopen", 6),
    ("reopen30", 2),
    ("reopen31", 3),
    ("verified", 3),
    ("regression", 2),
    ("revert", 2),
)
#: Kinds whose task is reopened (its reflection's confidence is drawn lower).
REOPENED = ("reopen", "reopen30", "reopen31")


def plan_board(rng: np.random.Generator) -> dict[str, str]:
    """The kind of each of the 50 tasks ``DEMO-1`` .. ``DEMO-50`` (:data:`BOARD_PLAN`)."""
    plan = [kind for kind, n in BOARD_PLAN for _ in range(n)]
    kinds = ["none"] * 50
    for k, i in enumerate(rng.permutation(len(kinds))):
        if k < len(plan):
            kinds[i] = plan[k]
    return {f"DEMO-{i}": kind for i, kind in enumerate(kinds, start=1)}


def done_days(kinds: Mapping[str, str]) -> dict[str, float]:
    """The day each task of the plan is completed (the reverted work's on its revert)."""
    migration_task, _ = reverted_tasks(kinds)
    days = {}
    for i, (ref, kind) in enumerate(kinds.items()):
        days[ref] = float(100 + i)
        if kind == "revert":  # the commit linked to the task is later reverted
            days[ref] = 50.5 if ref == migration_task else 60.5
    return days


def reverted_tasks(kinds: Mapping[str, str]) -> tuple[str, str]:
    """The tasks whose commits are reverted: the migration's, then the colour output's."""
    first, second = sorted(r for r, k in kinds.items() if k == "revert")
    return first, second


def write_board(
    export: Path, kinds: Mapping[str, str], rng: np.random.Generator
) -> tuple[int, int, int]:
    """The board export (JSONL, the generic format of ``reflect load board``): tasks, their
    events and links. Returns (detectable, eligible, censored)."""
    records: list[dict[str, Any]] = []
    days = done_days(kinds)
    for i, (ref, kind) in enumerate(kinds.items()):
        done = _day(days[ref])
        created = done - timedelta(days=3)
        events: list[tuple[datetime, str, str]] = [
            (created, "created", ""),
            (created + timedelta(hours=1), "assigned", ""),  # an event history
            (done, "closed", ""),
        ]
        links = []
        if kind == "reopen":
            events.append((done + timedelta(days=float(rng.integers(1, 21))), "reopened", ""))
        elif kind == "reopen30":
            events.append((done + timedelta(days=30), "reopened", "day 30"))
        elif kind == "reopen31":
            events.append((done + timedelta(days=31), "reopened", "day 31"))
        elif kind == "verified":
            events.append((done + timedelta(days=5), "status_changed", "Done -> Verified"))
        elif kind == "regression":
            bug = f"BUG-{i}"
            records.append(_task(bug, "Open", done + timedelta(days=10)))
            links.append({"target_ref": bug, "kind": "Regression", "direction": "outward"})
        if ref == "DEMO-1":
            events.append((_day(400), "commented", "the data's last timestamp"))
        record = _task(ref, "Done", created, done)
        record["events"] = [{"at": a.isoformat(), "kind": e, "detail": d} for a, e, d in events]
        record["links"] = links
        record["simulated"] = kind
        records.append(record)
    for j in range(5):  # completed too recently: right-censored
        done = _day(380 + j)
        record = _task(f"DEMO-NEW-{j}", "Done", done - timedelta(days=1), done)
        record["simulated"] = "censored"
        records.append(record)
    export.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    return 15, 50, 5


def _task(ref: str, status: str, created: datetime, done: datetime | None = None) -> dict[str, Any]:
    """One task of the board export, in the fields of the generic JSONL format."""
    record: dict[str, Any] = {"task_ref": ref, "title": ref, "kind": "task", "project": "DEMO"}
    record.update(status=status, created_at=created.isoformat())
    if done is not None:
        record["completed_at"] = done.isoformat()
    return record


def write_labels(
    path: Path, rng: np.random.Generator, n_high: int = 1800, n_low: int = 300
) -> None:
    """A corpus whose high-subset AUC is :data:`TRUE_AUC` in the population."""
    d = float(np.sqrt(2) * norm.ppf(TRUE_AUC))
    y = rng.random(n_high) < 0.6
    x = rng.normal(size=n_high) + d * y
    conf_high = 0.8 + 0.2 * norm.cdf(x - d / 2)
    conf_low = rng.uniform(0.2, 0.8, n_low)
    y_low = rng.random(n_low) < conf_low
    rows = [
        {
            "confidence": round(float(c), 6),
            "correct": bool(v),
            "model": "sim-a" if i % 2 else "sim-b",
            "question_id": f"q{i}",
        }
        for i, (c, v) in enumerate(zip(np.r_[conf_high, conf_low], np.r_[y, y_low], strict=True))
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")


def build_demo(out_dir: Path, *, seed: int = 7) -> DemoData:
    """Build the demo database (fresh each time) and its inputs under ``out_dir``."""
    from agent_reflection.load.board.loader import load_board_export
    from agent_reflection.load.git.history import load_git_history
    from agent_reflection.load.labels import load_labels
    from agent_reflection.store.db import connect, record_simulated

    out_dir = out_dir.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    db_path = out_dir / "demo.duckdb"
    repo = out_dir / REPO_NAME
    for stale in (db_path, db_path.with_suffix(".duckdb.wal")):
        stale.unlink(missing_ok=True)
    shutil.rmtree(repo, ignore_errors=True)
    rng = np.random.default_rng(seed)
    kinds = plan_board(rng)
    work = {ref: day - 1 for ref, day in done_days(kinds).items()}  # the day before it closes
    gates = build_git_repo(repo, reverted_tasks(kinds), work)
    buckets = {b: sum(1 for g in gates.values() if g == b) for b in BUCKETS}
    gate_labels = write_gate_labels(out_dir / "p2_gate_labels.csv", gates)
    board = out_dir / "board.jsonl"
    detectable, eligible, censored = write_board(board, kinds, rng)
    labels = out_dir / "labels.jsonl"
    write_labels(labels, rng)
    con = connect(db_path)
    try:
        # every report made from this database says SIMULATED; the sidecar rows, stored
        # without a load of files, belong to this load
        simulated_load = record_simulated(con, SIMULATED_BY.format(seed=seed))
        load_git_history(con, repo, name=REPO_NAME)
        load_board_export(con, board, "jsonl")  # and the matcher: task <-> commit links
        load_labels(con, labels, corpus="simulated")
        # one reflection per task, in task_ref order (censored tasks too); lower confidence
        # for a task that was reopened
        tasks = sorted([*kinds, *(f"DEMO-NEW-{j}" for j in range(censored))])
        records = [
            sim_reflection(
                ref,
                round(float(np.clip(rng.normal(0.78 if reopened else 0.88, 0.06), 0, 1)), 3),
                when=BASE,
                repo=REPO_NAME,
            )
            for ref, reopened in ((r, kinds.get(r) in REOPENED) for r in tasks)
        ]
        insert_records(con, records, source_file="simulated", load_id=simulated_load)
    finally:
        con.close()
    truth = DemoTruth(TRUE_AUC, buckets, detectable, eligible, censored)
    return DemoData(db_path, repo, board, labels, truth, gate_labels)


def run_demo(out_dir: Path, *, seed: int = 7, **runner_options: Any) -> DemoResult:
    """Build the demo database and run every experiment; the report is under out_dir/reports."""
    from agent_reflection.experiments.runner import run_experiments

    data = build_demo(out_dir, seed=seed)
    # P2 is corrected by the simulator's own truth, not a matrix transported from real repos
    params = {**runner_options.pop("params", {}), "gate_labels": [str(data.gate_labels_path)]}
    report = run_experiments(
        ["p1", "p2", "p3"],
        db_path=data.db_path,
        out_root=out_dir.resolve() / "reports",
        params=params,
        **runner_options,
    )
    return DemoResult(data, report)
