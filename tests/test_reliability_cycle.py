"""Reliability of the reflection cycle (issue 13, items 3, 4 and 6).

* Bad rows in a real platform SQLite file are rejected with file, table, rowid and field; the
  pass goes on and says how many it rejected.
* ``--apply`` with the platform file locked by another process records nothing as applied, exits
  1 with one line, and a retry after the lock is released applies it exactly once.
* State is keyed by source: two platform files that reuse session ids are both read; a task
  re-enabled on the platform is followed and guarded again.
* The LLM tier is bounded: a 200 MB answer is cut at ``max_response_bytes`` (streamed, bounded
  memory), a slow-drip server at ``max_call_seconds`` / ``max_pass_seconds`` (not the socket
  timeout). The servers are real ones on 127.0.0.1 that stop by themselves.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import duckdb
import pytest

from _runlog import History, T, add_outcome, add_task, make_platform_db
from agent_reflection.cycle.actions import pause_tasks
from agent_reflection.cycle.config import CycleConfig, InvalidCycleConfig, LLMConfig, load_config
from agent_reflection.cycle.engine import run_cycle
from agent_reflection.cycle.llm import LLMCallFailed, chat
from agent_reflection.load.runs import load_runs
from agent_reflection.store import db as dbmod

NOW = 1_750_000_000.0
REPO = Path(__file__).resolve().parents[1]


def reflect(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The real CLI in a subprocess (its exit code and stderr are what a user sees)."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.run(
        [sys.executable, "-m", "agent_reflection", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )


def platform(path: Path, task: str = "nightly", prefix: str = "n") -> Path:
    """A platform file whose ``task`` failed its last three runs (a pause-worthy streak)."""
    src = make_platform_db(path)
    add_task(src, task, f"Write the {task} status report for the whole team")
    for i in range(3):
        add_outcome(src, f"{prefix}{i}", "failed", NOW - 3600 * (i + 1), task_id=task)
    return src


def source_status(src: Path, task_id: str) -> str:
    with sqlite3.connect(src) as con:
        row = con.execute("SELECT status FROM tasks WHERE id = ?", [task_id]).fetchone()
    return str(row[0])


def query(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


# --- item 3: bad rows ------------------------------------------------------------------------


def add_bad_rows(src: Path) -> dict[str, str]:
    """Rows a platform file can hold that no run record can be made from; {location part: field}."""
    with sqlite3.connect(src) as con:
        bad = {
            "timestamp": ("b1", 1e30),  # the row: OverflowError in the old code
            "timestamp ": ("b2", None),
            "timestamp  ": ("b3", "next tuesday"),
            "result_length": ("b4", 1e30),  # beyond 64 bits
            "duration_seconds": ("b5", 1e300),  # start time before year 1
        }
        out = {}
        for field, (session, value) in bad.items():
            column = field.strip()
            values = {
                "session_id": session,
                "status": "failed",
                "task_id": "nightly",
                "timestamp": NOW - 60,
                column: value,
            }
            cur = con.execute(
                f"INSERT INTO sub_session_outcomes ({', '.join(values)}) "
                f"VALUES ({', '.join('?' for _ in values)})",
                list(values.values()),
            )
            out[f"sub_session_outcomes:rowid={cur.lastrowid}"] = column
        cur = con.execute(
            "INSERT INTO interaction_log (timestamp, action, session, input) "
            "VALUES (1e30, 'tool_call', 'n0', 'x')"
        )
        out[f"interaction_log:rowid={cur.lastrowid}"] = "timestamp"
        cur = con.execute(
            "INSERT INTO tasks (id, status, run_count) VALUES ('weird', 'active', ?)", ["many"]
        )
        out[f"tasks:rowid={cur.lastrowid}"] = "run_count"
        # not UTF-8: kept, with the bad bytes replaced (it must not stop the read)
        con.execute(
            "INSERT INTO sub_session_outcomes (session_id, status, task_id, timestamp, objective)"
            " VALUES ('latin', 'completed', 'other', ?, CAST(x'ff6f6f' AS TEXT))",
            [NOW - 60],
        )
    return out


def test_bad_rows_are_rejected_with_their_location_and_the_pass_goes_on(tmp_path: Path) -> None:
    src = platform(tmp_path / "platform.db")
    expected = add_bad_rows(src)
    db = tmp_path / "db.duckdb"
    result = reflect("cycle", "run", str(src), "--now", str(NOW), "--db", str(db))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert f"rejected {len(expected)} +" in result.stdout
    # the good rows still made their finding
    assert "consecutive_failures       task nightly [paused_task]" in result.stdout
    rejected = query(db, "SELECT location, reason FROM rejected ORDER BY location")
    assert len(rejected) == len(expected)
    for part, field in expected.items():
        location, reason = next((loc, why) for loc, why in rejected if part in loc)
        assert location.startswith(f"{src}:")
        table = part.split(":")[0]
        assert reason.startswith(f"{table}.{field}:"), reason
    objective = query(db, "SELECT objective FROM run_outcomes WHERE session_id = 'latin'")
    assert objective == [("\ufffdoo",)]


def test_a_huge_epoch_in_jsonl_is_a_reject_too(tmp_path: Path) -> None:
    path = History().task("A").write(tmp_path / "runs.jsonl")
    with path.open("a") as fh:
        for value in (1e30, float("inf"), -1e20, "1e30"):
            row = {
                "kind": "outcome",
                "session_id": f"x{value}",
                "status": "failed",
                "finished_at": value,
            }
            fh.write(json.dumps(row) + "\n")
    con = dbmod.connect(tmp_path / "db.duckdb")
    summary = load_runs(con, path).summary
    assert (summary.read, summary.rejected) == (5, 4)
    reasons = [r[0] for r in con.execute("SELECT reason FROM rejected").fetchall()]
    assert all("outside years 1-9999" in r for r in reasons), reasons


# --- item 3: --apply with the platform file locked ---------------------------------------------


HOLD_LOCK = """
import sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("BEGIN " + sys.argv[2])
print("locked", flush=True)
sys.stdin.readline()  # until the test lets go (or dies: EOF)
con.execute("ROLLBACK")
"""


class HeldLock:
    """Another process holding a ``BEGIN IMMEDIATE`` (write) or ``EXCLUSIVE`` lock on ``path``."""

    def __init__(self, path: Path, mode: str = "IMMEDIATE") -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLD_LOCK, str(path), mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "locked"

    def release(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.write("go\n")
            self.proc.stdin.flush()
            self.proc.wait(timeout=30)


@pytest.fixture
def held_locks() -> Iterator[list[HeldLock]]:
    locks: list[HeldLock] = []
    yield locks
    for lock in locks:
        lock.release()


def short_lock_config(tmp_path: Path) -> Path:
    config = tmp_path / "cycle.toml"
    config.write_text("[reflection]\nplatform_lock_timeout_seconds = 0.3\n")
    return config


@pytest.mark.slow
def test_apply_under_a_write_lock_records_nothing_and_a_retry_applies_once(
    tmp_path: Path, held_locks: list[HeldLock]
) -> None:
    src = platform(tmp_path / "platform.db")
    db = tmp_path / "db.duckdb"
    args = [
        "cycle",
        "run",
        str(src),
        "--now",
        str(NOW),
        "--apply",
        "--db",
        str(db),
        "--config",
        str(short_lock_config(tmp_path)),
    ]
    lock = HeldLock(src)
    held_locks.append(lock)
    failed = reflect(*args)
    assert failed.returncode == 1
    assert "Traceback" not in failed.stderr
    errors = failed.stderr.strip().splitlines()
    assert len(errors) == 1 and errors[0].startswith("Error: "), failed.stderr
    assert "locked by another process" in errors[0] and str(src.resolve()) in errors[0]
    assert "NOT APPLIED: nightly not paused" in failed.stdout
    assert query(db, "SELECT count(*) FROM task_actions") == [(0,)]
    assert query(db, "SELECT applied FROM findings") == [(False,)]
    assert query(db, "SELECT applied FROM cycle_runs") == [(False,)]
    assert query(db, "SELECT status FROM run_tasks WHERE task_id = 'nightly'") == [("active",)]
    lock.release()
    assert source_status(src, "nightly") == "active"

    retried = reflect(*args)
    assert retried.returncode == 0, retried.stderr
    assert f"paused nightly in {src.resolve()}" in retried.stdout
    assert source_status(src, "nightly") == "paused"
    again = reflect(*args)
    assert again.returncode == 0, again.stderr
    assert query(db, "SELECT task_id, action FROM task_actions") == [("nightly", "pause")]
    assert query(db, "SELECT cycle_run_id, applied FROM findings ORDER BY ALL") == [
        (1, False),
        (2, True),
    ]


@pytest.mark.slow
def test_an_exclusive_lock_is_one_line_not_a_traceback(
    tmp_path: Path, held_locks: list[HeldLock]
) -> None:
    """An exclusive lock blocks even reading: the load fails (after its 5 s wait) in one line."""
    src = platform(tmp_path / "platform.db")
    db = tmp_path / "db.duckdb"
    held_locks.append(HeldLock(src, "EXCLUSIVE"))
    result = reflect("cycle", "run", str(src), "--now", str(NOW), "--apply", "--db", str(db))
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0 and "Traceback" not in result.stderr
    assert "another process holds a lock" in result.stderr
    assert query(db, "SELECT count(*) FROM task_actions") == [(0,)]
    assert query(db, "SELECT status FROM loads") == [("failed",)]


# --- item 4: state keyed by source -------------------------------------------------------------


@pytest.mark.slow
def test_two_platform_files_that_reuse_session_ids_are_both_read(tmp_path: Path) -> None:
    first = platform(tmp_path / "a.db", task="alpha", prefix="s")
    second = platform(tmp_path / "b.db", task="beta", prefix="s")  # same session ids s0..s2
    db = tmp_path / "db.duckdb"
    result = reflect("cycle", "run", str(first), str(second), "--now", str(NOW), "--db", str(db))
    assert result.returncode == 0, result.stderr
    assert "task alpha [paused_task]" in result.stdout
    assert "task beta [paused_task]" in result.stdout
    rows = query(db, "SELECT origin, session_id, task_id FROM run_outcomes ORDER BY ALL")
    assert rows == [
        *[(str(first.resolve()), f"s{i}", "alpha") for i in range(3)],
        *[(str(second.resolve()), f"s{i}", "beta") for i in range(3)],
    ]
    # loading again adds nothing, from either file
    again = reflect("cycle", "run", str(first), str(second), "--now", str(NOW), "--db", str(db))
    assert again.stdout.count("loaded 0 +") == 2
    assert query(db, "SELECT count(*) FROM run_outcomes") == [(6,)]
    # each task is paused in the file it came from
    applied = reflect(
        "cycle", "run", str(first), str(second), "--now", str(NOW), "--apply", "--db", str(db)
    )
    assert applied.returncode == 0, applied.stderr
    assert f"paused alpha in {first.resolve()}" in applied.stdout
    assert f"paused beta in {second.resolve()}" in applied.stdout
    assert (source_status(first, "alpha"), source_status(second, "beta")) == ("paused", "paused")
    assert query(db, "SELECT task_id, sqlite_source FROM task_actions ORDER BY ALL") == [
        ("alpha", str(first.resolve())),
        ("beta", str(second.resolve())),
    ]


def test_skill_correlation_counts_sub_sessions_per_source(tmp_path: Path) -> None:
    """s1 of a.db and s1 of b.db are two failed sub-sessions that read the skill."""
    files = []
    for name in ("a", "b"):
        src = make_platform_db(tmp_path / f"{name}.db")
        add_outcome(src, "s1", "failed", NOW - 60, task_id=f"task-{name}")
        with sqlite3.connect(src) as con:
            con.execute(
                "INSERT INTO interaction_log (timestamp, action, session, input)"
                " VALUES (?, 'tool_call', 's1', ?)",
                [
                    NOW - 90,
                    json.dumps(
                        {"tool": "skill", "arguments": {"action": "read", "skill_name": "deploy"}}
                    ),
                ],
            )
        files.append(src)
    con = dbmod.connect(tmp_path / "db.duckdb")
    for src in files:
        load_runs(con, src)
    config = replace(CycleConfig(), skill_failure_min=2)
    from datetime import UTC, datetime

    result = run_cycle(con, config, now=datetime.fromtimestamp(NOW, UTC))
    flagged = [f for f in result.findings if f.rule == "skill_failure_correlation"]
    assert [(f.subject_id, f.count) for f in flagged] == [("deploy", 2)]


OLD_KEYS = """
CREATE TABLE run_outcomes (
    session_id VARCHAR PRIMARY KEY, task_id VARCHAR, objective VARCHAR, status VARCHAR NOT NULL,
    started_at TIMESTAMPTZ, finished_at TIMESTAMPTZ NOT NULL, result_length BIGINT,
    cost DOUBLE, source_format VARCHAR NOT NULL, origin VARCHAR NOT NULL, matched_by VARCHAR,
    raw JSON NOT NULL, load_id BIGINT NOT NULL);
CREATE TABLE run_steps (
    step_key VARCHAR PRIMARY KEY, session_id VARCHAR NOT NULL, seq BIGINT, "at" TIMESTAMPTZ,
    action VARCHAR NOT NULL, tool VARCHAR, input_summary VARCHAR, output_summary VARCHAR,
    skill VARCHAR, origin VARCHAR NOT NULL, load_id BIGINT NOT NULL);
"""


def test_a_database_keyed_the_old_way_is_rekeyed_and_keeps_its_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    first = platform(tmp_path / "a.db", task="alpha", prefix="s")
    second = platform(tmp_path / "b.db", task="beta", prefix="s")
    path = tmp_path / "old.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute(OLD_KEYS)
        # as the old code stored `reflect load runs a.db`: the path as given
        con.execute(
            """INSERT INTO run_outcomes VALUES ('s0', 'alpha', 'obj', 'failed', NULL,
               to_timestamp(?), 100, NULL, 'sqlite', 'a.db', 'task_id', '{}', 1)""",
            [NOW - 3600],
        )
    con = dbmod.connect(path)
    again = load_runs(con, Path("a.db")).summary
    assert (again.loaded, again.already_present) == (3, 1)  # the task and s1, s2; s0 was there
    load_runs(con, second)
    assert con.execute("SELECT count(*) FROM run_outcomes").fetchone() == (6,)
    assert con.execute("SELECT DISTINCT origin FROM run_outcomes ORDER BY 1").fetchall() == [
        (str(first.resolve()),),
        (str(second.resolve()),),
    ]
    keys = con.execute(
        """SELECT table_name, constraint_column_names FROM duckdb_constraints()
           WHERE constraint_type = 'PRIMARY KEY' AND table_name IN ('run_outcomes', 'run_steps')
           ORDER BY table_name"""
    ).fetchall()
    assert keys == [
        ("run_outcomes", ["origin", "session_id"]),
        ("run_steps", ["origin", "step_key"]),
    ]


@pytest.mark.slow
def test_a_task_re_enabled_on_the_platform_is_guarded_again(tmp_path: Path) -> None:
    src = platform(tmp_path / "platform.db")
    db = tmp_path / "db.duckdb"
    run = ["cycle", "run", str(src), "--now", str(NOW), "--db", str(db)]
    assert reflect(*run, "--apply").returncode == 0
    assert source_status(src, "nightly") == "paused"
    with sqlite3.connect(src) as con:  # the team turns it back on, on the platform
        con.execute("UPDATE tasks SET status = 'active' WHERE id = 'nightly'")
    dry = reflect(*run)
    assert dry.returncode == 0, dry.stderr
    assert query(db, "SELECT status, source_status FROM run_tasks WHERE task_id = 'nightly'") == [
        ("active", "active")
    ]
    assert "consecutive_failures       task nightly [paused_task]" in dry.stdout
    assert "DRY RUN: would pause nightly" in dry.stdout
    applied = reflect(*run, "--apply")
    assert applied.returncode == 0, applied.stderr
    assert source_status(src, "nightly") == "paused"
    assert query(db, 'SELECT action FROM task_actions ORDER BY "at"') == [
        ("pause",),
        ("reenabled",),
        ("pause",),
    ]


def test_our_own_pause_of_a_platform_task_survives_reloads(tmp_path: Path) -> None:
    """The platform still saying paused is not a re-enable: the task stays paused, no action."""
    src = platform(tmp_path / "platform.db")
    db = tmp_path / "db.duckdb"
    run = ["cycle", "run", str(src), "--now", str(NOW), "--db", str(db)]
    assert reflect(*run, "--apply").returncode == 0
    again = reflect(*run, "--apply")
    assert "0 finding(s)" in again.stdout
    assert query(db, "SELECT action FROM task_actions") == [("pause",)]


# --- item 6: a bounded LLM tier ----------------------------------------------------------------


@dataclass
class Served:
    bytes_sent: int = 0
    requests: int = 0


class LoopbackServer:
    """A real HTTP/1.0 server on 127.0.0.1 that answers at most ``max_requests`` requests with
    ``respond(sock, served, stop)`` and stops by itself (no more accepts after 30 s)."""

    def __init__(
        self,
        respond: Callable[[socket.socket, Served, threading.Event], None],
        max_requests: int = 4,
    ) -> None:
        self.served = Served()
        self.stop = threading.Event()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"
        self._respond = respond
        self._max = max_requests
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        ends = time.monotonic() + 30
        with self._sock:
            while self.served.requests < self._max and not self.stop.is_set():
                if time.monotonic() > ends:
                    return
                try:
                    conn, _ = self._sock.accept()
                except TimeoutError:
                    continue
                except OSError:
                    return
                self.served.requests += 1
                with conn:
                    conn.settimeout(30)
                    try:
                        _read_request(conn)
                        self._respond(conn, self.served, self.stop)
                    except OSError:
                        pass  # the client cut the connection: what these tests want

    def close(self) -> None:
        self.stop.set()
        self._thread.join(timeout=60)


def _read_request(conn: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        ),
        0,
    )
    while len(body) < length:
        body += conn.recv(65536)


BODY_200_MB = 200 * 1024 * 1024
CHUNK = b"x" * 65536


def huge_answer(announce: bool) -> Callable[[socket.socket, Served, threading.Event], None]:
    def respond(conn: socket.socket, served: Served, stop: threading.Event) -> None:
        length = f"Content-Length: {BODY_200_MB}\r\n" if announce else ""
        conn.sendall(f"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n{length}\r\n".encode())
        while served.bytes_sent < BODY_200_MB and not stop.is_set():
            conn.sendall(CHUNK)
            served.bytes_sent += len(CHUNK)

    return respond


def drip(headers_too: bool) -> Callable[[socket.socket, Served, threading.Event], None]:
    """One byte every 50 ms (never idle long enough for a socket timeout), for up to 60 s."""

    def respond(conn: socket.socket, served: Served, stop: threading.Event) -> None:
        head = b"HTTP/1.0 200 OK\r\nContent-Length: 100000\r\n\r\n"
        if not headers_too:
            conn.sendall(head)
        stream = (head if headers_too else b"") + b'{"choices": [' + b" " * 100_000
        end = time.monotonic() + 60
        for byte in stream:
            if stop.is_set() or time.monotonic() > end:
                return
            conn.sendall(bytes([byte]))
            served.bytes_sent += 1
            time.sleep(0.05)

    return respond


@pytest.fixture
def serve() -> Iterator[Callable[..., LoopbackServer]]:
    servers: list[LoopbackServer] = []

    def start(
        respond: Callable[[socket.socket, Served, threading.Event], None], max_requests: int = 4
    ) -> LoopbackServer:
        servers.append(LoopbackServer(respond, max_requests))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def bounded(url: str, **kw: Any) -> LLMConfig:
    base = LLMConfig(
        url=url,
        model="m",
        timeout_seconds=5.0,
        max_retries=0,
        backoff_seconds=0.0,
        max_response_bytes=1_000_000,
        max_call_seconds=60.0,
        max_pass_seconds=120.0,
    )
    return replace(base, **kw)


@pytest.mark.parametrize("announce", [False, True], ids=["streamed", "content-length"])
def test_a_200_mb_answer_is_cut_at_the_byte_cap_with_bounded_memory(
    serve: Callable[..., LoopbackServer], announce: bool
) -> None:
    server = serve(huge_answer(announce))
    tracemalloc.start()
    try:
        with pytest.raises(LLMCallFailed) as caught:
            chat(bounded(server.url), "hi")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    message = str(caught.value)
    assert "cut at max_response_bytes = 1,000,000 bytes" in message and "not retried" in message
    assert peak < 16 * 1024 * 1024, f"peak {peak:,} bytes while reading"
    server.close()
    # the server could push at most the cap plus what the socket buffers held
    assert server.served.bytes_sent < 64 * 1024 * 1024
    assert server.served.requests == 1


@pytest.mark.parametrize("headers_too", [False, True], ids=["body-drip", "header-drip"])
def test_a_slow_drip_is_cut_at_the_call_time_limit_not_the_socket_timeout(
    serve: Callable[..., LoopbackServer], headers_too: bool
) -> None:
    server = serve(drip(headers_too))
    started = time.monotonic()
    with pytest.raises(
        LLMCallFailed, match=r"cut at the total time limit \(max_call_seconds = 1 s"
    ):
        chat(bounded(server.url, timeout_seconds=3.0, max_call_seconds=1.0), "hi")
    # the drip lasts 60 s and never goes 3 s quiet: only the total limit can have stopped it
    assert time.monotonic() - started < 30
    assert server.served.bytes_sent < 1000


def test_retries_stop_at_the_pass_budget(serve: Callable[..., LoopbackServer]) -> None:
    server = serve(drip(False), max_requests=10)
    config = bounded(server.url, max_call_seconds=1.0, max_pass_seconds=1.5, max_retries=8)
    started = time.monotonic()
    with pytest.raises(LLMCallFailed, match=r"max_pass_seconds = 1\.5 s"):
        chat(config, "hi")
    assert time.monotonic() - started < 30
    assert server.served.requests == 2  # 1 s, then the 0.5 s the pass had left


def test_the_pass_says_when_tier_2_was_cut(
    serve: Callable[..., LoopbackServer], tmp_path: Path
) -> None:
    server = serve(huge_answer(False))
    history = History().task("nightly")
    history.outcomes(["failed"] * 3, task_id="nightly")
    con = history.load(tmp_path)
    config = replace(CycleConfig(), llm=bounded(server.url, max_response_bytes=100_000))
    result = run_cycle(con, config, now=T)
    assert result.analysis.status == "failed"
    assert "cut at max_response_bytes = 100,000 bytes" in result.analysis.detail
    assert con.execute("SELECT status, detail FROM analyses").fetchone() == (
        "failed",
        result.analysis.detail,
    )


def test_the_bounds_are_read_from_the_config_file(tmp_path: Path) -> None:
    toml = tmp_path / "cycle.toml"
    toml.write_text(
        "[reflection]\nplatform_lock_timeout_seconds = 2\n[reflection.llm]\n"
        "max_response_bytes = 5000\nmax_call_seconds = 7\nmax_pass_seconds = 9.5\n"
    )
    config = load_config(toml, env={})
    assert config.platform_lock_timeout_seconds == 2.0
    assert (
        config.llm.max_response_bytes,
        config.llm.max_call_seconds,
        config.llm.max_pass_seconds,
    ) == (5000, 7.0, 9.5)
    toml.write_text("[reflection.llm]\nmax_response_bytes = 0\n")
    with pytest.raises(InvalidCycleConfig, match="max_response_bytes must be greater than 0"):
        load_config(toml, env={})


def test_skill_reads_in_a_steps_file_of_their_own_still_count(tmp_path: Path) -> None:
    """Outcomes in runs.jsonl, steps in steps.jsonl (as the SWE-bench export ships them)."""
    runs, steps = History().task("A"), History()
    for sid in runs.outcomes(["failed"] * 3):
        steps.step(sid, {"tool": "skill", "arguments": {"action": "read", "skill_name": "deploy"}})
    con = dbmod.connect(tmp_path / "db.duckdb")
    load_runs(con, runs.write(tmp_path / "runs.jsonl"))
    load_runs(con, steps.write(tmp_path / "steps.jsonl"))
    result = run_cycle(con, CycleConfig(), now=T)
    flagged = [(f.subject_id, f.count) for f in result.findings if f.rule.startswith("skill")]
    assert flagged == [("deploy", 3)]


def test_odd_file_names_and_a_vanished_platform_file(tmp_path: Path) -> None:
    """'?' and '#' are part of a file name, not a URI query; a file gone before the pause is an
    error for its tasks, and no empty database is created in its place."""
    odd = platform(tmp_path / "plat #1?.db")
    gone = platform(tmp_path / "gone.db", task="weekly", prefix="w")
    con = dbmod.connect(tmp_path / "db.duckdb")
    assert load_runs(con, odd).summary.loaded == 4
    assert load_runs(con, gone).summary.loaded == 4
    gone.unlink()
    result = pause_tasks(con, ["nightly", "weekly"], apply=True, sqlite_sources=[odd, gone])
    assert source_status(odd, "nightly") == "paused"
    assert result.paused == ("nightly",) and result.failed == ("weekly",)
    assert f"{gone.resolve()}: cannot write the platform database" in result.error
    assert not gone.exists()
    assert con.execute("SELECT task_id FROM task_actions").fetchall() == [("nightly",)]
