"""``reflect load ci``: CI results per commit (GitHub REST, gh run list --json, JUnit XML)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import duckdb
import pytest

from agent_reflection.load.ci import CiFormatError, CiOptions, load_ci
from agent_reflection.store.db import connect

SHA_A = "a" * 40
SHA_B = "b" * 40
API = "https://api.github.com/repos/octo/hello"


@pytest.fixture
def db(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    con = connect(tmp_path / "ci.duckdb")
    yield con
    con.close()


def _rows(db: duckdb.DuckDBPyConnection) -> list[tuple[object, ...]]:
    return db.execute(
        "SELECT repo, sha, kind, name, run_id, attempt, conclusion FROM ci_runs ORDER BY ALL"
    ).fetchall()


def test_check_runs_statuses_and_gh_run_list(tmp_path: Path, db: duckdb.DuckDBPyConnection) -> None:
    check_runs = {
        "total_count": 2,
        "check_runs": [
            {
                "id": 11,
                "head_sha": SHA_A,
                "name": "pytest",
                "status": "completed",
                "conclusion": "failure",
                "started_at": "2024-05-01T10:00:00Z",
                "completed_at": "2024-05-01T10:05:00Z",
                "url": f"{API}/check-runs/11",
                "app": {"slug": "github-actions"},
            },
            {
                "id": 12,
                "head_sha": SHA_A,
                "name": "lint",
                "status": "in_progress",
                "conclusion": None,
                "started_at": "2024-05-01T10:00:00Z",
                "completed_at": None,
                "url": f"{API}/check-runs/12",
                "app": {"slug": "github-actions"},
            },
        ],
    }
    statuses = [
        {
            "id": 21,
            "state": "SUCCESS",
            "context": "ci/jenkins",
            "url": f"{API}/statuses/{SHA_B}",
            "created_at": "2024-05-02T10:00:00Z",
            "updated_at": "2024-05-02T10:09:00Z",
        },
        {
            "id": 22,
            "state": "pending",
            "context": "ci/slow",
            "url": f"{API}/statuses/{SHA_B}",
            "created_at": "2024-05-02T10:00:00Z",
            "updated_at": "2024-05-02T10:00:00Z",
        },
    ]
    gh = [
        {
            "databaseId": 31,
            "headSha": SHA_B,
            "workflowName": "CI",
            "name": "CI",
            "conclusion": "timed_out",
            "status": "completed",
            "attempt": 2,
            "startedAt": "2024-05-02T11:00:00Z",
            "updatedAt": "2024-05-02T12:00:00Z",
            "url": "https://github.com/octo/hello/actions/runs/31",
            "headBranch": "main",
            "event": "push",
        },
    ]
    for name, doc in (("checks.json", check_runs), ("statuses.json", statuses), ("gh.json", gh)):
        (tmp_path / name).write_text(json.dumps(doc))
        summary = load_ci(db, tmp_path / name)
        assert summary.rejected == 0
        assert summary.read == summary.loaded
    assert _rows(db) == [
        ("octo/hello", SHA_A, "check_run", "lint", "12", 1, None),
        ("octo/hello", SHA_A, "check_run", "pytest", "11", 1, "failure"),
        ("octo/hello", SHA_B, "status", "ci/jenkins", "21", 1, "success"),
        ("octo/hello", SHA_B, "status", "ci/slow", "22", 1, None),
        ("octo/hello", SHA_B, "workflow_run", "CI", "31", 2, "timed_out"),
    ]
    # idempotent; a run that finished since is replaced and counted loaded
    again = load_ci(db, tmp_path / "checks.json")
    assert (again.read, again.loaded, again.already_present) == (2, 0, 2)
    check_runs["check_runs"][1].update(status="completed", conclusion="success")  # type: ignore[index]
    (tmp_path / "checks.json").write_text(json.dumps(check_runs))
    finished = load_ci(db, tmp_path / "checks.json")
    assert (finished.loaded, finished.already_present, finished.detail["updated"]) == (1, 1, 1)
    lint = db.execute("SELECT conclusion FROM ci_runs WHERE name = 'lint'").fetchone()
    assert lint == ("success",)


def test_bad_records_name_file_record_and_field(
    tmp_path: Path, db: duckdb.DuckDBPyConnection
) -> None:
    path = tmp_path / "runs.jsonl"
    lines = [
        {
            "id": 1,
            "head_sha": SHA_A,
            "name": "ok",
            "run_id": 5,
            "conclusion": "success",
            "url": f"{API}/actions/jobs/1",
        },
        {"id": 2, "head_sha": "abc", "name": "short sha", "run_id": 5, "url": f"{API}/x"},
        {"id": 3, "head_sha": SHA_A, "name": "no repo", "run_id": 5},
        {"hello": "world"},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n{broken\n")
    summary = load_ci(db, path)
    assert (summary.read, summary.loaded, summary.rejected) == (5, 1, 4)
    rejected = db.execute(
        "SELECT location, reason FROM rejected WHERE load_id = ? ORDER BY location",
        [summary.load_id],
    ).fetchall()
    assert [loc.rsplit("/", 1)[-1] for loc, _ in rejected] == [
        "runs.jsonl:2",
        "runs.jsonl:3",
        "runs.jsonl:4",
        "runs.jsonl:5",
    ]
    reasons = [reason for _, reason in rejected]
    assert "field 'head_sha'" in reasons[0]
    assert "field 'repository'" in reasons[1] and "--repo" in reasons[1]
    assert "field 'kind'" in reasons[2]
    assert "invalid JSON" in reasons[3]


JUNIT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="unit" tests="3" failures="1" errors="0" skipped="0"
             timestamp="2024-05-03T09:00:00" time="12.5">
    <testcase classname="a" name="t1"/>
    <testcase classname="a" name="t2"><failure message="boom"/></testcase>
    <testcase classname="a" name="t3"/>
  </testsuite>
  <testsuite name="integration" tests="2" failures="0" errors="0" skipped="0"
             timestamp="2024-05-03T09:01:00" time="30">
    <testcase classname="b" name="t1"/><testcase classname="b" name="t2"/>
  </testsuite>
</testsuites>
"""


def test_junit_report(tmp_path: Path, db: duckdb.DuckDBPyConnection) -> None:
    path = tmp_path / "report.xml"
    path.write_text(JUNIT)
    with pytest.raises(CiFormatError, match="--repo OWNER/REPO and --sha"):
        load_ci(db, path)
    summary = load_ci(db, path, CiOptions(repo="octo/hello", sha=SHA_A.upper()))
    assert (summary.read, summary.loaded, summary.rejected) == (2, 2, 0)
    rows = db.execute(
        "SELECT name, conclusion, epoch(finished - started) FROM ci_runs ORDER BY name"
    ).fetchall()
    assert rows == [("integration", "success", 30.0), ("unit", "failure", 12.5)]
    assert db.execute("SELECT DISTINCT sha FROM ci_runs").fetchall() == [(SHA_A,)]
    # an entity-expansion bomb is refused, not expanded
    bomb = tmp_path / "bomb.xml"
    bomb.write_text(
        '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><testsuite>&a;</testsuite>'
    )
    refused = load_ci(db, bomb, CiOptions(repo="octo/hello", sha=SHA_A))
    assert (refused.loaded, refused.rejected) == (0, 1)


def test_cli(tmp_path: Path) -> None:
    path = tmp_path / "statuses.json"
    path.write_text(
        json.dumps(
            {
                "sha": SHA_A,
                "repository": {"full_name": "octo/hello"},
                "statuses": [
                    {
                        "id": 1,
                        "state": "failure",
                        "context": "ci",
                        "created_at": "2024-05-01T00:00:00Z",
                    }
                ],
            }
        )
    )
    db_path = tmp_path / "cli.duckdb"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent_reflection",
            "load",
            "ci",
            str(path),
            "--db",
            str(db_path),
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    doc = json.loads(out.stdout)
    assert [(x["read"], x["loaded"], x["rejected"]) for x in doc["loads"]] == [(1, 1, 0)]


# --- BugSwarm's real GitHub Actions responses in ../shared/ ---------------------------------


def test_bugswarm_orientdb_runs_and_jobs(shared_dir: Path, tmp_path: Path) -> None:
    folder = shared_dir / "data" / "github" / "ci-samples-bugswarm"
    archive = folder / "raw" / "github-pair-finder-tests-data.tar.gz"
    if not archive.is_file():
        pytest.skip(f"{archive} not present")
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if "orientechnologies-orientdb/" in m.name]
        tar.extractall(tmp_path, members=members, filter="data")
    repo_dir = next(tmp_path.rglob("orientechnologies-orientdb"))
    files = sorted(repo_dir.glob("runs-page*.json")) + sorted(
        (repo_dir / "jobs-responses").glob("*.json")
    )
    con = connect(tmp_path / "bugswarm.duckdb")
    try:
        for file in files:
            summary = load_ci(con, file)
            assert summary.rejected == 0 and summary.read == summary.loaded
        with (folder / "orientdb_workflow_runs.csv").open() as fh:
            expected_runs = {
                (r["repo"], r["head_sha"], r["run_id"], r["conclusion"]) for r in csv.DictReader(fh)
            }
        runs = set(
            con.execute(
                "SELECT repo, sha, run_id, conclusion FROM ci_runs WHERE kind = 'workflow_run'"
            ).fetchall()
        )
        assert runs == expected_runs
        # every orientdb job of BugSwarm's derived table, with the same result
        with (folder / "build_jobs.csv").open() as fh:
            jobs = [r for r in csv.DictReader(fh) if r["repo_dir"] == "orientechnologies-orientdb"]
        stored = dict(
            ((sha, run_id), conclusion)
            for sha, run_id, conclusion in con.execute(
                "SELECT sha, run_id, conclusion FROM ci_runs WHERE kind = 'job'"
            ).fetchall()
        )
        assert jobs
        for job in jobs:
            assert stored[(job["commit"], job["job_id"])] == job["result"]
        # re-loading the first page adds nothing
        again = load_ci(con, files[0])
        assert again.loaded == 0 and again.already_present == again.read
    finally:
        con.close()


def test_csv_of_ci_results(tmp_path: Path, db: duckdb.DuckDBPyConnection) -> None:
    path = tmp_path / "ci.csv"
    path.write_text(
        "repo,sha,name,run_id,conclusion,started_at\n"
        f"octo/hello,{SHA_A},build,1,SUCCESS,2024-05-01T00:00:00Z\n"
        f"octo/hello,{SHA_B},build,2,failure,\n"
        "octo/hello,abc,build,3,failure,\n"
    )
    summary = load_ci(db, path)
    assert (summary.read, summary.loaded, summary.rejected) == (3, 2, 1)
    assert _rows(db) == [
        ("octo/hello", SHA_A, "workflow_run", "build", "1", 1, "success"),
        ("octo/hello", SHA_B, "workflow_run", "build", "2", 1, "failure"),
    ]
    reason = db.execute("SELECT location, reason FROM rejected").fetchone()
    assert reason is not None and reason[0].endswith("ci.csv:4") and "field 'sha'" in reason[1]
    with pytest.raises(CiFormatError, match="is a folder"):
        load_ci(db, tmp_path)
    bad = tmp_path / "bad.csv"
    bad.write_text("repo,commit\nocto/hello,x\n")
    with pytest.raises(CiFormatError, match="needs columns for name, conclusion"):
        load_ci(db, bad)


def test_bugswarm_job_table(shared_dir: Path, db: duckdb.DuckDBPyConnection) -> None:
    folder = shared_dir / "data" / "github" / "ci-samples-bugswarm"
    if not (folder / "build_jobs.csv").is_file():
        pytest.skip(f"{folder / 'build_jobs.csv'} not present")
    with (folder / "build_jobs.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    summary = load_ci(db, folder / "build_jobs.csv")
    assert (summary.read, summary.loaded, summary.rejected) == (len(rows), len(rows), 0)
    counts = dict(db.execute("SELECT conclusion, count(*) FROM ci_runs GROUP BY ALL").fetchall())
    expected: dict[str, int] = {}
    for r in rows:
        expected[r["result"]] = expected.get(r["result"], 0) + 1
    assert counts == expected
    shas = db.execute("SELECT count(DISTINCT sha) FROM ci_runs").fetchone()
    assert shas == (len({r["commit"] for r in rows}),)
