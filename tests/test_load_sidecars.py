"""load_sidecars: valid sidecars land typed and keyed by content hash; every bad input is
rejected with its file and JSON path; re-loading changes nothing; counts reconcile."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import tracemalloc
from pathlib import Path
from typing import Any

import duckdb
import pytest

from agent_reflection.load.sidecars import loader as sidecars_module
from agent_reflection.load.sidecars.loader import NoPathsGiven, SidecarPathNotFound, load_sidecars
from agent_reflection.reflection.fields import SUPPORTED_VERSIONS
from agent_reflection.store.db import connect
from sidecar_samples import sidecar, write


def canonical_hash(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture
def con(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    connection = connect(tmp_path / "db" / "reflection.duckdb")
    yield connection
    connection.close()


def table(con: duckdb.DuckDBPyConnection, name: str, order: str) -> list[tuple[Any, ...]]:
    return con.execute(f"SELECT * FROM {name} ORDER BY {order}").fetchall()


def assert_reconciles(con: duckdb.DuckDBPyConnection, summary: Any) -> None:
    assert summary.reconciles
    load = con.execute(
        "SELECT rows_read, rows_loaded, rows_rejected, rows_already_present, status "
        "FROM loads WHERE load_id = ?",
        [summary.load_id],
    ).fetchone()
    assert load == (summary.read, summary.loaded, summary.rejected, summary.already_present, "ok")
    stored = con.execute(
        "SELECT (SELECT count(*) FROM reflections WHERE load_id = $id), "
        "(SELECT count(*) FROM rejected WHERE load_id = $id)",
        {"id": summary.load_id},
    ).fetchone()
    assert stored == (summary.loaded, summary.rejected)


def rejections(con: duckdb.DuckDBPyConnection, load_id: int) -> dict[str, str]:
    rows = con.execute(
        "SELECT location, reason FROM rejected WHERE load_id = ?", [load_id]
    ).fetchall()
    return dict(rows)


# --- valid records ----------------------------------------------------------------------------


def test_valid_sidecars_land_in_typed_columns_keyed_by_content_hash(con, tmp_path):
    full = sidecar(1)
    bare = sidecar(
        2,
        confidence=None,
        most_likely_wrong=None,
        known_not_in_diff=None,
        files_changed=[],
        timestamp="2026-03-02T08:30:00.123456789+00:00",
    )
    write(tmp_path / "s" / "a.reflection.json", full)
    write(tmp_path / "s" / "nested" / "deeper" / "b.reflection.json", bare)
    write(tmp_path / "s" / "notes.txt", "not a sidecar, and not picked up")

    summary = load_sidecars(con, [tmp_path / "s"], workers=1)

    assert (summary.read, summary.loaded, summary.rejected) == (2, 2, 0)
    assert_reconciles(con, summary)
    rows = con.execute(
        "SELECT content_hash, task_ref, repo, confidence, mlw_surface, mlw_description, "
        "known_not_in_diff, risk_needs_review, risk_score, risk_surface, files_changed, "
        "reflection_attempt, degraded, reflection_mode, source_file, raw, load_id, "
        "strftime(timezone('UTC', \"timestamp\"), '%Y-%m-%d %H:%M:%S.%f') "
        "FROM reflections ORDER BY task_ref"
    ).fetchall()
    first, second = rows
    assert first[:14] == (
        canonical_hash(full),
        "PROJ-1",
        "webapp",
        0.75,
        "auth",
        "token refresh races logout",
        "ran the migration by hand — ünïcode ✓",
        True,
        0.8,
        "auth",
        ["src/auth/session.py", "tests/test_session.py"],
        1,
        False,
        "solo",
    )
    assert first[14] == str(tmp_path / "s" / "a.reflection.json")
    assert json.loads(first[15]) == full
    assert first[15] == json.dumps(full, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert first[16] == summary.load_id
    assert first[17] == "2026-03-01 12:00:00.000000"
    assert second[0] == canonical_hash(bare)
    assert second[3:7] == (None, None, None, None)
    assert second[10] == []
    assert second[17] == "2026-03-02 08:30:00.123456"


def test_explicit_files_load_whatever_their_name_and_globs_expand(con, tmp_path):
    write(tmp_path / "x" / "odd-name.json", sidecar(1))
    write(tmp_path / "g" / "one.reflection.json", sidecar(2))
    write(tmp_path / "g" / "sub" / "two.reflection.json", sidecar(3))
    write(tmp_path / "g" / "sub" / "three.json", sidecar(4))

    summary = load_sidecars(
        con, [tmp_path / "x" / "odd-name.json", f"{tmp_path}/g/**/*.json"], workers=1
    )

    assert (summary.read, summary.loaded) == (4, 4)
    assert {r[0] for r in con.execute("SELECT task_ref FROM reflections").fetchall()} == {
        "PROJ-1",
        "PROJ-2",
        "PROJ-3",
        "PROJ-4",
    }


def test_pattern_picks_other_names_inside_folders(con, tmp_path):
    write(tmp_path / "s" / "a.json", sidecar(1))
    write(tmp_path / "s" / "b.reflection.json", sidecar(2))
    summary = load_sidecars(con, [tmp_path / "s"], pattern="*.json", workers=1)
    assert summary.loaded == 2


# --- idempotency and duplicates ---------------------------------------------------------------


def make_mixed_folder(root: Path, n: int = 12) -> Path:
    for i in range(n):
        write(root / f"d{i % 3}" / f"s{i:03d}.reflection.json", sidecar(i))
    write(root / "bad" / "truncated.reflection.json", json.dumps(sidecar(99))[:40])
    write(root / "bad" / "wrong.reflection.json", sidecar(98, confidence="high"))
    return root


def test_loading_twice_leaves_identical_tables_and_counts_already_present(con, tmp_path):
    folder = make_mixed_folder(tmp_path / "s")
    first = load_sidecars(con, [folder], workers=1)
    assert_reconciles(con, first)
    before = table(con, "reflections", "content_hash")
    rejected_first = rejections(con, first.load_id)
    second = load_sidecars(con, [folder], workers=1)

    assert table(con, "reflections", "content_hash") == before
    assert (first.read, first.loaded, first.rejected, first.already_present) == (14, 12, 2, 0)
    assert (second.read, second.loaded, second.rejected, second.already_present) == (14, 0, 2, 12)
    # the same two files rejected again: stored once, under the latest load that rejected them
    assert rejections(con, second.load_id) == rejected_first and len(rejected_first) == 2
    assert rejections(con, first.load_id) == {}
    assert_reconciles(con, second)


def test_identical_content_in_two_files_is_stored_once_first_file_wins(con, tmp_path):
    write(tmp_path / "s" / "a.reflection.json", sidecar(1))
    compact = json.dumps(sidecar(1))  # same record, other formatting: same canonical JSON
    write(tmp_path / "s" / "b.reflection.json", compact)

    summary = load_sidecars(con, [tmp_path / "s"], workers=1)

    assert (summary.loaded, summary.already_present) == (1, 1)
    assert con.execute("SELECT source_file FROM reflections").fetchall() == [
        (str(tmp_path / "s" / "a.reflection.json"),)
    ]


def test_worker_pool_gives_the_same_tables_as_one_process(tmp_path, monkeypatch):
    folder = make_mixed_folder(tmp_path / "s", n=45)
    write(folder / "dup.reflection.json", json.dumps(sidecar(3)))
    monkeypatch.setattr(sidecars_module, "CHUNK_FILES", 7)
    monkeypatch.setattr(sidecars_module, "BATCH_ROWS", 10)
    monkeypatch.setattr(sidecars_module, "COMMIT_ROWS", 20)  # several transactions
    results = {}
    for workers in (1, 2):
        con = connect(tmp_path / f"w{workers}.duckdb")
        summary = load_sidecars(con, [folder], workers=workers)
        assert_reconciles(con, summary)
        results[workers] = (
            (summary.read, summary.loaded, summary.rejected, summary.already_present),
            con.execute("SELECT * EXCLUDE (load_id) FROM reflections ORDER BY 1").fetchall(),
            sorted(rejections(con, summary.load_id).items()),
        )
        con.close()
    assert results[1] == results[2]
    assert results[2][0] == (48, 45, 2, 1)


def test_progress_gets_the_file_count_then_updates_that_sum_to_it(con, tmp_path):
    folder = make_mixed_folder(tmp_path / "s")

    class Recorder:
        total: float | None = None

        def __init__(self) -> None:
            self.updates: list[float] = []

        def update(self, n: float = 1) -> None:
            self.updates.append(n)

    progress = Recorder()
    summary = load_sidecars(con, [folder], progress=progress, workers=1)
    assert progress.total == 14
    assert sum(progress.updates) == summary.read == 14


# --- bad input -----------------------------------------------------------------------------------

BAD_RECORDS = {
    "truncated": (json.dumps(sidecar(1), indent=2)[:120], "", "invalid JSON at line"),
    "wrong type": (
        sidecar(1, risk={**sidecar(1)["risk"], "score": "high"}),
        "#/risk/score",
        "invalid reflection.v1 at /risk/score: a number in [0, 1]",
    ),
    "binary garbage": (b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe", "", "not UTF-8 text"),
    "empty file": (b"", "", "empty file"),
    "not an object": ([1, 2, 3], "#/", "an object, got an array"),
    "missing field": (
        {k: v for k, v in sidecar(1).items() if k != "repo"},
        "#/repo",
        "a required property, missing",
    ),
    "extra field": (sidecar(1, mood="great"), "#/mood", "no such property"),
    "unknown version": (
        sidecar(1, schema="reflection.v2"),
        "#/schema",
        f"supported versions are {', '.join(SUPPORTED_VERSIONS)}",
    ),
    "newer version, other fields": (
        {"schema": "reflection.v9", "whatever": 1},
        "#/schema",
        "unsupported schema version 'reflection.v9'",
    ),
    "not a real date": (
        sidecar(1, timestamp="2026-02-30T12:00:00Z"),
        "#/timestamp",
        "not a real instant",
    ),
    "nested wrong type": (
        sidecar(1, files_changed=["a.py", 7]),
        "#/files_changed/1",
        "a string, got the number 7",
    ),
    "attempt too big for the column": (
        sidecar(1, provenance={**sidecar(1)["provenance"], "reflection_attempt": 2**40}),
        "#/provenance/reflection_attempt",
        "at most 2,147,483,647",
    ),
    "lone surrogate": (
        '{"schema": "reflection.v1", "task_ref": "P\\ud800", "agent": "a", '
        '"session_id": "s", "timestamp": "2026-03-01T12:00:00Z", "repo": "r", '
        '"confidence": null, "most_likely_wrong": null, "known_not_in_diff": null,'
        ' "risk": {"needs_review": false, "score": 0, "surface": "none", '
        '"reason": "x"}, "files_changed": [], "provenance": {"source": '
        '"stop-hook", "reflection_attempt": 1, "degraded": true, '
        '"reflection_mode": "off"}}',
        "#/task_ref",
        "unpaired UTF-16 surrogate",
    ),
}


@pytest.mark.parametrize("case", list(BAD_RECORDS), ids=list(BAD_RECORDS))
def test_bad_records_are_rejected_naming_file_and_json_path(con, tmp_path, case):
    content, fragment, reason_part = BAD_RECORDS[case]
    good = write(tmp_path / "s" / "good.reflection.json", sidecar(1, task_ref="GOOD-1"))
    bad = write(tmp_path / "s" / "bad.reflection.json", content)

    summary = load_sidecars(con, [tmp_path / "s"], workers=1)

    assert (summary.read, summary.loaded, summary.rejected) == (2, 1, 1)
    assert_reconciles(con, summary)
    [(location, reason, raw)] = con.execute(
        "SELECT location, reason, raw FROM rejected WHERE load_id = ?", [summary.load_id]
    ).fetchall()
    assert location == f"{bad}{fragment}"
    assert reason_part in reason
    assert (raw or "") == bad.read_bytes().decode("utf-8", errors="replace")
    assert con.execute("SELECT source_file FROM reflections").fetchall() == [(str(good),)]


def test_a_200_mb_file_is_rejected_unread_with_its_size(con, tmp_path):
    big = tmp_path / "s" / "huge.reflection.json"
    big.parent.mkdir()
    with big.open("wb") as f:
        f.write(b'{"schema": "reflection.v1", "padding": "')
        f.truncate(200 * 2**20)  # sparse: no 200 MB on disk
    write(tmp_path / "s" / "ok.reflection.json", sidecar(1))

    tracemalloc.start()
    try:
        summary = load_sidecars(con, [tmp_path / "s"], workers=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert (summary.read, summary.loaded, summary.rejected) == (2, 1, 1)
    assert peak < 20 * 2**20, f"peak Python allocation {peak / 2**20:.0f} MB"
    [(location, reason, raw)] = con.execute("SELECT location, reason, raw FROM rejected").fetchall()
    assert location == str(big)
    assert "not a sidecar: 200.0 MB is over the 16 MB limit" in reason
    assert raw.startswith('{"schema": "reflection.v1"') and len(raw) < 5000


def test_max_bytes_is_configurable(con, tmp_path):
    write(tmp_path / "s" / "a.reflection.json", sidecar(1))
    summary = load_sidecars(con, [tmp_path / "s"], workers=1, max_bytes=100)
    assert summary.rejected == 1
    assert "over the 9.53674e-05 MB limit" in next(iter(rejections(con, summary.load_id).values()))


def test_an_empty_folder_reads_nothing_and_says_so(con, tmp_path):
    (tmp_path / "empty").mkdir()
    write(tmp_path / "empty" / "other.txt", "hello")
    summary = load_sidecars(con, [tmp_path / "empty"], workers=1)
    assert (summary.read, summary.loaded, summary.rejected) == (0, 0, 0)
    assert_reconciles(con, summary)
    [problem] = summary.detail["problems"]
    assert str(tmp_path / "empty") in problem and "no *.reflection.json files" in problem


def test_a_missing_path_is_an_error_before_anything_loads(con, tmp_path):
    write(tmp_path / "s" / "a.reflection.json", sidecar(1))
    missing = tmp_path / "no" / "such" / "dir"
    with pytest.raises(SidecarPathNotFound, match=r"no such file or folder.*nothing was loaded"):
        load_sidecars(con, [missing, tmp_path / "s"])
    # no load row, no record: as `reflect load git` with a wrong path
    assert con.execute("SELECT count(*) FROM loads").fetchone() == (0,)
    assert con.execute("SELECT count(*) FROM reflections").fetchone() == (0,)


def test_an_unmatched_glob_is_named_and_the_other_paths_still_load(con, tmp_path):
    write(tmp_path / "s" / "a.reflection.json", sidecar(1))
    summary = load_sidecars(con, [tmp_path / "s", f"{tmp_path}/nothing-*.json"])
    assert summary.loaded == 1
    assert summary.detail["problems"] == [
        f"{tmp_path}/nothing-*.json: no file or folder matches this glob",
    ]
    stored = con.execute("SELECT detail FROM loads WHERE load_id = ?", [summary.load_id])
    assert json.loads(stored.fetchone()[0])["problems"] == summary.detail["problems"]


def test_every_problem_of_a_record_is_in_its_one_rejection(con, tmp_path):
    record = sidecar(1, schema_version="1", confidence=7)
    del record["session_id"]
    bad = write(tmp_path / "s" / "bad.reflection.json", record)
    summary = load_sidecars(con, [tmp_path / "s"], workers=1)
    assert (summary.read, summary.rejected) == (1, 1)
    [(location, reason)] = con.execute(
        "SELECT location, reason FROM rejected WHERE load_id = ?", [summary.load_id]
    ).fetchall()
    assert location == f"{bad}#/schema_version"  # the first problem locates the record
    assert reason.startswith("invalid reflection.v1, 3 problems: /schema_version: no such")
    assert "; /session_id: a required property, missing; " in reason
    assert reason.endswith("; /confidence: a number in [0, 1], got 7")


def test_a_record_with_many_problems_gets_a_bounded_reason(con, tmp_path):
    record: dict[str, Any] = {f"extra_{i:03}": i for i in range(200)}
    write(tmp_path / "s" / "bad.reflection.json", record)
    summary = load_sidecars(con, [tmp_path / "s"], workers=1)
    [reason] = rejections(con, summary.load_id).values()
    # 200 unknown properties and the 12 required ones missing: the count, then a bounded list
    assert reason.startswith("invalid reflection.v1, 212 problems: /extra_000: no such")
    assert len(reason) < 1100 and reason.endswith(" more")
    assert reason.count("(allowed:") == 1  # the allowed names once, not per unknown key


def test_symlink_loops_end_and_unreadable_links_are_rejected(con, tmp_path):
    folder = tmp_path / "s"
    write(folder / "sub" / "a.reflection.json", sidecar(1))
    (folder / "sub" / "back-to-top").symlink_to(folder, target_is_directory=True)
    (folder / "loop.reflection.json").symlink_to(folder / "loop.reflection.json")
    (folder / "gone.reflection.json").symlink_to(tmp_path / "deleted.json")

    summary = load_sidecars(con, [folder], workers=1)

    assert (summary.read, summary.loaded, summary.rejected) == (3, 1, 2)
    assert summary.detail["folders_skipped"] >= 1
    reasons = rejections(con, summary.load_id)
    assert "Too many levels of symbolic links" in reasons[str(folder / "loop.reflection.json")]
    assert "No such file or directory" in reasons[str(folder / "gone.reflection.json")]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their permissions")
def test_an_unreadable_file_is_rejected_with_the_reason(con, tmp_path):
    locked = write(tmp_path / "s" / "locked.reflection.json", sidecar(1))
    locked.chmod(0)
    try:
        summary = load_sidecars(con, [tmp_path / "s"], workers=1)
    finally:
        locked.chmod(0o644)
    assert summary.rejected == 1
    assert "Permission denied" in rejections(con, summary.load_id)[str(locked)]


def test_a_fifo_named_like_a_sidecar_does_not_hang_the_load(con, tmp_path):
    fifo = tmp_path / "pipe.reflection.json"
    os.mkfifo(fifo)
    summary = load_sidecars(con, [fifo], workers=1)
    assert summary.rejected == 1
    assert "not a regular file" in rejections(con, summary.load_id)[str(fifo)]


def test_no_paths_is_an_error_that_says_what_to_give():
    with pytest.raises(NoPathsGiven, match="name sidecar files, folders or globs"):
        load_sidecars(duckdb.connect(), [])


def test_a_failed_load_rolls_back_its_open_transaction_and_is_marked_failed(
    con, tmp_path, monkeypatch
):
    write(tmp_path / "s" / "a.reflection.json", sidecar(1))
    monkeypatch.setattr(sidecars_module, "_arrow_table", lambda chunks: (1 / 0, 0))
    with pytest.raises(ZeroDivisionError):
        load_sidecars(con, [tmp_path / "s"], workers=1)
    assert con.execute("SELECT count(*) FROM reflections").fetchone() == (0,)
    assert con.execute("SELECT status FROM loads").fetchall() == [("failed",)]


def test_the_connection_keeps_its_thread_memory_and_checkpoint_settings(con, tmp_path):
    con.execute("SET threads = 3")
    con.execute("SET memory_limit = '3GB'")
    threshold = con.execute("SELECT current_setting('checkpoint_threshold')").fetchone()
    before = con.execute("SELECT current_setting('memory_limit')").fetchone()
    write(tmp_path / "s" / "a.reflection.json", sidecar(1))
    load_sidecars(con, [tmp_path / "s"], workers=1)
    assert con.execute("SELECT current_setting('threads')").fetchone() == (3,)
    assert con.execute("SELECT current_setting('checkpoint_threshold')").fetchone() == threshold
    after = con.execute("SELECT current_setting('memory_limit')").fetchone()
    # DuckDB shows the limit rounded to 0.1 GiB, so the restored value may show 0.1 lower
    assert after[0].endswith(" GiB") and abs(float(after[0][:-4]) - float(before[0][:-4])) < 0.15


def test_the_stored_record_is_the_canonical_json_of_what_was_read(con, tmp_path):
    record = copy.deepcopy(sidecar(1, confidence=1, files_changed=["ü/ä.py"]))
    record["provenance"]["reflection_attempt"] = 2.0  # an integral float stays as written
    write(tmp_path / "a.reflection.json", json.dumps(record))
    summary = load_sidecars(con, [tmp_path / "a.reflection.json"], workers=1)
    assert summary.loaded == 1
    raw, key, attempt, confidence = con.execute(
        "SELECT raw, content_hash, reflection_attempt, confidence FROM reflections"
    ).fetchone()
    assert raw == json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert '"reflection_attempt":2.0' in raw and '"confidence":1,' in raw
    assert key == canonical_hash(record)
    assert (attempt, confidence) == (2, 1.0)
