"""The write-back on real volume: the 500 SWE-bench runs of ../shared/ replayed as a Wintermute
platform's sub-sessions (the project's own swe-agent mapping: task = repository), in a database
built with Wintermute's DDL and a job store made by APScheduler, one daily job per repository."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from agent_reflection.load.runs import load_runs
from agent_reflection.store import db as dbmod
from test_cycle_real_export import expected_pauses
from test_cycle_writeback import DDL, Wintermute, duck, insert, reflect

pytest.importorskip("apscheduler", reason="APScheduler (dev extra) builds the job store")
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.cron import CronTrigger

pytestmark = pytest.mark.shared


def replay_as_wintermute(runs_file: Path, tmp_path: Path) -> Wintermute:
    scratch = dbmod.connect(tmp_path / "scratch.duckdb")
    load_runs(scratch, runs_file, "swe-agent")
    tasks = scratch.execute(
        "SELECT task_id, run_count, ai_prompt, last_result_summary FROM run_tasks ORDER BY 1"
    ).fetchall()
    outcomes = scratch.execute(
        "SELECT session_id, task_id, objective, status, epoch(started_at), epoch(finished_at), "
        "result_length FROM run_outcomes ORDER BY finished_at, session_id"
    ).fetchall()
    scratch.close()
    platform = Wintermute(tmp_path / "data")
    platform.data.mkdir()
    with closing(sqlite3.connect(platform.db)) as con:
        con.execute("PRAGMA journal_mode=WAL")
        con.executescript(DDL.read_text("utf-8"))
        first = min(o[4] or o[5] for o in outcomes)
        for task_id, runs, prompt, summary in tasks:
            insert(
                con,
                "tasks",
                {
                    "id": task_id,
                    "content": prompt,
                    "status": "active",
                    "created": first,
                    "schedule_type": "daily",
                    "schedule_desc": "daily at 03:00",
                    "schedule_config": json.dumps({"schedule_type": "daily", "at": "03:00"}),
                    "ai_prompt": prompt,
                    "background": 1,
                    "apscheduler_job_id": task_id,
                    "last_result_summary": summary,
                    "run_count": runs,
                },
            )
        for session, task_id, objective, status, started, finished, length in outcomes:
            insert(
                con,
                "sub_session_outcomes",
                {
                    "session_id": session,
                    "timestamp": finished,
                    "objective": objective or "",
                    "system_prompt_mode": "full",
                    "status": status,
                    "result_length": length,
                    "duration_seconds": finished - started if started else None,
                    "task_id": task_id,
                },
            )
        con.commit()
    scheduler = BackgroundScheduler(
        jobstores={"default": SQLAlchemyJobStore(url=f"sqlite:///{platform.store}")},
        timezone="UTC",
    )
    scheduler.start(paused=True)
    for task_id, *_ in tasks:
        scheduler.add_job(
            "builtins:dict",
            trigger=CronTrigger(hour=3, timezone="UTC"),
            id=task_id,
            kwargs={"task_id": task_id},
        )
    scheduler.shutdown(wait=False)
    return platform


def logged(platform: Wintermute) -> list[dict[str, Any]]:
    return [json.loads(r[6]) | {"rule": r[5]} for r in platform.reflection_log()]


@pytest.mark.slow
def test_the_real_export_written_back(shared_dir: Path, tmp_path: Path) -> None:
    runs_file = shared_dir / "data" / "agent-runs" / "runs.jsonl"
    runs = [json.loads(x) for x in runs_file.read_text().splitlines()]
    platform = replay_as_wintermute(runs_file, tmp_path)
    jobs = platform.jobs()
    db = tmp_path / "ours.duckdb"
    now, lookback = "2025-11-19T00:40:00Z", 3600
    args = [
        "cycle",
        "run",
        str(platform.db),
        "--now",
        now,
        "--lookback",
        str(lookback),
        "--db",
        str(db),
    ]

    before = platform.fingerprint()
    reflect(*args)
    assert platform.fingerprint() == before  # the dry run

    reflect(*args, "--apply")
    rows = logged(platform)
    found = duck(db, "SELECT rule, subject_id FROM findings WHERE applied ORDER BY seq")
    assert [(r["rule"], r["subject_id"]) for r in rows] == found
    clock = datetime.fromisoformat(now.replace("Z", "+00:00"))
    pauses = expected_pauses(runs, clock, lookback)
    paused = {r["subject_id"] for r in rows if r["action_taken"] == "paused_task"}
    assert paused == set(pauses) and paused
    assert set(platform.jobs()) == set(jobs) - paused
    assert {t for t in pauses if platform.status(t) == "paused"} == paused

    reflect(*args, "--apply")  # the same data again: nothing new
    assert logged(platform) == rows
    assert set(platform.jobs()) == set(jobs) - paused
