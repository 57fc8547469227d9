"""A seeded Phase-0 simulator with known truth, and ``run_demo``.

It builds a DuckDB database in which every experiment's true answer is known:

- ``labels``: a calibration corpus whose confidence has a true AUC of 0.70 on the
  self-rated-high subset (binormal scores mapped monotonically into [0.8, 1.0]);
- ``commits`` / ``commit_files``: a small **real** git repository built on the fly (features,
  fixes within and outside the window, a merged PR, reverts), loaded by the git loader;
- ``tasks`` / ``task_events`` / ``task_links`` / ``task_commits``: a board export (also written
  as JSONL) with a known number of detectable, undetectable and right-censored tasks;
- ``reflections``: sidecar records (the typed reflection.v1 model) whose confidence tracks the
  tasks' outcomes, stored through the sidecar loader's own row and insert.

The demo's commits are made in that real repository and loaded by ``load_git_history`` — the
code path of ``reflect load git``. The row writers (``insert_*``) fill the loader tables
directly, by column name, with the columns the loaders write; the inserts are named SQL files
under ``sql/simulate/`` with bound parameters.

Commits written without a repository (:func:`commit_row`, :func:`insert_commit`, used by the
P2/P3 tests) carry no message parsing of their own: every message-derived column comes from
:func:`agent_reflection.load.git.signals.derive_signals`, stamped with its
:data:`~agent_reflection.load.git.signals.SIGNALS_VERSION`, and ``is_merge`` is "more than one
parent" — exactly what the git loader does with each parsed commit. They are not made through a
real repository because those tests choose each commit's sha (their SZZ rows and
abbreviated-hash reverts name it), which git derives itself, and because a repository costs
several git processes per commit. ``tests/test_simulate_phase0.py`` checks these rows equal what
``reflect load git`` writes for the same commits of a real repository.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
from scipy.stats import norm

from agent_reflection.experiments.p2.buckets import BUCKETS
from agent_reflection.experiments.p2.raters import GATE_COLUMNS
from agent_reflection.load.git.agents import AGENT_PATTERNS_VERSION, identity
from agent_reflection.load.git.ai_notes import decide_agent
from agent_reflection.load.git.signals import SIGNALS_VERSION, derive_signals
from agent_reflection.load.sidecars.loader import insert_records
from agent_reflection.reflection.record import Reflection, validate_sidecar
from agent_reflection.store.db import read_sql

SIM_LOAD_ID = 0


# --------------------------------------------------------------------------- row writers


def commit_row(
    repo: str,
    sha: str,
    when: datetime,
    subject: str,
    body: str = "",
    parents: Sequence[str] = (),
) -> dict[str, Any]:
    """One ``commits`` row, column name to value (``sql/simulate/insert_commits.sql``).

    The message-derived columns are the git loader's (:func:`derive_signals`, :func:`decide_agent`).
    """
    s = derive_signals(subject, body)
    sim = identity("Sim", "sim@example.com")  # author and committer of every simulated commit
    agent, agent_source = decide_agent(subject, body, sim, sim, None, None)
    return {
        "repo": repo,
        "sha": sha,
        "parents": list(parents),
        "author_name": "Sim",
        "author_email": "sim@example.com",
        "author_time": when,
        "author_tz_offset": 0,
        "committer_name": "Sim",
        "committer_email": "sim@example.com",
        "committer_time": when,
        "committer_tz_offset": 0,
        "subject": subject,
        "body": body,
        "is_merge": len(parents) > 1,
        "signals_version": SIGNALS_VERSION,
        "is_revert": s.is_revert,
        "reverts_sha": s.reverts_sha,
        "is_reapply": s.is_reapply,
        "pr_number": s.pr_number,
        "cc_type": s.cc_type,
        "cc_scope": s.cc_scope,
        "cc_breaking": s.cc_breaking,
        "is_fix_like": s.is_fix_like,
        "files_available": True,
        "load_id": SIM_LOAD_ID,
        "agent": agent,
        "agent_version": AGENT_PATTERNS_VERSION,
        "agent_source": agent_source,
    }


def insert_commit_rows(
    con: duckdb.DuckDBPyConnection,
    commits: Sequence[Mapping[str, Any]],
    files: Sequence[tuple[str, str, str]],
) -> None:
    """Insert ``commit_row`` rows and (repo, sha, path) file rows."""
    if commits:
        con.executemany(read_sql("simulate/insert_commits.sql"), [dict(c) for c in commits])
    if files:
        con.executemany(
            read_sql("simulate/insert_commit_files.sql"),
            [{"repo": r, "sha": s, "path": p, "load_id": SIM_LOAD_ID} for r, s, p in files],
        )


def insert_commit(
    con: duckdb.DuckDBPyConnection,
    repo: str,
    sha: str,
    when: datetime,
    subject: str,
    body: str = "",
    *,
    parents: Sequence[str] = (),
    files: Iterable[str] = (),
) -> None:
    insert_commit_rows(
        con,
        [commit_row(repo, sha, when, subject, body, parents)],
        [(repo, sha, path) for path in files],
    )


def insert_task(
    con: duckdb.DuckDBPyConnection,
    task_ref: str,
    *,
    created_at: datetime | None = None,
    completed_at: datetime | None = None,
    project: str = "DEMO",
    status: str = "Done",
    labels: Sequence[str] = (),
    updated_on: datetime | None = None,
    source: str = "jsonl",
) -> None:
    origin = "simulated-board.jsonl"
    raw = json.dumps({"task_ref": task_ref})
    con.execute(
        read_sql("simulate/insert_task.sql"),
        {
            "task_ref": task_ref,
            "uuid": hashlib.sha1(f"{origin}:{task_ref}".encode()).hexdigest(),
            "origin": origin,
            "source": source,
            "updated_on": updated_on or completed_at or created_at,
            "title": task_ref,
            "project": project,
            "created_at": created_at,
            "completed_at": completed_at,
            "status": status,
            "labels": list(labels),
            "fingerprint": hashlib.sha1(raw.encode()).hexdigest(),
            "raw": raw,
            "load_id": SIM_LOAD_ID,
        },
    )


def insert_event(
    con: duckdb.DuckDBPyConnection, task_ref: str, at: datetime, kind: str, detail: str = ""
) -> None:
    con.execute(
        read_sql("simulate/insert_event.sql"),
        {"task_ref": task_ref, "at": at, "kind": kind, "detail": detail, "load_id": SIM_LOAD_ID},
    )


def insert_link(
    con: duckdb.DuckDBPyConnection, task_ref: str, target: str, kind: str, direction: str
) -> None:
    con.execute(
        read_sql("simulate/insert_link.sql"),
        {
            "task_ref": task_ref,
            "target_ref": target,
            "kind": kind,
            "direction": direction,
            "load_id": SIM_LOAD_ID,
        },
    )


def insert_task_commit(con: duckdb.DuckDBPyConnection, task_ref: str, repo: str, sha: str) -> None:
    con.execute(
        read_sql("simulate/insert_task_commit.sql"),
        {"task_ref": task_ref, "repo": repo, "sha": sha, "load_id": SIM_LOAD_ID},
    )


def insert_labels(
    con: duckdb.DuckDBPyConnection,
    corpus: str,
    confidence: Sequence[float],
    correct: Sequence[bool],
    groups: Sequence[dict[str, str]] | None = None,
) -> None:
    rows = [
        {
            "corpus": corpus,
            "record_key": f"sim-{i}",
            "confidence": float(c),
            "correct": bool(y),
            "groups": json.dumps(groups[i] if groups else {}),
            "source_file": "simulated",
            "line": i + 1,
            "load_id": SIM_LOAD_ID,
        }
        for i, (c, y) in enumerate(zip(confidence, correct, strict=True))
    ]
    if rows:
        con.executemany(read_sql("simulate/insert_labels.sql"), rows)


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


def insert_reflection(
    con: duckdb.DuckDBPyConnection,
    task_ref: str,
    confidence: float | None,
    *,
    when: datetime,
    agent: str = "sim-agent",
    repo: str = "demo-repo",
    files: Sequence[str] = (),
) -> None:
    """One sidecar row (:func:`sim_reflection`), stored as ``reflect load sidecars`` stores a
    file holding it: the loader's own checks, row, content hash and insert."""
    record = sim_reflection(task_ref, confidence, when=when, agent=agent, repo=repo, files=files)
    insert_records(con, [record], source_file="simulated", load_id=SIM_LOAD_ID)


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

    @property
    def p3_fraction(self) -> float:
        return self.p3_detectable / self.p3_eligible


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
        self.env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "Demo Dev",
            "GIT_AUTHOR_EMAIL": "dev@example.com",
            "GIT_COMMITTER_NAME": "Demo Dev",
            "GIT_COMMITTER_EMAIL": "dev@example.com",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
        }
        self("init", "-q", "-b", "main")

    def __call__(self, *args: str, when: datetime | None = None) -> str:
        env = dict(self.env)
        if when is not None:
            env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = when.isoformat()
        out = subprocess.run(
            ["git", *args], cwd=self.path, env=env, check=True, capture_output=True, text=True
        )
        return out.stdout.strip()

    def commit(self, day: float, message: str, changes: dict[str, str]) -> str:
        for rel, text in changes.items():
            f = self.path / rel
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(text)
            self("add", rel)
        self("commit", "-q", "-m", message, when=_day(day))
        return self("rev-parse", "HEAD")

    def revert(self, day: float, sha: str) -> str:
        self("revert", "--no-edit", sha, when=_day(day))
        return self("rev-parse", "HEAD")


def _edit(rel: str, tag: str) -> dict[str, str]:
    return {rel: f"# {rel}\n# revision: {tag}\n"}


def build_git_repo(path: Path) -> dict[str, str]:
    """The demo repository; returns the true gate of each P2 signal by fixing commit (every
    one is a real failure, made to be caught by that gate)."""
    g = _Git(path)
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
    migration = g.commit(50, "Add user index migration", _edit("migrations/002_index.sql", "i"))
    truth[g.revert(52, migration)] = REVIEW  # a data surface
    colour = g.commit(60, "feat: colour output", _edit("src/cli.py", "colour"))
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
    return truth


def write_gate_labels(path: Path, truth: Mapping[str, str]) -> Path:
    """The simulator's true gates as a team's own P2 gate labels (the second rater's columns)."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(GATE_COLUMNS)
        for sha, gate in truth.items():
            writer.writerow([REPO_NAME, sha, "yes", "yes", gate, "simulated truth"])
    return path


def _commit_sha(con: duckdb.DuckDBPyConnection, subject: str) -> str:
    row = con.execute(read_sql("simulate/commit_by_subject.sql"), {"subject": subject}).fetchone()
    assert row is not None, subject
    return str(row[0])


def build_board(
    con: duckdb.DuckDBPyConnection, export: Path, rng: np.random.Generator
) -> tuple[int, int, int]:
    """Tasks, events, links and task-commit links; writes the export as JSONL too.

    Returns (detectable, eligible, censored)."""
    records: list[dict[str, Any]] = []
    refs = [f"DEMO-{i}" for i in range(1, 51)]
    order = list(rng.permutation(len(refs)))
    plan = (
        ["reopen"] * 6
        + ["reopen30"] * 2
        + ["reopen31"] * 3
        + ["verified"] * 3
        + ["regression"] * 2
        + ["revert"] * 2
    )
    kinds = {refs[i]: plan[k] if k < len(plan) else "none" for k, i in enumerate(order)}
    for i, ref in enumerate(refs):
        kind = kinds[ref]
        done = _day(50 if kind == "revert" else 100 + i)
        if kind == "revert":  # link the task to a commit that is later reverted
            subject = (
                "Add user index migration"
                if ref == min(r for r, k in kinds.items() if k == "revert")
                else "feat: colour output"
            )
            done = _day(50.5 if subject.startswith("Add") else 60.5)
            insert_task_commit(con, ref, REPO_NAME, _commit_sha(con, subject))
        created = done - timedelta(days=3)
        insert_task(con, ref, created_at=created, completed_at=done, status="Done")
        events: list[tuple[datetime, str, str]] = [(created, "created", ""), (done, "closed", "")]
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
            insert_task(con, bug, created_at=done + timedelta(days=10), status="Open")
            insert_link(con, ref, bug, "Regression", "outward")
            records.append({"task_ref": bug, "created_at": (done + timedelta(days=10)).isoformat()})
        for at, ev, detail in events:
            insert_event(con, ref, at, ev, detail)
        records.append(
            {
                "task_ref": ref,
                "created_at": created.isoformat(),
                "completed_at": done.isoformat(),
                "kind": kind,
                "events": [[a.isoformat(), e, d] for a, e, d in events],
            }
        )
    for j in range(5):  # completed too recently: right-censored
        ref = f"DEMO-NEW-{j}"
        done = _day(380 + j)
        insert_task(con, ref, created_at=done - timedelta(days=1), completed_at=done)
        records.append({"task_ref": ref, "completed_at": done.isoformat(), "kind": "censored"})
    insert_event(con, "DEMO-1", _day(400), "commented", "the data's last timestamp")
    export.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    return 15, 50, 5


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
    from agent_reflection.load.git.history import load_git_history
    from agent_reflection.load.labels import load_labels
    from agent_reflection.store.db import connect

    out_dir = out_dir.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    db_path = out_dir / "demo.duckdb"
    repo = out_dir / REPO_NAME
    for stale in (db_path, db_path.with_suffix(".duckdb.wal")):
        stale.unlink(missing_ok=True)
    if repo.exists():
        import shutil

        shutil.rmtree(repo)
    rng = np.random.default_rng(seed)
    gates = build_git_repo(repo)
    buckets = {b: sum(1 for g in gates.values() if g == b) for b in BUCKETS}
    gate_labels = write_gate_labels(out_dir / "p2_gate_labels.csv", gates)
    con = connect(db_path)
    try:
        load_git_history(con, repo, name=REPO_NAME)
        board = out_dir / "board.jsonl"
        detectable, eligible, censored = build_board(con, board, rng)
        labels = out_dir / "labels.jsonl"
        write_labels(labels, rng)
        load_labels(con, labels, corpus="simulated")
        tasks = con.execute(read_sql("simulate/demo_tasks_reopened.sql")).fetchall()
        confidences = [
            float(np.clip(rng.normal(0.78 if negative else 0.88, 0.06), 0, 1))
            for _, negative in tasks
        ]
        records = [
            sim_reflection(ref, round(confidence, 3), when=BASE, repo=REPO_NAME)
            for (ref, _), confidence in zip(tasks, confidences, strict=True)
        ]
        insert_records(con, records, source_file="simulated", load_id=SIM_LOAD_ID)
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
