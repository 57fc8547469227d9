"""P2's CI bucket from CI results (``reflect load ci`` -> ci_runs) and without them.

A real git history (loaded with ``reflect load git --szz`` in a subprocess) of four
feature -> fix pairs; CI results for some of their commits in the GitHub REST shape.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent_reflection.experiments.p2.analysis import run_p2
from agent_reflection.experiments.registration import apply_overrides, load_preregistration
from agent_reflection.load.ci import load_ci
from agent_reflection.store.db import connect
from conftest import run_git

REPO_ROOT = Path(__file__).resolve().parents[1]


def _commit(repo: Path, day: int, message: str, path: str, text: str) -> str:
    file = repo / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text)
    run_git(repo, "add", path)
    stamp = f"2024-03-{day:02d}T12:00:00+00:00"
    run_git(
        repo,
        "commit",
        "-q",
        "-m",
        message,
        env={"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp},
    )
    return run_git(repo, "rev-parse", "HEAD").strip()


def _code(name: str, value: int) -> str:
    body = f"    total = 0\n    for r in rows:\n        total += r * {value}\n    return total\n"
    return f"def {name}(rows):\n{body}"


@pytest.fixture
def history(git_repo: Path, tmp_path: Path) -> dict[str, str]:
    shas: dict[str, str] = {}
    day = 2
    for pair, fix_message in (
        ("a", "fix: wrong totals in a"),
        ("b", "fix: wrong totals in b"),
        ("c", "fix failing tests in c"),
        ("d", "fix failing build in d"),
    ):
        shas[f"feat_{pair}"] = _commit(
            git_repo, day, f"Add totals {pair}", f"src/{pair}.py", _code(pair, 1)
        )
        if pair == "b":  # a commit between the feature and its fix: the fix's parent
            shas["between_b"] = _commit(git_repo, day, "Add helper", "src/helper.py", "X = 1\n")
        shas[f"fix_{pair}"] = _commit(
            git_repo, day + 1, fix_message, f"src/{pair}.py", _code(pair, 2)
        )
        day += 3
    db_path = tmp_path / "p2.duckdb"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "agent_reflection",
            "load",
            "git",
            str(git_repo),
            "--szz",
            "--db",
            str(db_path),
            "--silent",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    shas["db"] = str(db_path)
    return shas


def _job(job_id: int, sha: str, conclusion: str) -> dict[str, object]:
    return {
        "id": job_id,
        "run_id": 900 + job_id,
        "head_sha": sha,
        "name": "test",
        "status": "completed",
        "conclusion": conclusion,
        "started_at": "2024-03-01T00:00:00Z",
        "completed_at": "2024-03-01T00:10:00Z",
        "url": f"https://api.github.com/repos/octo/repo/actions/jobs/{job_id}",
    }


def _signals(result: object) -> dict[str, dict[str, object]]:
    return {s["fixing_sha"]: s for s in result.details["signals"]}  # type: ignore[attr-defined]


def test_without_ci_results_the_bucket_is_inferred(history: dict[str, str]) -> None:
    con = connect(history["db"])
    try:
        result = run_p2(con, load_preregistration(REPO_ROOT / "preregistration.toml"), labels=[])
    finally:
        con.close()
    signals = _signals(result)
    assert {signals[history[f"fix_{p}"]]["ci_evidence"] for p in "abcd"} == {"inferred"}
    assert result.details["ci_bucket_source"] == "inferred"
    assert any("no CI results are loaded" in n for n in result.notes)
    # the words of fixes c and d name a failing check: inferred CI
    assert signals[history["fix_c"]]["rule"] == "ci-names-failing-check"
    assert signals[history["fix_a"]]["bucket"] == "only-self-reflection"


def test_ci_results_decide_where_present(history: dict[str, str], tmp_path: Path) -> None:
    jobs = {
        "total_count": 5,
        "jobs": [
            _job(1, history["feat_a"], "failure"),  # CI failed on the introducing commit
            _job(2, history["between_b"], "failure"),  # ... on the fix's parent
            _job(3, history["feat_b"], "success"),
            _job(4, history["feat_c"], "success"),  # CI ran on c's change and passed
            _job(5, history["feat_c"], "cancelled"),  # cancelled is no failure
        ],
    }
    path = tmp_path / "jobs.json"
    path.write_text(json.dumps(jobs))
    con = connect(history["db"])
    try:
        assert load_ci(con, path).loaded == 5
        prereg = load_preregistration(REPO_ROOT / "preregistration.toml")
        result = run_p2(con, prereg, labels=[])
        off = run_p2(con, apply_overrides(prereg, {"p2.ci_failed_conclusions": []}), labels=[])
    finally:
        con.close()
    signals = _signals(result)
    a, b, c, d = (signals[history[f"fix_{p}"]] for p in "abcd")
    assert (a["bucket"], a["rule"], a["ci_evidence"]) == (
        "ci",
        "ci-reported-failure",
        "ci_runs-failed",
    )
    assert "the introducing commit" in str(a["why"])
    assert (b["bucket"], b["rule"]) == ("ci", "ci-reported-failure")
    assert "the fix's parent" in str(b["why"])
    # CI passed on c's change: its words ("fix failing tests") no longer infer CI
    assert (c["ci_evidence"], c["bucket"]) == ("ci_runs-passed", "only-self-reflection")
    assert "CI ran and did not catch it" in str(c["why"])
    # no CI result on d's commits: inferred as before
    assert (d["ci_evidence"], d["rule"]) == ("inferred", "ci-names-failing-check")
    assert result.details["ci_bucket_source"] == "mixed"
    assert result.details["ci_evidence"] == {
        "ci_runs-failed": 2,
        "ci_runs-passed": 1,
        "inferred": 1,
    }
    assert any("CI results (ci_runs) for 3 of 4" in n for n in result.notes)
    # ci_failed_conclusions = [] switches the data off: everything inferred again
    assert off.details["ci_bucket_source"] == "inferred"
    assert _signals(off)[history["fix_c"]]["rule"] == "ci-names-failing-check"
