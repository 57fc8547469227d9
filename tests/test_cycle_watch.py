"""Triggers (peer table C3) and ``watch`` following a live SQLite file and a growing JSONL file."""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import duckdb
import pytest

from _runlog import History, add_outcome, add_task, make_platform_db
from agent_reflection.cycle.config import CycleConfig
from agent_reflection.cycle.engine import CycleResult
from agent_reflection.cycle.triggers import TriggerCounter
from agent_reflection.cycle.watch import Watcher
from agent_reflection.load.runs.store import NewOutcome
from agent_reflection.store import db
from agent_reflection.store.db import LoadSummary

#: Bounded waits: generous so a loaded machine does not flake.
WAIT = 10.0


def outcomes(status: str, n: int) -> list[NewOutcome]:
    return [NewOutcome(f"{status}{i}", "A", status) for i in range(n)]


@pytest.mark.peer
@pytest.mark.parametrize(
    ("events", "checks"),
    [
        pytest.param(outcomes("completed", 9), [], id="C3.1"),
        pytest.param(outcomes("completed", 10), ["batch"], id="C3.2"),
        pytest.param(outcomes("completed", 25), ["batch", "batch"], id="C3.3"),
        pytest.param(outcomes("failed", 1), ["failure"], id="C3.4"),
        pytest.param(outcomes("timeout", 1), ["failure"], id="C3.4-timeout"),
    ],
)
def test_c3_trigger_counts(events: list[NewOutcome], checks: list[str]) -> None:
    counter = TriggerCounter(batch_threshold=10)
    found = [check for check in map(counter.observe, events) if check is not None]
    assert [c.kind for c in found] == checks
    assert counter.completed == sum(1 for e in events if e.status == "completed") % 10


class Running:
    """A :class:`Watcher` running its own event loop in a thread, stoppable from the test."""

    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher
        self.reacted = threading.Event()
        self.reaction_at: list[float] = []
        watcher.on_result = self._record
        self.loop = asyncio.new_event_loop()
        self.stop = asyncio.Event()
        self.thread = threading.Thread(target=self._main, daemon=True)
        self.error: list[BaseException] = []

    def _record(self, result: CycleResult) -> None:
        self.reaction_at.append(time.monotonic())
        self.reacted.set()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self.watcher.run(self.stop))
        except BaseException as exc:  # surfaced in the test
            self.error.append(exc)

    def __enter__(self) -> Running:
        self.thread.start()
        deadline = time.monotonic() + WAIT
        while not self.watcher.started.is_set() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert self.watcher.started.is_set(), self.error
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(WAIT)
        assert not self.thread.is_alive()
        self.loop.close()  # not left to the garbage collector, which warned in a later test
        assert not self.error, self.error


@pytest.fixture
def platform(tmp_path: Path) -> Iterator[Path]:
    src = make_platform_db(tmp_path / "live.db")
    add_task(src, "nightly", "Write the nightly status report for the team")
    now = time.time()
    add_outcome(src, "old1", "failed", now - 120, task_id="nightly")
    add_outcome(src, "old2", "failed", now - 60, task_id="nightly")
    yield src


def test_watch_reacts_to_a_failure_appended_to_a_live_sqlite_file(
    platform: Path, tmp_path: Path
) -> None:
    con = db.connect(tmp_path / "db.duckdb")
    config = replace(CycleConfig(), fallback_poll_seconds=3600.0)
    with Running(Watcher(con, platform, config, apply=True)) as running:
        written = threading.Event()
        wrote_at: list[float] = []

        def writer() -> None:  # another thread with its own sqlite connection
            add_outcome(platform, "new1", "failed", time.time(), task_id="nightly")
            wrote_at.append(time.monotonic())
            written.set()

        threading.Thread(target=writer).start()
        assert written.wait(WAIT)
        assert running.reacted.wait(WAIT), "the watcher did not react to the new failure"
        latency = running.reaction_at[0] - wrote_at[0]
    result = running.watcher.results[0]
    assert result.trigger == "failure"
    assert [(f.rule, f.subject_id) for f in result.findings] == [
        ("consecutive_failures", "nightly")
    ]
    with sqlite3.connect(platform) as sq:
        assert sq.execute("SELECT status FROM tasks WHERE id = 'nightly'").fetchone() == ("paused",)
    # The fallback poll is an hour away, so reacting inside WAIT is the change trigger working.
    # The latency itself (about 0.1 to 0.3 s on an idle machine) is printed, not asserted: a
    # 1 s bound failed on a loaded 2-core runner while the watcher was right.
    print(f"watch reaction latency: {latency:.3f} s")


def test_watch_jsonl_batch_after_threshold_completions(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text("")
    con = db.connect(tmp_path / "db.duckdb")
    config = replace(CycleConfig(), batch_threshold=3, fallback_poll_seconds=3600.0)

    def append(session: str, status: str) -> None:
        line = {"session_id": session, "task_id": "A", "status": status, "finished_at": time.time()}
        with path.open("a") as fh:
            fh.write(json.dumps(line) + "\n")

    with Running(Watcher(con, path, config)) as running:
        append("c1", "completed")
        append("c2", "completed")
        deadline = time.monotonic() + WAIT
        while running.watcher.counter.completed < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert running.watcher.counter.completed == 2  # it saw both: no check yet
        assert not running.reacted.is_set()
        append("c3", "completed")
        assert running.reacted.wait(WAIT)
    assert [r.trigger for r in running.watcher.results] == ["batch"]


class WriteWhenStarted(asyncio.Event):
    """An ``started`` event that appends a failure to the file the moment it is set, before
    the loop runs anything else: the tightest a writer can follow ``started``."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def set(self) -> None:
        line = {"session_id": "f1", "task_id": "A", "status": "failed", "finished_at": time.time()}
        with self.path.open("a") as fh:
            fh.write(json.dumps(line) + "\n")
        super().set()


def test_a_write_right_at_started_is_seen(tmp_path: Path) -> None:
    """``started`` means the file's baseline is taken: a write at that instant is a change.
    (When the file watcher took its baseline in its own first step, after ``started``, this
    write was part of the baseline and went unseen until the hour-away fallback poll.)"""
    path = tmp_path / "runs.jsonl"
    path.write_text("")
    con = db.connect(tmp_path / "db.duckdb")
    config = replace(CycleConfig(), fallback_poll_seconds=3600.0)
    watcher = Watcher(con, path, config)
    watcher.started = WriteWhenStarted(path)
    with Running(watcher) as running:
        assert running.reacted.wait(WAIT), "the write made as `started` was set went unseen"
    assert running.watcher.results[0].trigger == "failure"


@pytest.mark.peer
def test_c3_disabled_returns_at_once(tmp_path: Path) -> None:
    con = db.connect(tmp_path / "db.duckdb")
    missing = tmp_path / "never-read.jsonl"
    missing.write_text("")
    watcher = Watcher(con, missing, replace(CycleConfig(), enabled=False))
    asyncio.run(asyncio.wait_for(watcher.run(asyncio.Event()), timeout=WAIT))
    assert not watcher.started.is_set()
    assert con.execute("SELECT count(*) FROM loads").fetchone() == (0,)


def test_fallback_poll_runs_a_check_without_changes(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text("")
    con = db.connect(tmp_path / "db.duckdb")
    config = replace(CycleConfig(), fallback_poll_seconds=0.2)
    with Running(Watcher(con, path, config)) as running:
        assert running.reacted.wait(WAIT)
    assert running.watcher.results[0].trigger == "poll"


def test_watch_rejects_a_bad_row_and_keeps_watching(platform: Path, tmp_path: Path) -> None:
    """Issue 13 item 3: a row the old code died on (timestamp 1e30) is a reported reject."""
    con = db.connect(tmp_path / "db.duckdb")
    config = replace(CycleConfig(), fallback_poll_seconds=3600.0)
    loads: list[object] = []
    watcher = Watcher(con, platform, config, apply=True, on_load=loads.append)
    with Running(watcher) as running, sqlite3.connect(platform) as sq:
        sq.execute(
            "INSERT INTO sub_session_outcomes (session_id, status, task_id, timestamp)"
            " VALUES ('bad', 'failed', 'nightly', 1e30), ('new1', 'failed', 'nightly', ?)",
            [time.time()],
        )
        sq.commit()
        assert running.reacted.wait(WAIT), "the watcher did not react to the new failure"
    assert [(f.rule, f.subject_id) for f in running.watcher.results[0].findings] == [
        ("consecutive_failures", "nightly")
    ]
    rejected = [s for s in loads if isinstance(s, LoadSummary)]
    assert rejected and all(s.rejected == 1 for s in rejected)  # every reload says so
    (location, reason), *more = con.execute(
        "SELECT DISTINCT location, reason FROM rejected"
    ).fetchall()
    assert more == []
    assert location.startswith(f"{platform}:sub_session_outcomes:rowid=")
    assert reason.startswith("sub_session_outcomes.timestamp: 1e+30 epoch seconds")


ADD_FAILURE_THEN_LOCK = """
import sqlite3, sys, time
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("BEGIN IMMEDIATE")
con.execute("INSERT INTO sub_session_outcomes (session_id, status, task_id, timestamp)"
            " VALUES ('new1', 'failed', 'nightly', ?)", [time.time()])
con.execute("COMMIT")
con.execute("BEGIN IMMEDIATE")  # at once: the watcher will find the file write-locked
print("locked", flush=True)
sys.stdin.readline()
con.execute("ROLLBACK")
"""


def test_watch_retries_a_pause_the_locked_platform_refused(platform: Path, tmp_path: Path) -> None:
    """Issue 13 item 3 under watch: nothing applied while locked, applied once after."""
    con = db.connect(tmp_path / "db.duckdb")
    config = replace(CycleConfig(), fallback_poll_seconds=3600.0, platform_lock_timeout_seconds=0.2)
    watcher = Watcher(con, platform, config, apply=True, retry_seconds=0.3)
    with Running(watcher) as running:
        holder = subprocess.Popen(
            [sys.executable, "-c", ADD_FAILURE_THEN_LOCK, str(platform)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
            assert running.reacted.wait(WAIT), "the watcher did not react to the new failure"
            first = running.watcher.results[0]
            assert first.pause.failed == ("nightly",) and "locked" in first.pause.error
        finally:
            assert holder.stdin is not None
            holder.stdin.write("go\n")
            holder.stdin.flush()
            holder.wait(WAIT)
        deadline = time.monotonic() + WAIT
        while len(running.watcher.results) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    retried = running.watcher.results[1]
    assert retried.trigger == "failure" and retried.pause.paused == ("nightly",)
    assert not retried.pause.failed
    with sqlite3.connect(platform) as sq:
        assert sq.execute("SELECT status FROM tasks WHERE id = 'nightly'").fetchone() == ("paused",)
    assert con.execute("SELECT action FROM task_actions").fetchall() == [("pause",)]


@pytest.mark.slow
@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_watch_stops_on_a_signal_while_the_file_keeps_changing(
    tmp_path: Path, stop_signal: signal.Signals
) -> None:
    """Ctrl-C (or a service manager's SIGTERM) stops ``reflect cycle watch`` cleanly, with
    "stopped" and exit status 0, at whatever moment of a busy loop it arrives. Before the stop
    was an event, SIGTERM killed the process unclosed (this test failed), and Ctrl-C could be
    lost (CPython gh-86296, see docs/cycle.md): a race this test does not hit reliably, which
    ``tests/test_serve_cycle.py`` hit in three of four full runs of the suite."""
    path = tmp_path / "runs.jsonl"
    path.write_text("")
    writing = threading.Event()
    writing.set()

    def writer() -> None:  # a change every few milliseconds: the loop wakes all the time
        i = 0
        while writing.is_set():
            i += 1
            line = {"session_id": f"c{i}", "task_id": "A", "status": "completed"}
            with path.open("a") as fh:
                fh.write(json.dumps({**line, "finished_at": time.time()}) + "\n")
            time.sleep(0.003)

    threading.Thread(target=writer, daemon=True).start()
    try:
        for attempt in range(4):
            db_file = str(tmp_path / f"db{attempt}.duckdb")
            watch = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "agent_reflection",
                    "cycle",
                    "watch",
                    str(path),
                    "--db",
                    db_file,
                    "--poll",
                    "3600",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            assert watch.stderr is not None
            first = watch.stderr.readline()
            assert first.startswith("watching "), first
            time.sleep(0.5 + 0.1 * attempt)  # stop at a different moment of the churn each time
            watch.send_signal(stop_signal)
            try:
                _, err = watch.communicate(timeout=WAIT * 2)
            except subprocess.TimeoutExpired:
                watch.kill()
                watch.communicate()
                pytest.fail(f"attempt {attempt}: the watcher ignored {stop_signal.name}")
            assert watch.returncode == 0, err
            assert err.rstrip().endswith("stopped"), err
    finally:
        writing.clear()


@pytest.mark.adversarial
@pytest.mark.slow
def test_loads_into_the_same_database_proceed_while_cycle_watch_runs(tmp_path: Path) -> None:
    """Issue 34, item 9: the watcher opens the database for each pass and closes it after, so a
    `reflect load` into the same file does not fail after --wait while it watches."""

    watched = History().task("A")
    watched.outcome("completed", 1.0, session_id="w1")
    source = watched.write(tmp_path / "watched.jsonl")
    other = History().task("B")
    other.outcome("completed", 1.0, task_id="B", session_id="o1")
    other_file = other.write(tmp_path / "other.jsonl")
    db_file = str(tmp_path / "shared.duckdb")
    command = [sys.executable, "-m", "agent_reflection"]
    watch = subprocess.Popen(
        [*command, "cycle", "watch", str(source), "--db", db_file, "--poll", "3600"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert watch.stderr is not None
        assert watch.stderr.readline().startswith("watching ")
        time.sleep(1.0)  # the baseline pass is done
        load = subprocess.run(
            [*command, "load", "runs", str(other_file), "--db", db_file, "--wait", "10"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert load.returncode == 0, load.stderr
        with source.open("a") as fh:  # the watcher still sees changes after the load
            line = {
                "session_id": "w2",
                "task_id": "A",
                "status": "failed",
                "finished_at": time.time(),
            }
            fh.write(json.dumps({"kind": "outcome", **line}) + "\n")
        time.sleep(2.0)
    finally:
        watch.send_signal(signal.SIGINT)
        _, err = watch.communicate(timeout=WAIT * 2)
    assert watch.returncode == 0, err
    con = duckdb.connect(db_file, read_only=True)
    try:
        sessions = {s for (s,) in con.execute("SELECT session_id FROM run_outcomes").fetchall()}
    finally:
        con.close()
    assert {"w1", "o1", "w2"} <= sessions
