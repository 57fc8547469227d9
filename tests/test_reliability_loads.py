"""Reliability of loads: unclean exits, SIGKILL at any point, two writers, re-loads, --silent.

Every load here is a real subprocess on a real DuckDB file; kills are real SIGKILLs. After a
crash the next load of the same inputs must complete, reconcile (read = loaded + rejected +
already present, and each load's rows_loaded equals the rows stored under its load_id), store
nothing twice, and leave no load `running` and no process behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

from agent_reflection.store.db import NotADatabase, check_database_file
from conftest import run_git
from sidecar_samples import sidecar, write

#: Upper bound on any one subprocess (generous: the machine may be loaded).
TIMEOUT = 300


def reflect(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The real ``reflect`` command in a child process."""
    return subprocess.run(
        [sys.executable, "-m", "agent_reflection", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env={**os.environ, **(env or {})},
    )


def python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def query(db: Path, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def sidecar_folder(root: Path, valid: int, invalid: int) -> Path:
    """``valid`` distinct valid sidecars and ``invalid`` ones that fail validation."""
    for i in range(valid):
        write(root / f"d{i % 7}" / f"s{i:05d}.reflection.json", sidecar(i))
    for i in range(invalid):
        write(root / "bad" / f"b{i:03d}.reflection.json", sidecar(10_000 + i, confidence=2))
    return root


def assert_loads_reconcile(db: Path, table: str) -> None:
    """No load left `running`; each load's counts add up and match the rows it stored."""
    loads = query(
        db,
        "SELECT load_id, status, rows_read, rows_loaded, rows_rejected, rows_already_present "
        "FROM loads ORDER BY load_id",
    )
    stored = dict(query(db, f"SELECT load_id, count(*) FROM {table} GROUP BY load_id"))
    for load_id, status, read, loaded, rejected, present in loads:
        assert status in ("ok", "interrupted"), (load_id, status)
        assert read == loaded + rejected + present, (load_id, read, loaded, rejected, present)
        assert stored.get(load_id, 0) == loaded, (load_id, stored.get(load_id, 0), loaded)


def session_processes(session: int) -> list[str]:
    done = subprocess.run(["pgrep", "-s", str(session)], capture_output=True, text=True)
    return done.stdout.split()


def wait_until_gone(session: int, seconds: float) -> list[str]:
    deadline = time.monotonic() + seconds
    while (left := session_processes(session)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


# --- an unclean exit must not block the next load (issue item 1) -------------------------------

EXIT_AFTER_LOAD = """
import os, sys
from agent_reflection.store.db import connect
from agent_reflection.load.sidecars.loader import load_sidecars
con = connect(sys.argv[1])
print(load_sidecars(con, [sys.argv[2]], workers=1).load_id)
os._exit(0)  # no close, no checkpoint: like a process killed right after a finished load
"""


def test_unclean_exits_after_finished_loads_do_not_block_the_next_load(tmp_path: Path) -> None:
    # before: the third load died with `Duplicate key "load_id: 1"`, and so did every later one
    db = tmp_path / "r.duckdb"
    folder = sidecar_folder(tmp_path / "s", valid=5, invalid=1)
    ids = []
    for _ in range(2):
        done = python(EXIT_AFTER_LOAD, str(db), str(folder))
        assert done.returncode == 0, done.stderr
        ids.append(int(done.stdout))
    last = reflect("load", "sidecars", str(folder), "--db", str(db), "--json")
    assert last.returncode == 0, last.stderr
    summary = json.loads(last.stdout)
    ids.append(summary["load_id"])
    assert len(set(ids)) == 3
    assert (summary["read"], summary["loaded"], summary["rejected"]) == (6, 0, 1)
    assert summary["already_present"] == 5
    assert query(db, "SELECT count(*) FROM reflections") == [(5,)]
    assert query(db, "SELECT status FROM loads ORDER BY load_id") == [("ok",)] * 3


# --- SIGKILL at several points -----------------------------------------------------------------

#: Runs load_sidecars on a connection whose commit number ``argv[3]`` (``commit()`` or a COMMIT
#: statement) SIGKILLs the process
#: before it reaches DuckDB ("before"), or right after it ("after"); "finish" kills it when the
#: load's final bookkeeping UPDATE starts, after the last batch committed.
KILL_AT_COMMIT = """
import os, signal, sys
from agent_reflection.store.db import connect
from agent_reflection.load.sidecars import loader
from agent_reflection.load.sidecars.loader import load_sidecars

# a tenth of the loader's batch sizes: the same commits (two batches and a final one) on a
# tenth of the files
loader.CHUNK_FILES, loader.BATCH_ROWS, loader.COMMIT_ROWS = 100, 1_600, 1_600
loader._WINDOW = loader.BATCH_ROWS // loader.CHUNK_FILES

class KillingConnection:
    def __init__(self, con, nth, when):
        self.con, self.nth, self.when, self.commits = con, nth, when, 0
    def _commit(self, commit):
        self.commits += 1
        if self.commits == self.nth and self.when == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        result = commit()
        if self.commits == self.nth and self.when == "after":
            os.kill(os.getpid(), signal.SIGKILL)
        return result
    def commit(self):
        return self._commit(self.con.commit)
    def execute(self, sql, *args):
        if self.when == "finish" and "SET finished_at" in sql:
            os.kill(os.getpid(), signal.SIGKILL)
        if sql.strip() == "COMMIT":
            return self._commit(lambda: self.con.execute(sql, *args))
        return self.con.execute(sql, *args)
    def __getattr__(self, name):
        return getattr(self.con, name)

con = KillingConnection(connect(sys.argv[1]), int(sys.argv[3]), sys.argv[4])
load_sidecars(con, [sys.argv[2]], workers=2)
print("finished without being killed")
"""


@pytest.fixture(scope="module")
def big_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3,400 valid files (at the killed loader's batch size of 1,600, batches commit at 1,600
    and 3,200 and the final commit takes the rest) and 40 invalid ones; shared by the
    kill-at-a-commit cases (nothing writes into it)."""
    return sidecar_folder(tmp_path_factory.mktemp("big") / "s", valid=3_400, invalid=40)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("nth", "when"),
    [(1, "before"), (1, "after"), (2, "before"), (3, "before"), (3, "after"), (0, "finish")],
    ids=[
        "first-commit",
        "after-first-commit",
        "second-commit",
        "final-commit",
        "after-final-commit",
        "final-bookkeeping",
    ],
)
def test_kill_at_a_commit_then_the_next_load_completes_it(
    tmp_path: Path, big_folder: Path, nth: int, when: str
) -> None:
    db = tmp_path / "r.duckdb"
    folder = big_folder
    killed = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(KILL_AT_COMMIT),
            str(db),
            str(folder),
            str(nth),
            when,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    out, err = killed.communicate(timeout=TIMEOUT)
    assert killed.returncode == -signal.SIGKILL, out + err
    # its parser workers (2, under a forkserver, with a resource tracker) die with it
    assert wait_until_gone(killed.pid, 60) == []
    assert query(db, "SELECT status FROM loads") == [("running",)]

    resumed = reflect("load", "sidecars", str(folder), "--db", str(db), "--json", "--silent")
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout)
    assert (summary["read"], summary["rejected"]) == (3_440, 40)
    assert summary["loaded"] + summary["already_present"] == 3_400
    assert query(db, "SELECT count(*), count(DISTINCT content_hash) FROM reflections") == [
        (3_400, 3_400)
    ]
    assert query(db, "SELECT count(*) FROM rejected") == [(40,)]
    assert query(db, "SELECT status FROM loads ORDER BY load_id") == [("interrupted",), ("ok",)]
    assert_loads_reconcile(db, "reflections")


@pytest.mark.slow(reason="six or seven SIGKILLs of a 12,025-file load, then a whole load")
def test_sigkill_loop_on_real_cli_loads_then_one_clean_load(tmp_path: Path) -> None:
    """Kill `reflect load sidecars` at growing delays (6 kills, a 7th if none caught workers), check
    its parser workers die with it, then load once more: complete, reconciled, no duplicates."""
    db = tmp_path / "r.duckdb"
    folder = sidecar_folder(tmp_path / "s", valid=12_000, invalid=25)
    command = [
        sys.executable,
        "-m",
        "agent_reflection",
        "load",
        "sidecars",
        str(folder),
        "--db",
        str(db),
        "--silent",
    ]
    saw_workers = False
    # None: a last kill that waits for the workers to appear, so that on a loaded machine
    # (slow start-up) at least one kill still catches the loader with its workers
    for delay in (0.3, 0.8, 1.3, 1.8, 2.5, 3.5, None):
        if delay is None and saw_workers:
            break
        load = subprocess.Popen(command, start_new_session=True)
        deadline = time.monotonic() + (TIMEOUT if delay is None else delay)
        while time.monotonic() < deadline and load.poll() is None:
            workers_now = len(session_processes(load.pid)) > 2
            saw_workers |= workers_now
            if delay is None and workers_now:
                break
            time.sleep(0.05)
        if load.poll() is None:
            load.send_signal(signal.SIGKILL)
        load.wait(timeout=TIMEOUT)
        # the forkserver, the resource tracker and the parser workers go too
        assert wait_until_gone(load.pid, 60) == []
    assert saw_workers, "no kill caught the loader with its worker processes"

    final = reflect("load", "sidecars", str(folder), "--db", str(db), "--json")
    assert final.returncode == 0, final.stderr
    summary = json.loads(final.stdout)
    assert (summary["read"], summary["rejected"]) == (12_025, 25)
    assert summary["loaded"] + summary["already_present"] == 12_000
    assert query(db, "SELECT count(*) FROM reflections") == [(12_000,)]
    assert query(db, "SELECT count(*) FROM rejected") == [(25,)]
    statuses = [s for (s,) in query(db, "SELECT status FROM loads ORDER BY load_id")]
    assert statuses[-1] == "ok" and set(statuses) <= {"ok", "interrupted"}
    assert_loads_reconcile(db, "reflections")


@pytest.mark.slow
def test_sigkill_during_git_loads_then_the_next_load_completes(
    tmp_path: Path, shared_dir: Path
) -> None:
    bundle = shared_dir / "data/git/flask.bundle"
    if not bundle.is_file():
        pytest.skip(f"{bundle} not present")
    db = tmp_path / "r.duckdb"
    cache = tmp_path / "cache"
    command = [
        sys.executable,
        "-m",
        "agent_reflection",
        "load",
        "git",
        str(bundle),
        "--db",
        str(db),
        "--cache-dir",
        str(cache),
        "--silent",
    ]
    for delay in (1.0, 2.0, 3.0):
        load = subprocess.Popen(command, start_new_session=True)
        try:
            load.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            load.send_signal(signal.SIGKILL)
            load.wait(timeout=TIMEOUT)
        assert wait_until_gone(load.pid, 60) == []
    # --full: list every commit (a killed load may have completed and recorded its tips)
    final = reflect(
        "load", "git", str(bundle), "--db", str(db), "--cache-dir", str(cache), "--json", "--full"
    )
    assert final.returncode == 0, final.stderr
    summary = json.loads(final.stdout)
    commits = query(db, "SELECT count(*), count(DISTINCT sha) FROM commits")[0]
    assert (
        commits[0]
        == commits[1]
        == summary["read"]
        == summary["loaded"] + summary["already_present"]
    )
    assert_loads_reconcile(db, "commits")


# --- two writers, and readers, at once (issue item 2 and the lock part of 10) ------------------

HOLD_LOCK = """
import sys, time
from agent_reflection.store.db import connect
con = connect(sys.argv[1])
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
con.close()
"""


def hold_lock(db: Path, seconds: float) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(HOLD_LOCK), str(db), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
    return holder


def test_a_second_writer_gives_up_after_its_wait_with_one_line_naming_the_holder(
    tmp_path: Path,
) -> None:
    db = tmp_path / "r.duckdb"
    folder = sidecar_folder(tmp_path / "s", valid=3, invalid=0)
    holder = hold_lock(db, 60)
    try:
        late = reflect("load", "sidecars", str(folder), "--db", str(db), "--wait", "1")
        reader = reflect("rejected", "--db", str(db), env={"REFLECT_LOCK_TIMEOUT": "0"})
    finally:
        holder.kill()
        holder.wait()
    assert late.returncode == 1
    lines = late.stderr.strip().splitlines()
    assert len(lines) == 2, late.stderr  # the waiting notice, then the error: no traceback
    assert lines[0].startswith("waiting up to 1 s for the database lock")
    assert f"held by pid {holder.pid} (" in lines[0]
    assert lines[1].startswith(f"Error: {db} is locked by pid {holder.pid} (")
    assert "--wait SECONDS / $REFLECT_LOCK_TIMEOUT" in lines[1]
    assert reader.returncode == 1
    assert reader.stderr.strip().splitlines() == [
        line for line in reader.stderr.strip().splitlines() if line.startswith("Error: ")
    ]
    assert f"locked by pid {holder.pid}" in reader.stderr and "Traceback" not in reader.stderr


def test_a_second_writer_waits_for_the_first_then_loads(tmp_path: Path) -> None:
    db = tmp_path / "r.duckdb"
    folder = sidecar_folder(tmp_path / "s", valid=3, invalid=0)
    holder = hold_lock(db, 2)
    waited = reflect("load", "sidecars", str(folder), "--db", str(db), "--wait", "120")
    holder.wait()
    assert waited.returncode == 0, waited.stderr
    assert "waiting up to 120 s for the database lock" in waited.stderr
    assert "read 3 = loaded 3" in waited.stdout


@pytest.mark.slow
def test_two_loads_into_one_database_at_once_both_succeed(tmp_path: Path) -> None:
    db = tmp_path / "r.duckdb"
    folder = sidecar_folder(tmp_path / "s", valid=4_000, invalid=3)
    command = [
        sys.executable,
        "-m",
        "agent_reflection",
        "load",
        "sidecars",
        str(folder),
        "--db",
        str(db),
        "--json",
        "--wait",
        "120",
    ]
    loads = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    results = [load.communicate(timeout=TIMEOUT) for load in loads]
    assert [load.returncode for load in loads] == [0, 0], results
    summaries = sorted((json.loads(out) for out, _err in results), key=lambda s: s["load_id"])
    assert summaries[0]["loaded"] == 4_000 and summaries[1]["already_present"] == 4_000
    assert query(db, "SELECT count(*) FROM rejected") == [(3,)]


def test_bad_lock_timeout_is_one_line(tmp_path: Path) -> None:
    duckdb.connect(str(tmp_path / "r.duckdb")).close()  # `reflect rejected` reads an existing file
    done = reflect(
        "rejected", "--db", str(tmp_path / "r.duckdb"), env={"REFLECT_LOCK_TIMEOUT": "soon"}
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "Error: $REFLECT_LOCK_TIMEOUT='soon' is not a number of seconds (e.g. 30; 0 fails at once)"
    ]


# --- re-loading the same inputs does not multiply `rejected` (issue item 10) ------------------


@pytest.mark.slow
def test_loading_the_same_inputs_three_times_keeps_one_row_per_rejected_record(
    tmp_path: Path,
) -> None:
    db = tmp_path / "r.duckdb"
    folder = sidecar_folder(tmp_path / "s", valid=2, invalid=3)
    board = tmp_path / "tasks.csv"
    board.write_text("id,opened\nT-1,2024-01-01\nT-2,never\nT-3,2024-01-02\n")
    for _ in range(3):
        assert reflect("load", "sidecars", str(folder), "--db", str(db)).returncode == 0
        loaded = reflect(
            "load",
            "board",
            str(board),
            "--format",
            "csv",
            "--map",
            "task_ref=id",
            "--map",
            "created_at=opened",
            "--no-match",
            "--db",
            str(db),
        )
        assert loaded.returncode == 0, loaded.stderr
    by_source = dict(query(db, "SELECT source, count(*) FROM rejected GROUP BY source"))
    assert by_source == {"sidecars": 3, "board": 1}
    # each load still counts what it rejected, and the rows sit under the latest load
    assert query(db, "SELECT rows_rejected FROM loads WHERE source = 'sidecars'") == [(3,)] * 3
    latest = query(db, "SELECT max(load_id) FROM loads WHERE source = 'sidecars'")[0][0]
    assert query(db, "SELECT DISTINCT load_id FROM rejected WHERE source = 'sidecars'") == [
        (latest,)
    ]


# --- --silent means the same on every loader (issue item 10) ----------------------------------


def loader_inputs(tmp_path: Path, git_repo: Path) -> dict[str, list[str]]:
    folder = sidecar_folder(tmp_path / "s", valid=2, invalid=1)
    board = tmp_path / "tasks.csv"
    board.write_text("id,opened\nT-1,2024-01-01\n")
    runs = tmp_path / "runs.jsonl"
    runs.write_text(json.dumps({"kind": "task", "id": "A", "status": "active"}) + "\n")
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(
        json.dumps(
            {
                "type": "user",
                "uuid": "u1",
                "sessionId": "s1",
                "timestamp": "2025-01-01T00:00:00Z",
                "message": {"role": "user", "content": "hi"},
            }
        )
        + "\n"
    )
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"confidence": 0.5, "correct": True}) + "\n")
    return {
        "sidecars": [str(folder)],
        "git": [str(git_repo)],
        "board": [
            str(board),
            "--format",
            "csv",
            "--map",
            "task_ref=id",
            "--map",
            "created_at=opened",
        ],
        "match": [],
        "runs": [str(runs)],
        "transcripts": [str(transcript)],
        "labels": [str(labels)],
    }


@pytest.mark.slow
def test_silent_prints_nothing_on_every_loader(tmp_path: Path, git_repo: Path) -> None:
    db = tmp_path / "r.duckdb"
    for loader, args in loader_inputs(tmp_path, git_repo).items():
        loud = reflect("load", loader, *args, "--db", str(db))
        assert loud.returncode == 0, (loader, loud.stderr)
        assert "read " in loud.stdout, (loader, loud.stdout)
        silent = reflect("load", loader, *args, "--db", str(db), "--silent")
        assert (loader, silent.returncode, silent.stdout, silent.stderr) == (loader, 0, "", "")


# --- a shallow clone is loaded with a warning (issue item 10) ---------------------------------


def test_a_shallow_clone_loads_with_a_warning(tmp_path: Path, git_repo: Path) -> None:
    for i in range(3):
        (git_repo / "f.txt").write_text(f"{i}\n")
        run_git(git_repo, "add", "f.txt")
        run_git(git_repo, "commit", "-q", "-m", f"change {i}")
    shallow = tmp_path / "shallow"
    run_git(tmp_path, "clone", "-q", "--depth", "1", f"file://{git_repo}", str(shallow))
    db = tmp_path / "r.duckdb"
    done = reflect("load", "git", str(shallow), "--db", str(db), "--json")
    assert done.returncode == 0, done.stderr
    assert "warning: shallow: shallow clone, the history before its cut is missing" in done.stderr
    assert "git fetch --unshallow" in done.stderr
    summary = json.loads(done.stdout)
    assert summary["detail"]["shallow"] is True and summary["read"] == 1

    full = reflect("load", "git", str(git_repo), "--db", str(db), "--json")
    assert full.returncode == 0 and "shallow" not in full.stderr
    assert json.loads(full.stdout)["detail"]["shallow"] is False


# --- bookkeeping in one process ----------------------------------------------------------------


def test_a_load_open_in_this_process_is_not_taken_for_a_dead_one(tmp_path: Path) -> None:
    from agent_reflection.store.db import begin_load, connect

    con = connect(tmp_path / "r.duckdb")
    other = connect(tmp_path / "other.duckdb")
    try:
        con.execute(
            "INSERT INTO loads (load_id, source, origin, started_at, tool_version) "
            "VALUES (7, 'git', 'x', now(), 'old')"  # a dead process's row, from before `pid`
        )
        with begin_load(con, "board", "outer") as outer, begin_load(con, "match", "inner"):
            with begin_load(other, "labels", "elsewhere"):
                pass
            statuses = dict(con.execute("SELECT load_id, status FROM loads").fetchall())
        assert statuses == {7: "interrupted", outer.load_id: "running", 9: "running"}
        assert outer.load_id == 8
    finally:
        con.close()
        other.close()


def test_a_dead_or_zombie_process_is_not_alive_for_the_worker_watch() -> None:
    from agent_reflection.load.parent_watch import _alive

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 60
    while Path(f"/proc/{child.pid}/stat").read_text().split(") ")[1][0] != "Z":
        assert time.monotonic() < deadline, "the child never exited"
        time.sleep(0.05)
    assert _alive(child.pid) is False  # exited, not yet reaped: a zombie
    child.wait()
    assert _alive(child.pid) is False and _alive(os.getpid()) is True


WATCHED_CONNECT = """
import sys, time
from agent_reflection.store.db import connect
start = float(sys.argv[2])
time.sleep(max(0.0, start - time.time()))
connect(sys.argv[1], wait_seconds=60).close()
"""


def test_a_new_database_appears_whole_to_every_process_opening_it(tmp_path: Path) -> None:
    """A database file is created under another name and linked into place with its schema:
    a process opening the path never finds a file DuckDB is still writing (before, a second
    load started at the same moment could read an empty header and fail, "not a valid DuckDB
    database file"). Watched here from outside while three processes create it at once."""
    half_written: list[str] = []
    for attempt in range(2):
        db = tmp_path / f"{attempt}" / "r.duckdb"
        db.parent.mkdir()
        start = time.time() + 1.5
        openers = [
            subprocess.Popen(
                [sys.executable, "-c", WATCHED_CONNECT, str(db), str(start)],
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(3)
        ]
        while any(opener.poll() is None for opener in openers):
            try:
                check_database_file(db)  # False while there is no file yet
            except NotADatabase as exc:
                half_written.append(str(exc))
        errors = [opener.communicate()[1] for opener in openers]
        assert [opener.returncode for opener in openers] == [0, 0, 0], errors
        assert sorted(p.name for p in db.parent.iterdir()) == ["r.duckdb"]  # nothing left over
        assert query(db, "SELECT count(*) FROM loads") == [(0,)]
    assert half_written == []
