"""``reflect cycle run --apply`` writes back to a Wintermute database built with the platform's
own DDL (tests/data/wintermute_conversation.sql) and a job store made by APScheduler itself:
findings and tier 2 in ``interaction_log``, paused tasks' jobs removed; idempotent passes; a dry
run that changes no byte; a failure or a crash mid-pass that leaves the platform consistent."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

from _runlog import add_outcome, add_task, make_platform_db
from agent_reflection.cli._groups import cli, register_all_commands
from agent_reflection.errors import ReflectionError

apscheduler = pytest.importorskip("apscheduler", reason="APScheduler (dev extra) builds the store")
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore  # noqa: E402
from apscheduler.schedulers.background import BackgroundScheduler  # noqa: E402
from apscheduler.triggers.cron import CronTrigger  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DDL = REPO / "tests" / "data" / "wintermute_conversation.sql"
NOW = 1_750_000_000.0  # 2025-06-15T15:06:40Z, the clock of every pass
THREAD = "web_3f2a"

#: (task id, content, ai_prompt, hour of its daily job, statuses newest first, result length)
TASKS = [
    (
        "task_0a1b2c3d",
        "Nightly status report",
        "Write the nightly status report and mail it",
        21,
        ["failed", "failed", "failed"],
        0,
    ),
    (
        "task_4e5f6a7b",
        "Check the backups",
        "Check last night's backups and report their sizes",
        6,
        ["completed", "completed", "completed"],
        800,
    ),
    (
        "task_8c9d0e1f",
        "Morning digest",
        "Summarise the overnight mail into a digest",
        7,
        ["completed", "completed", "completed"],
        12,
    ),
]
NIGHTLY, BACKUPS, DIGEST = (t[0] for t in TASKS)


@dataclass
class Wintermute:
    data: Path  # the platform's data/ folder

    @property
    def db(self) -> Path:
        return self.data / "conversation.db"

    @property
    def store(self) -> Path:
        return self.data / "scheduler.db"

    def rows(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        with closing(sqlite3.connect(self.db)) as con:
            return con.execute(sql, params).fetchall()

    def reflection_log(self) -> list[tuple[Any, ...]]:
        """What the platform's debug view lists for session system:reflection, oldest first
        (its get_interaction_log query: WHERE session = ? ORDER BY id)."""
        return self.rows(
            "SELECT id, timestamp, action, session, llm, input, output, status, raw_output "
            "FROM interaction_log WHERE session = ? ORDER BY id",
            "system:reflection",
        )

    def status(self, task_id: str) -> str:
        return str(self.rows("SELECT status FROM tasks WHERE id = ?", task_id)[0][0])

    def jobs(self) -> dict[str, str]:
        """job id → trigger, as APScheduler itself loads them from the store."""
        scheduler = BackgroundScheduler(
            jobstores={"default": SQLAlchemyJobStore(url=f"sqlite:///{self.store}")},
            timezone="UTC",
        )
        scheduler.start(paused=True)
        try:
            return {job.id: str(job.trigger) for job in scheduler.get_jobs()}
        finally:
            scheduler.shutdown(wait=False)

    def due_jobs(self, at: datetime) -> list[str]:
        """The jobs a running scheduler would fire at its wake-up at ``at``: it calls the
        store's get_due_jobs, which reads the table (APScheduler 3 keeps no copy in memory)."""
        scheduler = BackgroundScheduler(
            jobstores={"default": SQLAlchemyJobStore(url=f"sqlite:///{self.store}")},
            timezone="UTC",
        )
        scheduler.start(paused=True)
        try:
            store = scheduler._lookup_jobstore("default")
            return sorted(job.id for job in store.get_due_jobs(at))
        finally:
            scheduler.shutdown(wait=False)

    def fingerprint(self) -> dict[str, str]:
        """sha256 of every file in data/ that holds data (a -journal or a non-empty -wal left
        behind shows). Not the -shm WAL index: SQLite readers write their read marks there (a
        read-only open of a WAL database creates it, with an empty -wal), and a running
        Wintermute keeps both open anyway."""
        return {
            p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(self.data.iterdir())
            if not p.name.endswith("-shm")
            and not (p.name.endswith("-wal") and not p.stat().st_size)
        }


def outcome_row(task: tuple[Any, ...], i: int, status: str, at: float) -> dict[str, Any]:
    task_id, content, prompt, _hour, _statuses, length = task
    return {
        "session_id": f"sub_{task_id[5:]}_{i}",
        "timestamp": at,
        # what scheduler_thread._fire_task spawns for a background task
        "objective": f"[TASK {task_id}] {prompt}\n\n(Task: {content})\n\n"
        "If you have nothing actionable to report, respond with exactly: [NO_ACTION]",
        "system_prompt_mode": "full",
        "tools_used": json.dumps(["skill", "send_file"]),
        "tool_call_count": 4,
        "duration_seconds": 95.0,
        "timeout_value": 300,
        "status": status,
        "result_length": length,
        "nesting_depth": 1,
        "backend_used": "local-qwen",
        "task_id": task_id,
    }


def insert(con: sqlite3.Connection, table: str, row: dict[str, Any]) -> None:
    names = ", ".join(row)
    marks = ", ".join("?" for _ in row)
    con.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})", list(row.values()))


def build_wintermute(tmp_path: Path) -> Wintermute:
    """Three daily background tasks with their jobs; the nightly one failed its last three runs
    (reading the skill 'report' each time), the digest produced 12 characters each time."""
    platform = Wintermute(tmp_path / "data")
    platform.data.mkdir()
    with closing(sqlite3.connect(platform.db)) as con:
        con.execute("PRAGMA journal_mode=WAL")
        con.executescript(DDL.read_text("utf-8"))
        for task in TASKS:
            task_id, content, prompt, hour, statuses, _length = task
            schedule = {"schedule_type": "daily", "at": f"{hour:02d}:00"}
            insert(
                con,
                "tasks",
                {
                    "id": task_id,
                    "thread_id": THREAD,
                    "content": content,
                    "priority": 5,
                    "status": "active",
                    "created": NOW - 30 * 86400,
                    "schedule_type": "daily",
                    "schedule_desc": f"daily at {hour:02d}:00",
                    "schedule_config": json.dumps(schedule),
                    "ai_prompt": prompt,
                    "background": 1,
                    "apscheduler_job_id": task_id,
                    "last_run_at": NOW - 3600,
                    # what record_task_run writes after each firing
                    "last_result_summary": "executed (autonomous)",
                    "run_count": len(statuses),
                },
            )
            for i, status in enumerate(statuses):
                at = NOW - 3600 * (i + 1)
                row = outcome_row(task, i, status, at)
                insert(con, "sub_session_outcomes", row)
                if task_id == NIGHTLY:
                    call = {
                        "tool": "skill",
                        "arguments": {"action": "read", "skill_name": "report"},
                    }
                    insert(
                        con,
                        "interaction_log",
                        {
                            "timestamp": at - 60,
                            "action": "tool_call",
                            "session": row["session_id"],
                            "llm": "local-qwen",
                            "input": json.dumps(call),
                            "output": "# report ...",
                            "status": "ok",
                        },
                    )
        con.commit()
    scheduler = BackgroundScheduler(
        jobstores={"default": SQLAlchemyJobStore(url=f"sqlite:///{platform.store}")},
        timezone="UTC",
    )
    scheduler.start(paused=True)  # never fires: only the store's rows matter here
    for task_id, content, prompt, hour, _statuses, _length in TASKS:
        # the keyword arguments scheduler_thread.ensure_job stores with each job
        kwargs = {
            "task_id": task_id,
            "message": content,
            "ai_prompt": prompt,
            "thread_id": THREAD,
            "background": True,
            "schedule_type": "daily",
            "schedule": f"daily at {hour:02d}:00",
        }
        scheduler.add_job(
            "builtins:dict",  # Wintermute's _fire_task_job is not importable here; it never runs
            trigger=CronTrigger(hour=hour, minute=0, timezone="UTC"),
            id=task_id,
            kwargs=kwargs,
            replace_existing=True,
            misfire_grace_time=3600,
        )
    scheduler.shutdown(wait=False)
    return platform


def reflect(*args: str, ok: bool = True) -> str:
    register_all_commands()
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, result.output
    return result.output


def run_args(platform: Wintermute, db: Path, now: float = NOW) -> list[str]:
    return ["cycle", "run", str(platform.db), "--now", str(now), "--db", str(db)]


def duck(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(db)) as con:
        return con.execute(sql).fetchall()


@pytest.fixture
def platform(tmp_path: Path) -> Wintermute:
    return build_wintermute(tmp_path)


def test_apply_shows_the_pass_in_the_platforms_own_log(
    platform: Wintermute, tmp_path: Path
) -> None:
    db = tmp_path / "ours.duckdb"
    in_two_days = datetime.now(UTC) + timedelta(days=2)  # every daily job is due by then
    assert platform.due_jobs(in_two_days) == [NIGHTLY, BACKUPS, DIGEST]
    before = time.time()
    out = reflect(*run_args(platform, db), "--apply")
    log = platform.reflection_log()
    assert [(r[2], r[3], r[4], r[5], r[7], r[8]) for r in log] == [
        ("reflection_rule", "system:reflection", "rule_engine", "consecutive_failures", "ok", None),
        ("reflection_rule", "system:reflection", "rule_engine", "stale_task", "ok", None),
        (
            "reflection_rule",
            "system:reflection",
            "rule_engine",
            "skill_failure_correlation",
            "ok",
            None,
        ),
    ]
    assert all(before <= r[1] <= time.time() for r in log)  # when it was written, as Wintermute
    outputs = [json.loads(r[6]) for r in log]
    # Wintermute's five keys, then ours
    assert [list(o)[:5] for o in outputs] == [
        ["severity", "subject_type", "subject_id", "detail", "action_taken"]
    ] * 3
    assert [(o["subject_id"], o["severity"], o["action_taken"]) for o in outputs] == [
        (NIGHTLY, "action_taken", "paused_task"),
        (DIGEST, "warning", ""),
        ("report", "warning", "flagged_skill"),
    ]
    assert len({o["finding_id"] for o in outputs}) == 3
    assert "sub_0a1b2c3d_0" in outputs[0]["detail"] and outputs[0]["count"] == 3

    assert (platform.status(NIGHTLY), platform.status(BACKUPS), platform.status(DIGEST)) == (
        "paused",
        "active",
        "active",
    )
    updated = platform.rows("SELECT updated FROM tasks WHERE id = ?", NIGHTLY)[0][0]
    assert updated >= before  # stamped as the platform's pause_task does
    assert sorted(platform.jobs()) == [BACKUPS, DIGEST]  # the scheduler drops the nightly job
    assert platform.due_jobs(in_two_days) == [BACKUPS, DIGEST]

    assert f"logged 3 finding(s) in {platform.db.resolve()}" in out
    assert f"removed scheduler job(s) {NIGHTLY} from {platform.store.resolve()}" in out
    assert duck(db, "SELECT task_id, job_id, restored_at FROM removed_jobs") == [
        (NIGHTLY, NIGHTLY, None)
    ]


def test_passes_are_idempotent_and_new_evidence_is_logged(
    platform: Wintermute, tmp_path: Path
) -> None:
    db = tmp_path / "ours.duckdb"
    reflect(*run_args(platform, db), "--apply")
    first = platform.reflection_log()
    again = reflect(*run_args(platform, db), "--apply")
    # ten minutes later the stale finding's detail names another window: same finding, no row
    later = reflect(*run_args(platform, db, NOW + 600), "--apply")
    assert platform.reflection_log() == first
    assert "logged 0 finding(s)" in again and "; 2 already there)" in again
    assert "; 2 already there)" in later
    assert duck(db, "SELECT count(*) FROM task_actions") == [(1,)]

    with closing(sqlite3.connect(platform.db)) as con, con:  # the digest ran again, still short
        insert(con, "sub_session_outcomes", outcome_row(TASKS[2], 9, "completed", NOW + 300))
    reflect(*run_args(platform, db, NOW + 600), "--apply")
    new = platform.reflection_log()[len(first) :]
    assert [(r[5], json.loads(r[6])["subject_id"]) for r in new] == [("stale_task", DIGEST)]


def test_dry_run_changes_no_byte_of_the_platform(platform: Wintermute, tmp_path: Path) -> None:
    before = platform.fingerprint()
    assert sorted(before) == ["conversation.db", "scheduler.db"]
    out = reflect(*run_args(platform, tmp_path / "ours.duckdb"))
    assert "DRY RUN: would pause task_0a1b2c3d" in out
    assert f"DRY RUN: would log 3 finding(s) in {platform.db.resolve()}" in out
    assert platform.fingerprint() == before


def test_resume_puts_the_job_back_as_it_was(platform: Wintermute, tmp_path: Path) -> None:
    db = tmp_path / "ours.duckdb"
    triggers = platform.jobs()
    reflect(*run_args(platform, db), "--apply")
    out = reflect("cycle", "resume", NIGHTLY, "--db", str(db))
    assert f"put scheduler job {NIGHTLY} back in {platform.store.resolve()}" in out
    assert platform.status(NIGHTLY) == "active"
    assert platform.jobs() == triggers
    assert duck(db, "SELECT count(*) FROM removed_jobs WHERE restored_at IS NULL") == [(0,)]


def test_a_failure_mid_pass_changes_nothing_and_the_next_pass_completes(
    platform: Wintermute, tmp_path: Path
) -> None:
    """The platform refuses the second log row (a real SQLite trigger): the pause and the first
    row, already made in the pass's transaction, are rolled back with it."""
    db = tmp_path / "ours.duckdb"
    with closing(sqlite3.connect(platform.db)) as con, con:
        con.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON interaction_log WHEN NEW.input = 'stale_task' "
            "BEGIN SELECT RAISE(ABORT, 'disk quota exceeded'); END"
        )
    log, jobs = platform.reflection_log(), platform.jobs()
    register_all_commands()
    failed = CliRunner().invoke(cli, [*run_args(platform, db), "--apply"])
    assert failed.exit_code == 1
    assert "disk quota exceeded" in str(failed.exception)
    assert "NOT APPLIED: task_0a1b2c3d not paused anywhere" in failed.output
    assert (platform.reflection_log(), platform.jobs()) == (log, jobs)
    assert platform.status(NIGHTLY) == "active"
    assert duck(db, "SELECT count(*) FROM task_actions") == [(0,)]

    with closing(sqlite3.connect(platform.db)) as con, con:
        con.execute("DROP TRIGGER refuse")
    reflect(*run_args(platform, db), "--apply")
    assert len(platform.reflection_log()) == 3
    assert platform.status(NIGHTLY) == "paused" and NIGHTLY not in platform.jobs()


#: Runs ``reflect`` in a process that dies (os._exit, no cleanup) at one point of the pass.
CRASHING_CLI = """
import os, sqlite3, sys
from agent_reflection.cycle import actions, writeback

where = sys.argv[1]
if where == "after-log-rows":  # inside the platform transaction, rows written, not committed
    real_write_log = actions.write_log
    def write_log(*args, **kwargs):
        result = real_write_log(*args, **kwargs)
        os._exit(70)
    actions.write_log = write_log
else:  # "after-job-store-commit": the job is gone, the platform file not yet committed
    class DiesAfterCommit(sqlite3.Connection):
        def commit(self):
            super().commit()
            os._exit(70)
    real_connect = sqlite3.connect
    def connect(target, *args, **kwargs):
        if "scheduler.db" in str(target) and "mode=rw" in str(target):
            kwargs["factory"] = DiesAfterCommit
        return real_connect(target, *args, **kwargs)
    writeback.sqlite3.connect = connect
from agent_reflection.cli import main
sys.argv = ["reflect", *sys.argv[2:]]
main()
"""


@pytest.mark.parametrize("where", ["after-log-rows", "after-job-store-commit"])
def test_a_crash_mid_pass_leaves_the_platform_consistent(
    platform: Wintermute, tmp_path: Path, where: str
) -> None:
    db = tmp_path / "ours.duckdb"
    log = platform.reflection_log()
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    crashed = subprocess.run(
        [sys.executable, "-c", CRASHING_CLI, where, *run_args(platform, db), "--apply"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert crashed.returncode == 70, crashed.stderr
    # the platform file's transaction never committed: no row, no pause
    assert platform.reflection_log() == log
    assert platform.status(NIGHTLY) == "active"
    gone = where == "after-job-store-commit"
    assert (NIGHTLY in platform.jobs()) is not gone  # a removed job alone stops the firing only

    reflect(*run_args(platform, db), "--apply")
    assert len(platform.reflection_log()) == 3
    assert platform.status(NIGHTLY) == "paused" and NIGHTLY not in platform.jobs()
    # the job removed by the crashed pass was kept before its store committed: resume restores it
    reflect("cycle", "resume", NIGHTLY, "--db", str(db))
    assert NIGHTLY in platform.jobs() and platform.status(NIGHTLY) == "active"


# --- tier 2 -----------------------------------------------------------------------------------

#: A long answer: Wintermute logs its first 2,000 characters in output.
ANSWER = "The nightly report fails on every run; the report skill is read each time.\n\n" + (
    "Check the mail server before sending. " * 60
)


@dataclass
class Served:
    requests: list[dict[str, Any]] = field(default_factory=list)
    failures: int = 0  # answer this many requests with HTTP 500 first


@pytest.fixture
def llm_server() -> Iterator[tuple[str, Served]]:
    served = Served()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            served.requests.append(json.loads(self.rfile.read(length)))
            body = json.dumps(
                {"model": "qwen-test", "choices": [{"message": {"content": ANSWER}}]}
            ).encode()
            status = 500 if served.failures else 200
            served.failures = max(0, served.failures - 1)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", served
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_tier_2_is_logged_once(
    platform: Wintermute, tmp_path: Path, llm_server: tuple[str, Served]
) -> None:
    url, served = llm_server
    config = tmp_path / "cycle.toml"
    config.write_text(
        f'[reflection.llm]\nurl = "{url}"\nmodel = "qwen-test"\nmax_retries = 0\n', "utf-8"
    )
    db = tmp_path / "ours.duckdb"
    args = [*run_args(platform, db), "--apply", "--config", str(config)]
    reflect(*args)
    analyses = [r for r in platform.reflection_log() if r[2] == "reflection_analysis"]
    assert len(analyses) == 1 and len(served.requests) == 1
    _id, _at, _action, session, llm, text_in, output, status, raw = analyses[0]
    ids = [json.loads(r[6])["finding_id"] for r in platform.reflection_log()[:3]]
    assert (session, llm, status) == ("system:reflection", "qwen-test", "ok")
    assert text_in == "3 finding(s): " + " ".join(ids)
    assert len(ANSWER) > 2000 and output == ANSWER[:2000] and raw == ANSWER

    out = reflect(*args)  # same findings: not asked again, not logged again
    assert len(served.requests) == 1
    assert "tier 2: skipped: every finding was analysed by an earlier pass" in out
    assert len(platform.reflection_log()) == 4


def test_findings_never_analysed_are_analysed_by_the_next_pass(
    platform: Wintermute, tmp_path: Path, llm_server: tuple[str, Served]
) -> None:
    """The endpoint failed on the first pass: its findings are logged, no analysis is; the next
    pass over the same data asks again and logs the analysis (and no finding twice)."""
    url, served = llm_server
    served.failures = 1
    config = tmp_path / "cycle.toml"
    config.write_text(
        f'[reflection.llm]\nurl = "{url}"\nmodel = "qwen-test"\nmax_retries = 0\n', "utf-8"
    )
    args = [*run_args(platform, tmp_path / "ours.duckdb"), "--apply", "--config", str(config)]
    assert "tier 2: failed" in reflect(*args)
    assert [r[2] for r in platform.reflection_log()] == ["reflection_rule"] * 3
    assert "tier 2: ok" in reflect(*args)
    assert len(served.requests) == 2
    assert [r[2] for r in platform.reflection_log()] == ["reflection_rule"] * 3 + [
        "reflection_analysis"
    ]
    # the second pass's findings (the nightly task is paused by now) are the stale and the skill
    assert platform.reflection_log()[3][5].startswith("2 finding(s): ")


def test_a_platform_without_a_job_store_says_so(tmp_path: Path) -> None:
    """No scheduler.db beside the file: the pass still logs and pauses, and says the job could
    not be removed."""
    platform = build_wintermute(tmp_path)
    platform.store.unlink()
    out = reflect(*run_args(platform, tmp_path / "ours.duckdb"), "--apply")
    assert len(platform.reflection_log()) == 3 and platform.status(NIGHTLY) == "paused"
    assert "no APScheduler job store (scheduler.db with an apscheduler_jobs table)" in out


def test_an_older_platform_shape_is_written_by_column_name(tmp_path: Path) -> None:
    """tasks without updated or apscheduler_job_id (the shape the other cycle tests use)."""
    src = make_platform_db(tmp_path / "platform.db")
    add_task(src, "nightly", "Write the nightly status report for the team")
    for i in range(3):
        add_outcome(src, f"n{i}", "failed", NOW - 3600 * (i + 1), task_id="nightly")
    reflect(
        "cycle",
        "run",
        str(src),
        "--now",
        str(NOW),
        "--apply",
        "--db",
        str(tmp_path / "ours.duckdb"),
    )
    with closing(sqlite3.connect(src)) as con:
        rows = con.execute(
            "SELECT action, session, llm, input FROM interaction_log ORDER BY id"
        ).fetchall()
        status = con.execute("SELECT status FROM tasks WHERE id = 'nightly'").fetchone()
    assert rows == [("reflection_rule", "system:reflection", "rule_engine", "consecutive_failures")]
    assert status == ("paused",)


def test_the_finding_id_ignores_the_clock() -> None:
    from agent_reflection.cycle.findings import ReflectionFinding
    from agent_reflection.cycle.writeback import finding_id

    at_noon = ReflectionFinding(
        "stale_task",
        "warning",
        "task",
        "t",
        "window ... 12:00",
        "",
        3,
        evidence="newest result at 2025-06-01T10:00:00+00:00",
    )
    later = ReflectionFinding(
        "stale_task",
        "warning",
        "task",
        "t",
        "window ... 12:10",
        "",
        3,
        evidence="newest result at 2025-06-01T10:00:00+00:00",
    )
    newer = ReflectionFinding(
        "stale_task",
        "warning",
        "task",
        "t",
        "window ... 12:10",
        "",
        3,
        evidence="newest result at 2025-06-01T12:05:00+00:00",
    )
    assert finding_id(at_noon) == finding_id(later) != finding_id(newer)


def test_each_platform_file_logs_its_own_tasks_findings(tmp_path: Path) -> None:
    files = {}
    for task in ("alpha", "beta"):
        src = make_platform_db(tmp_path / f"{task}.db")
        add_task(src, task, f"Run the {task} job and report")
        for i in range(3):
            add_outcome(src, f"s{i}", "failed", NOW - 3600 * (i + 1), task_id=task)
        files[task] = src
    reflect(
        "cycle",
        "run",
        *map(str, files.values()),
        "--now",
        str(NOW),
        "--apply",
        "--db",
        str(tmp_path / "ours.duckdb"),
    )
    for task, src in files.items():
        with closing(sqlite3.connect(src)) as con:
            rows = con.execute("SELECT output FROM interaction_log").fetchall()
        assert [json.loads(r[0])["subject_id"] for r in rows] == [task]


@pytest.mark.adversarial
def test_a_locked_job_store_is_not_taken_for_a_missing_one(tmp_path: Path) -> None:
    """Issue 34, item 8: the running platform holds scheduler.db: the pass must not say it
    paused (applied) while the job keeps firing; it fails, and the next pass tries again."""
    platform = build_wintermute(tmp_path)
    ours = tmp_path / "ours.duckdb"
    holder = sqlite3.connect(platform.store, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        with pytest.raises(ReflectionError) as raised:
            reflect(*run_args(platform, ours), "--apply", ok=False)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    message = str(raised.value)
    assert "no APScheduler job store" not in message
    assert f"{platform.store}: cannot write" in message and "locked" in message
    assert platform.status(NIGHTLY) == "active" and NIGHTLY in platform.jobs()
    assert duck(ours, "SELECT applied FROM cycle_runs") == [(False,)]
    # once the store is free the next pass pauses and removes the job
    reflect(*run_args(platform, ours), "--apply")
    assert platform.status(NIGHTLY) == "paused" and NIGHTLY not in platform.jobs()
