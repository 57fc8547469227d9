"""P3 on GitHub histories loaded from event streams: the reopen and cross-reference channels."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from agent_reflection.experiments.p3.analysis import run_p3
from agent_reflection.experiments.registration import apply_overrides, load_preregistration
from agent_reflection.experiments.report import would_change
from agent_reflection.experiments.results import read_results
from agent_reflection.load.board.loader import load_board
from agent_reflection.store.db import connect

REPO = Path(__file__).resolve().parents[1]
ONNX = "data/github/onnxruntime-issue-events"


@pytest.fixture
def db(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    con = connect(tmp_path / "p3.duckdb")
    yield con
    con.close()


def _issue(number: int, closed: str | None, pr: bool = False) -> dict[str, object]:
    kind = "pull" if pr else "issues"
    return {
        "number": number,
        "title": f"#{number}",
        "state": "closed" if closed else "open",
        "created_at": "2024-01-01T00:00:00Z",
        "closed_at": closed,
        "html_url": f"https://github.com/octo/hello/{kind}/{number}",
    }


def _crossref(issue: int, at: str, source: int, source_is_pr: bool) -> dict[str, object]:
    # the flattened shape of the onnxruntime dump
    return {
        "event": "cross-referenced",
        "issue_number": issue,
        "repo": "octo/hello",
        "created_at": at,
        "actor_login": "x",
        "source_repo": "octo/hello",
        "source_number": source,
        "source_is_pull_request": source_is_pr,
    }


def test_reopen_and_cross_reference_channels(tmp_path: Path, db: duckdb.DuckDBPyConnection) -> None:
    issues = [_issue(n, "2024-02-01T00:00:00Z") for n in range(1, 7)]
    issues += [_issue(n, "2024-02-01T00:00:00Z", pr=True) for n in range(10, 14)]
    issues.append(_issue(99, None))  # keeps the export going: as_of 2024-06-01
    issues[-1]["updated_at"] = "2024-06-01T00:00:00Z"
    (tmp_path / "issues.json").write_text(json.dumps(issues))
    events = [
        {
            "event": "reopened",
            "issue_number": 1,
            "repo": "octo/hello",
            "created_at": "2024-02-10T00:00:00Z",
        },
        {
            "event": "reopened",
            "issue_number": 2,
            "repo": "octo/hello",
            "created_at": "2024-03-10T00:00:00Z",
        },  # 38 days after: outside the window
        _crossref(3, "2024-02-05T00:00:00Z", 50, False),  # a later issue points back: counts
        _crossref(4, "2024-02-05T00:00:00Z", 51, True),  # a pull request: does not count
        _crossref(5, "2024-01-15T00:00:00Z", 52, False),  # before completion: does not count
    ]
    path = tmp_path / "timeline.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    load_board(db, tmp_path / "issues.json", "github")
    summary = load_board(db, path, "github")
    assert (summary.loaded, summary.rejected) == (5, 0)
    prereg = apply_overrides(
        load_preregistration(REPO / "preregistration.toml"), {"p3.min_tasks": 1}
    )
    result = run_p3(db, prereg)
    channels = {c["channel"]: c for c in result.details["channels"]}
    assert channels["reopened"]["records"] == 2 and channels["reopened"]["carries"]
    assert channels["cross-reference"]["records"] == 2  # the two mentions from issues
    assert channels["cross-reference"]["can_carry"] is True
    assert channels["cross-reference"]["required"] is False
    tasks = {t["task_ref"]: t["first_signal_kind"] for t in result.details["tasks"]}
    assert tasks == {
        "octo/hello#1": "reopened",
        "octo/hello#2": None,
        "octo/hello#3": "cross-reference",
        "octo/hello#4": None,
        "octo/hello#5": None,
        "octo/hello#6": None,
        "octo/hello#10": None,
        "octo/hello#11": None,
        "octo/hello#12": None,
        "octo/hello#13": None,
    }
    by_kind = {k["kind"]: k["tasks"] for k in result.details["by_kind"]}
    assert (by_kind["reopened"], by_kind["cross-reference"]) == (1, 1)
    # the pull requests show nothing at all: said, with the issues' own fraction
    assert any(
        "no pull_request (4 eligible) task shows any signal, while issue: 2/6 = 33.3%" in n
        for n in result.notes
    ), result.notes
    # no git history: a lower bound, and the summary says what data would change that
    doc = read_results(result.write_json(tmp_path / "results.json"))
    assert doc["details"]["lower_bound"] is True
    assert would_change(doc).startswith("data on the missing required channel(s) commits (")
    # switched off, the cross-reference is no signal
    off = run_p3(db, apply_overrides(prereg, {"p3.cross_reference_kinds": []}))
    assert {k["kind"]: k["tasks"] for k in off.details["by_kind"]}["cross-reference"] == 0


def _jsonl(path: Path) -> pd.DataFrame:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return pd.DataFrame([json.loads(line) for line in fh])


@pytest.mark.shared
@pytest.mark.slow
def test_reflect_run_p3_on_the_onnxruntime_rest_dump(shared_dir: Path, tmp_path: Path) -> None:
    """Loaded and run through the real CLI; the issue fraction checked by an independent
    count over the raw files."""
    folder = shared_dir / ONNX
    if not folder.is_dir():
        pytest.skip(f"{folder} not present")
    db, env = tmp_path / "onnx.duckdb", {**os.environ, "CI": "1"}

    def reflect(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "agent_reflection", *args, "--db", str(db)],
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
            env=env,
            cwd=REPO,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    for name in ("issues", "issue_events", "issue_timeline", "pulls"):
        reflect(
            "load",
            "board",
            str(folder / f"{name}.jsonl.gz"),
            "--format",
            "github",
            "--silent",
            "--no-match",
        )
    out = reflect("run", "p3", "--out", str(tmp_path / "reports"), "--run-id", "r")
    assert out.startswith("p3: insufficient-data")  # no git history: the commits channel
    assert "would change the verdict: data on the missing required channel(s) commits" in out
    doc = read_results(tmp_path / "reports/r/p3/results.json")
    channels = {c["channel"]: c for c in doc["details"]["channels"]}
    assert channels["reopened"]["carries"] and channels["cross-reference"]["carries"]
    assert doc["details"]["sources"][0]["missing_channels"] == ["commits"]

    # independent count over the issues: first completion = the earlier of the first `closed`
    # event and closed_at; as_of = the latest timestamp of the export's own records;
    # detectable = a reopen, or a mention from an issue, 0..30 days after completion
    issues = _jsonl(folder / "issues.jsonl.gz")
    events = _jsonl(folder / "issue_events.jsonl.gz")
    timeline = _jsonl(folder / "issue_timeline.jsonl.gz")
    pulls = _jsonl(folder / "pulls.jsonl.gz")
    stamps = [
        pd.to_datetime(frame[c], utc=True).max()
        for frame, cols in (
            (issues, ("created_at", "updated_at", "closed_at", "pr_merged_at")),
            (events, ("created_at",)),
            (timeline, ("created_at",)),
            (pulls, ("created_at", "closed_at", "merged_at")),
        )
        for c in cols
    ]
    as_of = max(stamps)
    both = pd.concat([events, timeline])
    both["at"] = pd.to_datetime(both["created_at"], utc=True)
    own = issues[~issues["is_pull_request"]].set_index("number")
    first_close = both[both["event"] == "closed"].groupby("issue_number")["at"].min()
    done = pd.concat([first_close, pd.to_datetime(own["closed_at"], utc=True)], axis=1).min(axis=1)
    done = done[done.index.isin(own.index)].dropna()
    eligible = done[(as_of - done).dt.total_seconds() >= 30 * 86400]
    signal = both[
        (both["event"] == "reopened")
        | ((both["event"] == "cross-referenced") & (both["source_is_pull_request"] == False))  # noqa: E712
    ].merge(eligible.rename("done"), left_on="issue_number", right_index=True)
    days = (signal["at"] - signal["done"]).dt.total_seconds() / 86400
    detectable = signal.loc[(days >= 0) & (days <= 30), "issue_number"].nunique()
    by_category = {c["category"]: c for c in doc["details"]["by_category"]}
    assert (by_category["issue"]["n"], by_category["issue"]["detectable"]) == (
        len(eligible),
        detectable,
    )
    assert 0 < by_category["issue"]["ci_low"] < by_category["issue"]["fraction"]
    assert by_category["pull_request"]["detectable"] == 0
