"""P3 on GitHub histories loaded from event streams: the reopen and cross-reference channels."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from agent_reflection.experiments.p3.analysis import completed_tasks, run_p3, signals
from agent_reflection.experiments.registration import apply_overrides, load_preregistration
from agent_reflection.experiments.report import would_change
from agent_reflection.experiments.results import read_results
from agent_reflection.load.board.loader import load_board
from agent_reflection.load.git.history import load_git_history
from agent_reflection.load.task_matcher import match_task_commits
from agent_reflection.store.db import connect
from test_p3 import first_close_and_reopens, git_repo

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
    # the mentioning records: problem reports filed after the close (#50 also for #5)
    for number in (50, 51, 52):
        issues.append({**_issue(number, None), "title": "Crash in the loader after the fix"})
        issues[-1]["created_at"] = "2024-02-04T00:00:00Z"
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
        *(  # every task has an event history (its assignment), so could show a reopen
            {"event": "assigned", "issue_number": n, "repo": "octo/hello", "created_at": at}
            for n in (*range(1, 7), *range(10, 14))
            for at in ["2024-01-02T00:00:00Z"]
        ),
    ]
    path = tmp_path / "timeline.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    load_board(db, tmp_path / "issues.json", "github")
    summary = load_board(db, path, "github")
    assert (summary.loaded, summary.rejected) == (15, 0)
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


def _event(kind: str, number: int, at: str, **extra: object) -> dict[str, object]:
    return {"event": kind, "issue_number": number, "repo": "octo/hello", "created_at": at, **extra}


def _history_board(tmp_path: Path, db: duckdb.DuckDBPyConnection, n: int) -> None:
    """n issues closed on Feb 1 with an event history (assigned), half reopened on Feb 10,
    and n pull requests with no history at all (the onnxruntime dump's shape)."""
    issues = [_issue(k, "2024-02-01T00:00:00Z") for k in range(1, n + 1)]
    issues += [_issue(k, "2024-02-01T00:00:00Z", pr=True) for k in range(1001, 1001 + n)]
    issues.append({**_issue(9999, None), "updated_at": "2024-06-01T00:00:00Z"})
    (tmp_path / "issues.json").write_text(json.dumps(issues))
    events = [_event("assigned", k, "2024-01-02T00:00:00Z") for k in range(1, n + 1)]
    events += [_event("reopened", k, "2024-02-10T00:00:00Z") for k in range(1, n // 2 + 1)]
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    load_board(db, tmp_path / "issues.json", "github")
    load_board(db, tmp_path / "events.jsonl", "github")


def test_one_commit_naming_one_task_does_not_make_a_source_observable(
    tmp_path: Path, db: duckdb.DuckDBPyConnection
) -> None:
    """The issue's attack: one commit "Fix #3" in a repository named like the GitHub project,
    loaded and matched, made the whole source carry the commits channel and P3 decided on
    every task. Per task, only #3 carries it."""
    _history_board(tmp_path, db, 20)
    prereg = load_preregistration(REPO / "preregistration.toml")
    before = run_p3(db, prereg)
    assert before.verdict == "insufficient-data" and before.details["observable"] == 0
    git_repo(tmp_path / "hello", [(datetime(2024, 2, 2, tzinfo=UTC), "Fix #3")])
    load_git_history(db, tmp_path / "hello")
    assert match_task_commits(db).load.loaded == 1
    after = run_p3(db, prereg)
    assert after.verdict == "insufficient-data"
    assert after.metric.name == "detectable_fraction_lower_bound"
    assert (after.details["observable"], after.details["not_observable"]) == (1, 39)
    (source,) = after.details["sources"]
    assert source["missing_channels"] == ["reopened", "commits"]
    # the pull requests have no history; every task but #3 has no linked commit
    assert source["lacking"] == {"reopened": 20, "commits": 39}
    channels = {c["channel"]: c for c in after.details["channels"]}
    assert (channels["commits"]["tasks"], channels["commits"]["eligible"]) == (1, 40)
    assert channels["commits"]["share"] == pytest.approx(1 / 40)
    assert (channels["reopened"]["tasks"], channels["reopened"]["share"]) == (20, 0.5)
    assert "1 eligible task(s) carry every required channel, 10 needed" in after.notes[0]
    # what does decide: enough tasks that carry every channel themselves
    work = [(datetime(2024, 1, 20, tzinfo=UTC), f"Add octo/hello#{k}") for k in range(1, 21)]
    load_git_history(db, git_repo(tmp_path / "work", work))
    assert match_task_commits(db).load.loaded == 20
    decided = run_p3(db, prereg)
    assert decided.details["observable"] == 20 and decided.n == 20
    assert decided.metric.name == "detectable_fraction"
    assert decided.details["detectable"] == 10 and decided.verdict == "continue"
    assert decided.details["excluded"] == 20  # the pull requests: not observable, counted
    assert any("20 eligible task(s) lacking a required channel" in n for n in decided.notes)


def test_an_accidental_close_is_no_completion_and_its_reopen_no_signal(
    tmp_path: Path, db: duckdb.DuckDBPyConnection
) -> None:
    minutes = load_preregistration(REPO / "preregistration.toml").p3.accidental_close_minutes
    assert minutes == 5
    issues = [_issue(k, "2024-03-01T00:00:00Z") for k in (1, 2, 3)]
    issues.append({**_issue(9999, None), "updated_at": "2024-08-01T00:00:00Z"})
    (tmp_path / "issues.json").write_text(json.dumps(issues))
    events = [
        # #1: closed by mistake, reopened 2 minutes later, closed for real on Feb 1 and
        # reopened on Feb 11: the completion is Feb 1, the signal 10 days after
        _event("closed", 1, "2024-01-10T10:00:00Z"),
        _event("reopened", 1, "2024-01-10T10:02:00Z"),
        _event("closed", 1, "2024-02-01T00:00:00Z"),
        _event("reopened", 1, "2024-02-11T00:00:00Z"),
        # #2: reopened 6 minutes after its close: past the registered minutes, a signal
        _event("closed", 2, "2024-01-10T10:00:00Z"),
        _event("reopened", 2, "2024-01-10T10:06:00Z"),
        # #3: reopened exactly 5 minutes after: accidental (the bound counts)
        _event("closed", 3, "2024-01-10T10:00:00Z"),
        _event("reopened", 3, "2024-01-10T10:05:00Z"),
    ]
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    load_board(db, tmp_path / "issues.json", "github")
    load_board(db, tmp_path / "events.jsonl", "github")
    p3 = load_preregistration(REPO / "preregistration.toml").p3
    sig = signals(db, p3)
    reopens = sig[sig["kind"] == "reopened"].sort_values("task_ref")
    assert list(zip(reopens["task_ref"], reopens["at"].astype(str), strict=True)) == [
        ("octo/hello#1", "2024-02-11 00:00:00+00:00"),
        ("octo/hello#2", "2024-01-10 10:06:00+00:00"),
    ]
    done = completed_tasks(db, p3).set_index("task_ref")["completed_at"].astype(str)
    assert done.to_dict() == {
        "octo/hello#1": "2024-02-01 00:00:00+00:00",
        "octo/hello#2": "2024-01-10 10:00:00+00:00",
        "octo/hello#3": "2024-03-01 00:00:00+00:00",  # closed_at: its only real close
    }
    prereg = apply_overrides(
        load_preregistration(REPO / "preregistration.toml"),
        {"p3.min_tasks": 1, "p3.required_channels": []},
    )
    days = {t["task_ref"]: t["days_to_signal"] for t in run_p3(db, prereg).details["tasks"]}
    assert days == {
        "octo/hello#1": 10.0,
        "octo/hello#2": pytest.approx(6 / 1440),
        "octo/hello#3": None,
    }
    # registered as 0, every quick reopen is a signal again
    none = apply_overrides(prereg, {"p3.accidental_close_minutes": 0})
    assert set(signals(db, none.p3).query("kind == 'reopened'")["task_ref"]) == {
        "octo/hello#1",
        "octo/hello#2",
        "octo/hello#3",
    }


def test_a_cross_reference_counts_only_from_a_problem_report_filed_after_the_close(
    tmp_path: Path, db: duckdb.DuckDBPyConnection
) -> None:
    issues = [_issue(k, "2024-02-01T00:00:00Z") for k in range(1, 7)]
    reports = {
        50: ("Segmentation fault when loading a model", "2024-02-05T00:00:00Z"),  # counts
        51: ("[Feature Request] load models lazily", "2024-02-05T00:00:00Z"),  # no problem
        52: ("Crash on start", "2024-01-20T00:00:00Z"),  # filed before #3 was closed
        53: ("Wrong results on GPU", "2024-02-06T00:00:00Z"),  # counts through its title
    }
    for number, (title, created) in reports.items():
        issues.append({**_issue(number, None), "title": title, "created_at": created})
    # a neutral title, but labelled as a bug
    issues.append({**_issue(54, None), "title": "Loader and #6", "labels": [{"name": "bug"}]})
    issues[-1]["created_at"] = "2024-02-06T00:00:00Z"
    issues.append({**_issue(9999, None), "updated_at": "2024-06-01T00:00:00Z"})
    (tmp_path / "issues.json").write_text(json.dumps(issues))
    events = [
        _crossref(1, "2024-02-05T00:00:00Z", 50, False),
        _crossref(2, "2024-02-05T00:00:00Z", 51, False),
        _crossref(3, "2024-02-05T00:00:00Z", 52, False),
        _crossref(4, "2024-02-05T00:00:00Z", 777, False),  # an issue outside the data
        _crossref(5, "2024-02-07T00:00:00Z", 53, False),
        _crossref(6, "2024-02-07T00:00:00Z", 54, False),
    ]
    (tmp_path / "timeline.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    load_board(db, tmp_path / "issues.json", "github")
    load_board(db, tmp_path / "timeline.jsonl", "github")
    prereg = apply_overrides(
        load_preregistration(REPO / "preregistration.toml"),
        {"p3.min_tasks": 1, "p3.required_channels": []},
    )
    result = run_p3(db, prereg)
    first = {t["task_ref"]: t["first_signal_kind"] for t in result.details["tasks"]}
    assert first == {
        "octo/hello#1": "cross-reference",
        "octo/hello#2": None,
        "octo/hello#3": None,
        "octo/hello#4": None,
        "octo/hello#5": "cross-reference",
        "octo/hello#6": "cross-reference",
    }
    sig = signals(db, prereg.p3)
    assert set(sig.loc[sig["kind"] == "cross-reference", "polarity"]) == {"negative"}
    # the rule is the registered pattern: one that matches nothing leaves no cross-reference
    nothing = apply_overrides(prereg, {"p3.cross_reference_problem_pattern": "^never$"})
    assert run_p3(db, nothing).details["detectable"] == 0


def _jsonl(path: Path) -> pd.DataFrame:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return pd.DataFrame([json.loads(line) for line in fh])


def _reflect(db: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "agent_reflection", *args, "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        env={**os.environ, "CI": "1"},
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def onnx_db(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The onnxruntime REST dump loaded through the real CLI, once per module (tests copy it)."""
    folder = shared_dir / ONNX
    if not folder.is_dir():
        pytest.skip(f"{folder} not present")
    db = tmp_path_factory.mktemp("onnx") / "onnx.duckdb"
    for name in ("issues", "issue_events", "issue_timeline", "pulls"):
        path = str(folder / f"{name}.jsonl.gz")
        _reflect(db, "load", "board", path, "--format", "github", "--silent", "--no-match")
    return db


@pytest.mark.shared
@pytest.mark.slow(reason="the onnxruntime dump loaded (once a module), P3 on it, a recount")
def test_reflect_run_p3_on_the_onnxruntime_rest_dump(
    shared_dir: Path, onnx_db: Path, tmp_path: Path
) -> None:
    """Run through the real CLI; the issue fraction checked by an independent count over the
    raw files (the mentioning issues' titles and dates from the timeline's own source_*
    fields, not from the loaded tasks)."""
    folder = shared_dir / ONNX
    db = tmp_path / "onnx.duckdb"
    shutil.copy(onnx_db, db)
    out = _reflect(db, "run", "p3", "--out", str(tmp_path / "reports"), "--run-id", "r")
    assert out.startswith("p3: insufficient-data")  # no git history: the commits channel
    assert "would change the verdict: data on the missing required channel(s) commits" in out
    doc = read_results(tmp_path / "reports/r/p3/results.json")
    channels = {c["channel"]: c for c in doc["details"]["channels"]}
    assert channels["reopened"]["carries"] and channels["cross-reference"]["carries"]
    (source,) = doc["details"]["sources"]
    # every eligible task lacks a linked commit; the pull requests (no events fetched) and the
    # issues whose history is only their close lack an event history
    assert source["missing_channels"] == ["reopened", "commits"]
    assert source["lacking"]["commits"] == source["eligible"] == source["not_observable"]
    assert doc["details"]["observable"] == 0

    # independent count over the issues: first completion = the earlier of the first `closed`
    # event and closed_at, neither undone by a reopen within the registered minutes; as_of =
    # the latest timestamp of the export's own records; detectable = a reopen (not undoing an
    # accidental close), or a mention from a problem report in the dump filed after the
    # completion, 0..30 days after completion
    p3 = load_preregistration(REPO / "preregistration.toml").p3
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
    both = both.drop_duplicates(["issue_number", "at", "event"])
    done, reopens = first_close_and_reopens(both, issues, minutes=p3.accidental_close_minutes)
    eligible = done[(as_of - done).dt.total_seconds() >= 30 * 86400]
    mentions = timeline[
        (timeline["event"] == "cross-referenced")
        & (timeline["source_is_pull_request"] == False)  # noqa: E712
        & (timeline["source_repo"] == "microsoft/onnxruntime")
        & timeline["source_number"].isin(set(issues["number"]))
    ].copy()
    labels = issues.set_index("number")["labels"].map(
        lambda ls: " ".join(x["name"] if isinstance(x, dict) else str(x) for x in ls or [])
    )
    text = mentions["source_title"].fillna("") + " " + mentions["source_number"].map(labels)
    problem = re.compile(p3.cross_reference_problem_pattern, re.IGNORECASE)
    mentions = mentions[text.map(lambda t: problem.search(t) is not None)]
    mentions["at"] = pd.to_datetime(mentions["created_at"], utc=True)
    mentions["filed"] = pd.to_datetime(mentions["source_created_at"], utc=True)
    mentions = mentions.merge(eligible.rename("done"), left_on="issue_number", right_index=True)
    mentions = mentions[mentions["filed"] >= mentions["done"]]
    signal = pd.concat(
        [
            reopens.merge(eligible.rename("done"), left_on="issue_number", right_index=True),
            mentions[["issue_number", "at", "done"]],
        ]
    )
    days = (signal["at"] - signal["done"]).dt.total_seconds() / 86400
    detectable = signal.loc[(days >= 0) & (days <= 30), "issue_number"].nunique()
    by_category = {c["category"]: c for c in doc["details"]["by_category"]}
    assert (by_category["issue"]["n"], by_category["issue"]["detectable"]) == (
        len(eligible),
        detectable,
    )
    assert 0 < by_category["issue"]["ci_low"] < by_category["issue"]["fraction"]
    assert by_category["pull_request"]["detectable"] == 0


@pytest.mark.shared
@pytest.mark.slow(reason="P3 twice on the onnxruntime dump, a git load and a match between")
def test_one_added_commit_does_not_flip_p3_on_the_onnxruntime_dump(
    onnx_db: Path, tmp_path: Path
) -> None:
    """The issue's attack, through the real CLI: a repository named like the dump with one
    commit "Fix #6302", `load git` and `load match`. It used to make the whole source carry
    the commits channel and turn insufficient-data into kill on 13,892 tasks."""
    db = tmp_path / "onnx.duckdb"
    shutil.copy(onnx_db, db)
    before = _reflect(db, "run", "p3", "--out", str(tmp_path / "reports"), "--run-id", "a")
    assert before.startswith("p3: insufficient-data")
    # dated today: a linked commit used to extend the dump's follow-up to its date too
    today = datetime.now(UTC).replace(microsecond=0)
    repo = git_repo(tmp_path / "onnxruntime", [(today, "Fix #6302")])
    _reflect(db, "load", "git", str(repo))
    assert "github-ref 1" in _reflect(db, "load", "match")
    after = _reflect(db, "run", "p3", "--out", str(tmp_path / "reports"), "--run-id", "b")
    assert after.startswith("p3: insufficient-data"), after
    doc = read_results(tmp_path / "reports/b/p3/results.json")
    unchanged = read_results(tmp_path / "reports/a/p3/results.json")
    assert doc["metric"]["name"] == "detectable_fraction_lower_bound"
    # the board's own horizon: the same tasks censored, the same lower bound
    assert (doc["n"], doc["details"]["censored"]) == (
        unchanged["n"],
        unchanged["details"]["censored"],
    )
    assert doc["metric"]["value"] == unchanged["metric"]["value"]
    assert doc["details"]["observable"] <= 1  # #6302, if it is eligible at all
    assert doc["details"]["not_observable"] == doc["n"] - doc["details"]["observable"]
    channels = {c["channel"]: c for c in doc["details"]["channels"]}
    assert channels["commits"]["carries"] is True  # the source holds one: not enough
    assert channels["commits"]["tasks"] <= 1
