"""The bulk tier-1 pass (findings built in SQL, wrapped once) against the version it replaced.

``_cycle_rules_v1`` is the previous implementation (one candidate row per finding, each finding
built one dataclass at a time in Python). Both must give the same findings, in the same order,
with the same texts: on seeded random histories (ties, fractional seconds, several files, a
steps-only file, scopes) and on the real SWE-bench run logs in ``../shared``.
"""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings

import _cycle_rules_v1 as v1
from agent_reflection.cycle.config import CycleConfig
from agent_reflection.cycle.rules import Scope, evaluate, findings_and_streaks
from agent_reflection.load.runs import load_runs
from agent_reflection.store import db
from test_cycle_rules_reference import CONFIG, NOW, HistoryParts, build, histories, insert_rows

STATUSES = ["completed", "completed", "failed", "timeout", "cancelled"]


def assert_same(con: duckdb.DuckDBPyConnection, now: datetime, config: CycleConfig) -> int:
    """Old and new agree at ``now`` (no scope, and a scope of some tasks and sessions);
    returns how many findings there were without a scope."""
    found = evaluate(con, now, config)
    assert tuple(found) == v1.evaluate(con, now, config)
    # the replay's one run a clock (failure_streaks is its second half): the same findings as
    # evaluate's pruned run, and the streaks
    found_too, streaks = findings_and_streaks(con, now, config)
    assert found_too == found
    assert streaks == v1.failure_streaks(con, now, config)
    tasks = sorted({f.subject_id for f in found if f.subject_type == "task"})
    rows = con.execute("SELECT session_id FROM run_outcomes ORDER BY ALL LIMIT 40").fetchall()
    sessions = [r[0] for r in rows]
    for scope in (
        Scope(frozenset(tasks[::2]), frozenset(sessions[::3])),
        Scope(frozenset(), frozenset()),
    ):
        assert tuple(evaluate(con, now, config, scope)) == v1.evaluate(con, now, config, scope)
    return len(found)


def seeded_database(seed: int) -> duckdb.DuckDBPyConnection:
    """A random history: 60 tasks (some paused, some without prompt or runs), 3 run files and
    a steps-only file, 4,000 outcomes over 10 days at microsecond times with many exact ties."""
    rng = random.Random(seed)
    con = db.connect(":memory:")
    times = [NOW - timedelta(seconds=rng.randrange(10 * 86400)) for _ in range(300)]
    times = [t - timedelta(microseconds=rng.choice([0, 0, 1, 250_000, 999_999])) for t in times]
    outcomes = []
    for _ in range(4000):
        outcomes.append(
            (
                f"s{rng.randrange(3000)}",
                rng.choice([None, *[f"T{k}" for k in range(60)]]),
                rng.choice(STATUSES),
                rng.choice(times)
                if rng.random() < 0.5
                else NOW - timedelta(seconds=rng.random() * 10 * 86400),
                rng.choice([None, rng.randrange(120)]),
                f"/runs/file{rng.randrange(3)}.jsonl",
            )
        )
    # a few tasks whose newest outcomes are timeouts (timeout_pattern), some after a success
    for k in range(6):
        for j in range(3 + k % 3):
            at = NOW - timedelta(minutes=10 * j + k, microseconds=k * 1000)
            outcomes.append((f"to{k}-{j}", f"T{k}", "timeout", at, 5, "/runs/file0.jsonl"))
    # one row per (session_id, task_id): a session id reused by several files names a different
    # task in each, which both versions count apart. One session that several files report for
    # the same task is counted once by the new version only (test_cycle_dedup.py).
    outcomes = list({(o[0], o[5]): o for o in outcomes}.values())  # (origin, session_id) key
    outcomes = list({(o[0], o[1]): o for o in outcomes}.values())
    insert_rows(
        con,
        "run_outcomes",
        "(?, ?, 'x', ?, NULL, ?, ?, NULL, 'jsonl', ?, 'task_id', '{}', 0)",
        [list(o) for o in outcomes],
    )
    insert_rows(
        con,
        "run_tasks",
        "(?, ?, ?, ?, ?, ?, FALSE, 't', 0)",
        [
            [
                f"T{k}",
                status := rng.choice(["active", "active", "active", "paused"]),
                status,
                rng.choice([0, 1, 4]),
                rng.choice(["", " ", "write the report"]),
                rng.choice([None, "x" * rng.randrange(90)]),
            ]
            for k in range(50)  # T50..T59 have outcomes but no task record
        ],
    )
    steps = [
        [
            f"k{n}",
            rng.choice(outcomes)[0],
            n,
            rng.choice(["tool_call", "tool_call", "step"]),
            f"skill{rng.randrange(25)}",
            rng.choice(["/runs/file0.jsonl", "/runs/file1.jsonl", "/runs/steps-only.jsonl"]),
        ]
        for n in range(3000)
    ]
    insert_rows(con, "run_steps", "(?, ?, ?, NULL, ?, 'skill', NULL, NULL, ?, ?, 0)", steps)
    # the rules group the outcomes of these files by (task_id, session_id), and take file2's
    # rows as they are: both ways must give v1's findings when no session repeats in a task
    con.execute(
        "INSERT INTO run_overlapping_origins VALUES ('/runs/file0.jsonl'), ('/runs/file1.jsonl')"
    )
    return con


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_same_findings_as_before_on_seeded_histories(seed: int) -> None:
    con = seeded_database(seed)
    configs = [
        CycleConfig(),
        replace(CycleConfig(), lookback_seconds=3 * 3600, streak_scan_limit=4),
        replace(CycleConfig(), lookback_seconds=9 * 86400, skill_failure_min=2),
        # timeouts count as failures: a streak limit above the timeout tail lets it warn
        replace(CycleConfig(), consecutive_failure_limit=8),
        # streaks counted no further than below the failure limit: no task is ever paused
        replace(CycleConfig(), streak_scan_limit=2),
    ]
    total = 0
    for config in configs:
        for clock in (NOW, NOW - timedelta(days=2, microseconds=1)):
            total += assert_same(con, clock, config)
    assert total > 100  # the data gives findings of every kind to compare
    kinds = {f.rule for c in configs for f in evaluate(con, NOW, c)}
    assert kinds == {
        "consecutive_failures",
        "timeout_pattern",
        "stale_task",
        "skill_failure_correlation",
    }


@pytest.mark.slow(reason="60 Hypothesis histories, each built in DuckDB and run both ways")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories)
def test_same_findings_as_before_on_the_reference_histories(history: HistoryParts) -> None:
    con, _outcomes, _tasks, _steps = build(history)
    assert_same(con, NOW, CONFIG)


@pytest.mark.shared
@pytest.mark.slow(
    reason="the 500 real runs at 23 clocks x 4 windows, 8 runs of the rules at each (both "
    "engines: findings, streaks, two scopes): 736 runs at about 30 ms"
)
def test_same_findings_as_before_on_the_real_run_logs(shared_dir: Path, tmp_path: Path) -> None:
    """The 500 SWE-bench runs and their steps, at a clock every 5 minutes across the export,
    with windows from 15 minutes to a day."""
    runs = shared_dir / "data" / "agent-runs"
    con = db.connect(tmp_path / "db.duckdb")
    for name in ("runs.jsonl", "steps.jsonl.gz"):
        load_runs(con, runs / name)
    row = con.execute("SELECT min(finished_at), max(finished_at) FROM run_outcomes").fetchone()
    assert row is not None
    first, last = row
    step = timedelta(minutes=5)
    clocks = [first + step * i for i in range(int((last - first) / step) + 2)]
    total = 0
    for lookback in (900, 3600, 7200, 86400):
        config = replace(CycleConfig(), lookback_seconds=lookback)
        for clock in clocks:
            total += assert_same(con, clock.astimezone(UTC), config)
    assert total > 0
    print(f"{len(clocks)} clocks x 4 windows: {total} findings, the same both ways")
