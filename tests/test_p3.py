"""P3: detectability, the harness boundary cases, channels before verdicts, per-source as_of,
link direction, first completion, signal kinds, censoring."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import tomllib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pytest
from scipy.stats import binomtest

from agent_reflection.experiments.p3.analysis import run_p3, signals
from agent_reflection.experiments.registration import (
    InvalidPreregistration,
    Preregistration,
    apply_overrides,
    load_preregistration,
    parse_preregistration,
)
from agent_reflection.experiments.results import read_results
from agent_reflection.experiments.verdict import decide
from agent_reflection.load.board.channels import CAN_CARRY, CHANNELS, capability
from agent_reflection.load.board.loader import FORMATS, load_board
from agent_reflection.load.board.model import ParseOptions
from agent_reflection.load.git.history import load_git_history
from agent_reflection.load.task_matcher import match_task_commits
from agent_reflection.stats.interval import Interval
from agent_reflection.store.db import connect
from sim_rows import insert_commit, insert_event, insert_link, insert_task, insert_task_commit

T0 = datetime(2024, 1, 1, tzinfo=UTC)
AS_OF = T0 + timedelta(days=400)
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def prereg() -> Preregistration:
    return apply_overrides(load_preregistration(), {"p3.as_of": AS_OF.isoformat()})


def board(
    n_tasks: int, reopened_after_days: list[float], *, linked_commit: bool = True
) -> duckdb.DuckDBPyConnection:
    """n completed tasks; the first len(reopened_after_days) get a reopen after that delay.

    Every task has an event history (assigned when created) and, with ``linked_commit``, a
    commit linked to it (never reverted or fixed), so each task carries the reopened and
    commits channels without adding a signal."""
    con = connect(":memory:")
    for i in range(n_tasks):
        insert_task(con, f"T-{i}", created_at=T0, completed_at=T0 + timedelta(days=1))
        insert_event(con, f"T-{i}", T0, "assigned")
        if linked_commit:
            sha = f"{i:040x}"
            insert_commit(con, "r", sha, T0, f"feat: the work of T-{i}", files=[f"src/{i}.py"])
            insert_task_commit(con, f"T-{i}", "r", sha)
    for i, days in enumerate(reopened_after_days):
        insert_event(con, f"T-{i}", T0 + timedelta(days=1 + days), "reopened")
    return con


@pytest.mark.spec
@pytest.mark.parametrize(
    ("n", "delays", "fraction", "verdict"),
    [
        # below 20%, but the interval still allows 20%: a point estimate alone never kills
        pytest.param(20, [3] * 3, 0.15, "inconclusive", id="P3.1-below-20pct-inconclusive"),
        pytest.param(20, [3] * 4, 0.2, "continue", id="P3.2-exactly-20pct"),
        pytest.param(10, [30, 30], 0.2, "continue", id="P3.3-day-30-counts"),
        pytest.param(10, [31, 31], 0.0, "inconclusive", id="P3.4-day-31-does-not"),
        pytest.param(10, [30, 31], 0.1, "inconclusive", id="P3.5-day-30-vs-31"),
        # the interval's upper bound is below 20%: the data rule out a useful fraction
        pytest.param(60, [3], 1 / 60, "kill", id="P3.6-upper-bound-below-20pct"),
    ],
)
def test_harness_cases(
    prereg: Preregistration,
    n: int,
    delays: list[float],
    fraction: float,
    verdict: str,
    tmp_path: Path,
) -> None:
    result = run_p3(board(n, delays), prereg)
    assert result.metric.interval.value == pytest.approx(fraction)
    assert result.verdict == verdict
    m = result.metric.interval
    assert m is not None and m.ci_low is not None and m.ci_high is not None
    expected = decide(Interval(fraction, m.ci_low, m.ci_high), null_value=0.0, smallest_useful=0.2)
    assert expected.verdict == verdict
    assert (verdict == "kill") == (m.ci_high < 0.2)
    assert any("caveat notes only" in note for note in result.notes) == (verdict == "kill")
    assert "upper bound" in result.kill_condition
    doc = read_results(result.write_json(tmp_path / "results.json"))
    assert doc["details"]["detectable"] == round(fraction * n)
    assert doc["details"]["lower_bound"] is False


def test_wilson_ci_and_breakdowns(prereg: Preregistration) -> None:
    con = board(10, [2, 5])
    insert_task(con, "OTHER-1", created_at=T0, completed_at=T0 + timedelta(days=1), project="X")
    insert_event(con, "OTHER-1", T0 + timedelta(days=4), "status_changed", "Done -> Verified")
    insert_commit(con, "r", "f" * 40, T0, "feat: other", files=["src/other.py"])
    insert_task_commit(con, "OTHER-1", "r", "f" * 40)
    result = run_p3(con, prereg)
    assert result.n == 11 and result.details["detectable"] == 3
    ci = binomtest(3, 11).proportion_ci(method="wilson")
    assert (result.metric.interval.ci_low, result.metric.interval.ci_high) == pytest.approx(
        (ci.low, ci.high)
    )
    kinds = {k["kind"]: k["tasks"] for k in result.details["by_kind"]}
    assert kinds["reopened"] == 2 and kinds["verified"] == 1
    projects = {p["project"]: (p["n"], p["detectable"]) for p in result.details["by_project"]}
    assert projects == {"DEMO": (10, 2), "X": (1, 1)}
    assert sorted(result.details["time_to_signal_days"]) == [2.0, 3.0, 5.0]


def test_right_censored_tasks_are_excluded_and_counted(prereg: Preregistration) -> None:
    con = board(10, [1])
    insert_task(
        con, "NEW", created_at=AS_OF - timedelta(days=40), completed_at=AS_OF - timedelta(days=29)
    )
    insert_event(con, "NEW", AS_OF - timedelta(days=28), "reopened")
    insert_task(con, "OPEN", created_at=T0)  # never completed: not in P3 at all
    result = run_p3(con, prereg)
    assert result.details["censored"] == 1 and result.n == 10
    assert result.details["completed"] == 11
    assert any("right-censored" in n for n in result.notes)


def test_insufficient_data(prereg: Preregistration) -> None:
    result = run_p3(board(9, [1, 1, 1]), prereg)
    assert result.verdict == "insufficient-data"
    assert any("10 needed" in n for n in result.notes)
    empty = run_p3(connect(":memory:"), prereg)
    assert empty.verdict == "insufficient-data" and empty.metric.interval is None


# -- channels before verdicts ---------------------------------------------------------------


def test_a_missing_required_channel_gives_insufficient_data_and_a_lower_bound(
    prereg: Preregistration,
) -> None:
    # half the tasks reopened, but no commit is linked to any task: the commits channel is
    # absent, so 50% is only a lower bound and there is no verdict
    result = run_p3(board(20, [3] * 10, linked_commit=False), prereg)
    assert result.verdict == "insufficient-data"
    assert result.metric.name == "detectable_fraction_lower_bound"
    assert result.metric.interval.value == pytest.approx(0.5) and result.n == 20
    assert result.details["lower_bound"] is True
    (source,) = result.details["sources"]
    assert source["missing_channels"] == ["commits"] and source["lower_bound"] is True
    assert result.details["reason"].startswith(
        "insufficient-data: 0 eligible task(s) carry every required channel, 10 needed; "
        "required channel(s) missing: simulated-board.jsonl (jsonl) lacks commits (commits: "
        "20 lack it, of 20 eligible). The measured 10/20 = 50.0% detectable is only a LOWER BOUND"
    )
    assert result.notes[0] == result.details["reason"]
    assert "LOWER BOUND" in result.notes[0] and "could only raise it" in result.notes[0]
    rows = {c["channel"]: c for c in result.details["channels"]}
    assert set(rows) == set(CHANNELS)
    assert rows["reopened"]["records"] == 10 and rows["reopened"]["carries"] is True
    assert rows["commits"]["records"] == 0 and rows["commits"]["carries"] is False
    assert rows["commits"]["required"] is True and rows["verified"]["required"] is False
    # the same board with the channel present gets a verdict
    assert run_p3(board(20, [3] * 10), prereg).verdict == "continue"


def test_no_reopen_events_names_the_reopened_channel(prereg: Preregistration) -> None:
    result = run_p3(board(30, []), prereg)
    assert result.verdict == "insufficient-data"
    assert result.details["sources"][0]["missing_channels"] == ["reopened"]
    assert "could only raise it" not in result.notes[0]  # 0% reaches nothing


def test_a_complete_source_decides_and_a_lacking_one_is_listed(
    prereg: Preregistration, tmp_path: Path
) -> None:
    con = board(20, [3] * 4)  # complete: 4/20 detectable
    jira = tmp_path / "jira.csv"
    write_jira_csv(jira, [jira_row(f"KAF-{i}", T0, T0 + timedelta(days=2)) for i in range(15)])
    load_board(con, jira, "jira")
    result = run_p3(con, prereg)
    assert result.verdict == "continue" and result.n == 20
    assert result.details["excluded"] == 15
    by_origin = {s["origin"]: s for s in result.details["sources"]}
    assert by_origin["jira.csv"]["missing_channels"] == ["reopened", "commits"]
    assert by_origin["jira.csv"]["eligible"] == 15 and by_origin["jira.csv"]["complete"] is False
    assert by_origin["simulated-board.jsonl"]["complete"] is True
    assert any(
        "jira.csv (jira) lacks required channel(s) reopened, commits" in n for n in result.notes
    )
    jira_rows = [c for c in result.details["channels"] if c["origin"] == "jira.csv"]
    assert {c["channel"]: c["can_carry"] for c in jira_rows} == {
        **dict.fromkeys(CHANNELS, True),
        "cross-reference": False,
    }


def test_capability_table_covers_every_format_and_channel() -> None:
    assert set(CAN_CARRY) == set(FORMATS)
    for fmt in FORMATS:
        assert set(CAN_CARRY[fmt]) == set(CHANNELS)
    cap = capability("github", "regression-link")
    assert cap is not None and cap.can_carry is False
    csv_reopen = capability("csv", "reopened")
    assert csv_reopen is not None and csv_reopen.can_carry is False
    assert capability("some-new-format", "reopened") is None
    with pytest.raises(ValueError, match="unknown channel"):
        capability("jira", "vibes")


def test_a_format_that_cannot_carry_a_channel_says_so(
    prereg: Preregistration, tmp_path: Path
) -> None:
    path = tmp_path / "tasks.csv"
    rows = [f"C-{i},{T0.isoformat()},{(T0 + timedelta(days=1)).isoformat()}" for i in range(12)]
    path.write_text("task_ref,created_at,completed_at\n" + "\n".join(rows) + "\n")
    con = connect(":memory:")
    load_board(con, path, "csv")
    result = run_p3(con, prereg)
    rows_by_channel = {c["channel"]: c for c in result.details["channels"]}
    assert rows_by_channel["reopened"]["can_carry"] is False
    assert "no event history" in rows_by_channel["reopened"]["how"]
    assert result.verdict == "insufficient-data"


# -- per-source as_of -----------------------------------------------------------------------


def jira_row(key: str, created: datetime, resolved: datetime, **links: str) -> dict[str, str]:
    return {
        "Key": key,
        "Status": "Resolved",
        "CreationDate": created.isoformat(),
        "ResolutionDate": resolved.isoformat(),
        "InwardIssueLinks": links.get("inward", ""),
        "OutwardIssueLinks": links.get("outward", ""),
    }


def write_jira_csv(path: Path, rows: list[dict[str, str]]) -> None:
    header = [
        "Key",
        "Status",
        "CreationDate",
        "ResolutionDate",
        "InwardIssueLinks",
        "OutwardIssueLinks",
    ]
    lines = [";".join(header), *(";".join(r[h] for h in header) for r in rows)]
    path.write_text("\n".join(lines) + "\n")


def git_repo(path: Path, commits: list[tuple[datetime, str]]) -> Path:
    """A real git repository with one commit per (committer time, message)."""
    path.mkdir()
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True, env=env)
    for i, (when, message) in enumerate(commits):
        (path / f"f{i}.txt").write_text(str(i))
        subprocess.run(["git", "-C", str(path), "add", "."], check=True, env=env)
        stamp = when.isoformat()
        subprocess.run(
            ["git", "-C", str(path), "commit", "-q", "-m", message],
            check=True,
            env={**env, "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp},
        )
    return path


def test_an_unrelated_git_history_does_not_move_a_boards_censoring(tmp_path: Path) -> None:
    prereg = load_preregistration()  # as_of = "data": per source
    assert prereg.p3.as_of == "data" and not prereg.exploratory
    last = T0 + timedelta(days=300)
    rows = [jira_row(f"KAF-{i}", T0, T0 + timedelta(days=1 + i)) for i in range(12)]
    rows.append(jira_row("KAF-100", last - timedelta(days=20), last - timedelta(days=10)))
    rows.append(jira_row("KAF-101", last - timedelta(days=5), last))  # the source's latest
    write_jira_csv(tmp_path / "kafka.csv", rows)
    con = connect(tmp_path / "db.duckdb")
    load_board(con, tmp_path / "kafka.csv", "jira")

    def censored() -> tuple[str, set[str]]:
        result = run_p3(con, prereg)
        eligible = {t["task_ref"] for t in result.details["tasks"]}
        (source,) = [s for s in result.details["sources"] if s["origin"] == "kafka.csv"]
        return source["as_of"], {f"KAF-{i}" for i in (*range(12), 100, 101)} - eligible

    before = censored()
    assert before == (last.isoformat(), {"KAF-100", "KAF-101"})
    # a git history two years later that names no KAF task: not this source's record
    later = last + timedelta(days=700)
    load_git_history(con, git_repo(tmp_path / "other", [(later, "feat: unrelated work")]))
    assert match_task_commits(con).load.loaded == 0
    assert censored() == before
    # nor does a commit naming a KAF task: the board could not show a reopen in the follow-up
    # it would add (one commit must not un-censor a whole source)
    load_git_history(
        con, git_repo(tmp_path / "kafka-git", [(last + timedelta(days=40), "KAF-3: follow-up fix")])
    )
    assert match_task_commits(con).load.loaded == 1
    assert censored() == before


def test_each_source_has_its_own_as_of(tmp_path: Path) -> None:
    prereg = load_preregistration()
    a_last, b_last = T0 + timedelta(days=100), T0 + timedelta(days=500)
    write_jira_csv(
        tmp_path / "a.csv",
        [jira_row("AA-1", T0, a_last - timedelta(days=10)), jira_row("AA-2", T0, a_last)],
    )
    write_jira_csv(tmp_path / "b.csv", [jira_row("BB-1", T0, b_last)])
    con = connect(":memory:")
    load_board(con, tmp_path / "a.csv", "jira")
    load_board(con, tmp_path / "b.csv", "jira")
    result = run_p3(con, prereg)
    assert result.details["as_of_by_source"] == {
        "a.csv": a_last.isoformat(),
        "b.csv": b_last.isoformat(),
    }
    assert result.details["as_of"] is None  # no single "now"
    # AA-1 has 10 days of follow-up in its own source, though b.csv runs 400 days longer
    assert result.details["censored"] == 3


# -- link direction, first completion, reopen by status ----------------------------------------


def test_link_direction_is_pre_registered(prereg: Preregistration, tmp_path: Path) -> None:
    done = T0 + timedelta(days=1)
    bug = done + timedelta(days=5)
    rows = [
        jira_row("K-1", T0, done, outward="Regression:K-10"),  # K-1 breaks K-10: against K-1
        jira_row("K-2", T0, done, inward="Regression:K-11"),  # K-2 is broken by K-11: not K-2
        jira_row("K-3", T0, done, outward="Problem/Incident:K-12"),  # K-3 causes K-12
        jira_row("K-4", T0, done, outward="Reference:K-13"),  # not a counted kind
        jira_row("K-5", T0, done, outward="Regression:ELSEWHERE-1"),  # target not in the data
        *(jira_row(f"K-{i}", bug, bug + timedelta(days=1)) for i in (10, 11, 12, 13)),
    ]
    write_jira_csv(tmp_path / "k.csv", rows)
    con = connect(":memory:")
    load_board(con, tmp_path / "k.csv", "jira")
    sig = signals(con, prereg.p3)
    links = sig[sig["kind"] == "regression-link"]
    assert sorted(links["task_ref"]) == ["K-1", "K-3", "K-5"]
    assert links.set_index("task_ref")["at"].isna().to_dict() == {
        "K-1": False,
        "K-3": False,
        "K-5": True,
    }
    result = run_p3(con, apply_overrides(prereg, {"p3.required_channels": []}))
    per_task = {t["task_ref"]: t["first_signal_kind"] for t in result.details["tasks"]}
    assert per_task["K-1"] == per_task["K-3"] == "regression-link"
    assert per_task["K-2"] is None and per_task["K-4"] is None and per_task["K-5"] is None
    assert any("1 signal(s) have no date" in n for n in result.notes)
    assert result.details["undated_signals"] == [
        {"task_ref": "K-5", "kind": "regression-link", "detail": "Regression (outward) ELSEWHERE-1"}
    ]
    # the other reading, pre-registered instead, flips which tasks count
    inward = apply_overrides(
        prereg, {"p3.regression_links": [{"kind": "^regression$", "direction": "inward"}]}
    )
    assert sorted(signals(con, inward.p3).query("kind == 'regression-link'")["task_ref"]) == ["K-2"]


def test_first_completion_and_reopen_by_status(prereg: Preregistration, tmp_path: Path) -> None:
    """An export's closed date is the LAST close: a reopen must be measured from the first."""

    def at(day: float) -> str:
        return (T0 + timedelta(days=day)).isoformat()

    issues = [
        {
            "number": 1,
            "html_url": "https://github.com/o/r/issues/1",
            "state": "closed",
            "created_at": at(0),
            "closed_at": at(20),
            "events": [
                {"event": "closed", "created_at": at(2)},
                {"event": "reopened", "created_at": at(6)},
                {"event": "closed", "created_at": at(20)},
            ],
        },
        # reopened and still open: completed once, at day 2
        {
            "number": 2,
            "html_url": "https://github.com/o/r/issues/2",
            "state": "open",
            "created_at": at(0),
            "closed_at": None,
            "events": [
                {"event": "closed", "created_at": at(2)},
                {"event": "reopened", "created_at": at(3)},
            ],
        },
        {
            "number": 3,
            "html_url": "https://github.com/o/r/issues/3",
            "state": "closed",
            "created_at": at(0),
            "closed_at": at(2),
        },
    ]
    path = tmp_path / "issues.jsonl"
    path.write_text("".join(json.dumps(i) + "\n" for i in issues))
    jsonl = tmp_path / "board.jsonl"
    jsonl.write_text(
        json.dumps(
            {
                "task_ref": "J-1",
                "created_at": at(0),
                "completed_at": at(30),
                "events": [
                    {"at": at(1), "kind": "resolved"},
                    {"at": at(9), "kind": "status_changed", "detail": "Resolved -> Reopened"},
                    {"at": at(30), "kind": "resolved"},
                ],
            }
        )
        + "\n"
    )
    con = connect(":memory:")
    load_board(con, path, "github")
    load_board(con, jsonl, "jsonl")
    result = run_p3(con, apply_overrides(prereg, {"p3.required_channels": [], "p3.min_tasks": 1}))
    days = {t["task_ref"]: t["days_to_signal"] for t in result.details["tasks"]}
    assert days == {"o/r#1": 4.0, "o/r#2": 1.0, "o/r#3": None, "J-1": 8.0}
    reopen = {
        c["origin"]: c["records"] for c in result.details["channels"] if c["channel"] == "reopened"
    }
    assert reopen == {"https://github.com/o/r": 2, "board.jsonl": 1}


def test_every_signal_kind(prereg: Preregistration) -> None:
    con = connect(":memory:")
    done = T0 + timedelta(days=1)
    for ref in ("LINK", "REV", "FIX", "LABEL", "NONE", "EARLY"):
        insert_task(con, ref, created_at=T0, completed_at=done)
    # regression link, dated by the linked bug's creation (day 12)
    insert_task(con, "BUG-9", created_at=done + timedelta(days=12))
    insert_link(con, "LINK", "BUG-9", "Regression", "outward")
    insert_link(con, "NONE", "ELSEWHERE-1", "Regression", "outward")  # target not in data
    insert_link(con, "NONE", "BUG-9", "relates", "outward")  # not a regression kind
    insert_link(con, "NONE", "BUG-9", "Regression", "inward")  # evidence against BUG-9
    # revert of a commit linked to REV; fix touching a file of a commit linked to FIX
    insert_commit(con, "r", "a" * 40, T0, "feat: add a", files=["src/a.py"])
    insert_commit(con, "r", "b" * 40, T0, "feat: add b", files=["src/b.py"])
    insert_task_commit(con, "REV", "r", "a" * 40)
    insert_task_commit(con, "FIX", "r", "b" * 40)
    insert_commit(
        con,
        "r",
        "c" * 40,
        done + timedelta(days=3),
        'Revert "feat: add a"',
        f"This reverts commit {'a' * 12}.",
        files=["src/a.py"],
    )
    insert_commit(
        con, "r", "d" * 40, done + timedelta(days=6), "fix: b crashes", files=["src/b.py"]
    )
    insert_task(
        con,
        "LABEL2",
        created_at=T0,
        completed_at=done,
        labels=["verified"],
        updated_on=done + timedelta(days=2),
    )
    insert_event(con, "LABEL", done + timedelta(days=1), "labeled", "confirmed")
    insert_event(con, "EARLY", done - timedelta(hours=1), "reopened")  # before completion
    sig = signals(con, prereg.p3)
    assert set(sig["kind"]) == {"regression-link", "revert", "fix", "verified", "reopened"}
    result = run_p3(con, apply_overrides(prereg, {"p3.min_tasks": 1}))
    per_task = {t["task_ref"]: t["first_signal_kind"] for t in result.details["tasks"]}
    assert per_task == {
        "LINK": "regression-link",
        "REV": "revert",
        "FIX": "fix",
        "LABEL": "verified",
        "LABEL2": "verified",
        "NONE": None,
        "EARLY": None,
    }
    assert any("1 signal(s) have no date" in n for n in result.notes)
    channels = {c["channel"]: c["records"] for c in result.details["channels"]}
    assert channels == {
        "reopened": 1,
        "regression-link": 2,
        "commits": 2,
        "verified": 2,
        "cross-reference": 0,
    }


@pytest.mark.parametrize(
    ("subject", "body", "detected"),
    [
        pytest.param("Fixes the thing (#12)", "", True, id="fix-wording-with-pr-suffix"),
        pytest.param("Update parser", "Fixes #3", True, id="closing-keyword-in-body"),
        pytest.param("fix-up whitespace", "", False, id="fix-up-is-not-a-fix"),
        pytest.param("fixture: add data", "", False, id="fixture-is-not-a-fix"),
    ],
)
def test_fix_signal_follows_the_production_definitions(
    prereg: Preregistration, subject: str, body: str, detected: bool
) -> None:
    con = connect(":memory:")
    insert_task(con, "FIX", created_at=T0, completed_at=T0 + timedelta(days=1))
    insert_commit(con, "r", "b" * 40, T0, "feat: add b", files=["src/b.py"])
    insert_task_commit(con, "FIX", "r", "b" * 40)
    insert_commit(con, "r", "d" * 40, T0 + timedelta(days=5), subject, body, files=["src/b.py"])
    sig = signals(con, prereg.p3)
    assert list(sig["kind"]) == (["fix"] if detected else [])


def test_commit_signals_can_be_switched_off(prereg: Preregistration) -> None:
    con = connect(":memory:")
    insert_task(con, "REV", created_at=T0, completed_at=T0)
    insert_commit(con, "r", "a" * 40, T0, "feat: a", files=["a"])
    insert_task_commit(con, "REV", "r", "a" * 40)
    insert_commit(
        con,
        "r",
        "c" * 40,
        T0 + timedelta(days=1),
        'Revert "feat: a"',
        f"This reverts commit {'a' * 40}.",
    )
    on = signals(con, prereg.p3)
    with pytest.raises(InvalidPreregistration, match="switched off"):
        apply_overrides(prereg, {"p3.commit_signals": False})  # while commits is required
    off_prereg = apply_overrides(
        prereg, {"p3.required_channels": ["reopened"], "p3.commit_signals": False}
    )
    off = signals(con, off_prereg.p3)
    assert list(on["kind"]) == ["revert"] and off.empty
    rows = run_p3(con, off_prereg).details["channels"]
    assert {c["channel"]: c["records"] for c in rows}["commits"] == 0


def test_as_of_from_data(prereg: Preregistration) -> None:
    con = board(10, [1])
    insert_event(con, "T-5", T0 + timedelta(days=31), "commented")
    data_prereg = apply_overrides(prereg, {"p3.as_of": "data"})
    result = run_p3(con, data_prereg)
    assert result.details["as_of"].startswith("2024-02-01")
    assert result.n == 10  # 30 days of follow-up exactly: not censored
    assert result.exploratory is True  # the fixture overrode as_of; "data" is the file's value
    assert load_preregistration().p3.as_of == "data"


# -- the pre-registration's P3 keys -----------------------------------------------------------


def _p3_variant(**changes: Any) -> dict[str, Any]:
    data = tomllib.loads((REPO / "preregistration.toml").read_text())
    data["p3"].update(changes)
    return data


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"required_channels": ["reopened", "vibes"]}, "required_channels must name distinct"),
        ({"required_channels": ["reopened", "reopened"]}, "required_channels must name distinct"),
        ({"smallest_useful_fraction": 0.0}, r"smallest_useful_fraction must be in \(0, 1\]"),
        (
            {"regression_links": [{"kind": "regression", "direction": "sideways"}]},
            r"direction must be one of \['inward', 'outward'\], got 'sideways'",
        ),
        ({"regression_links": [], "required_channels": ["regression-link"]}, "switched off"),
        ({"reopen_status_pattern": "("}, "reopen_status_pattern is not a valid regex"),
        ({"kill_fraction_below": 0.2}, r"unknown key\(s\) \['kill_fraction_below'\]"),
    ],
)
def test_p3_keys_are_validated(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidPreregistration, match=message) as exc:
        parse_preregistration(_p3_variant(**changes), source="variant.toml", sha256="x")
    assert "variant.toml: [p3]" in str(exc.value)


def test_the_registered_p3_values() -> None:
    p = load_preregistration().p3
    assert p.smallest_useful_fraction == 0.2
    assert p.required_channels == ("reopened", "commits")
    assert [(r.kind, r.direction) for r in p.regression_links] == [
        ("^regression$", "outward"),
        ("^(problem/incident|causality)$", "outward"),
    ]


# -- real exports (../shared/) ----------------------------------------------------------------

ONNX = "data/github/onnxruntime-issue-events"


@pytest.mark.shared
@pytest.mark.slow
def test_reflect_run_p3_on_the_jira_exports_names_the_missing_channels(
    shared_dir: Path, tmp_path: Path
) -> None:
    """The issue's "done when", through the real CLI in real processes."""
    db, env = tmp_path / "jira.duckdb", {**os.environ, "CI": "1"}

    def reflect(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "agent_reflection", *args, "--db", str(db)],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
            env=env,
            cwd=REPO,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    for project in ("kafka", "math"):
        path = shared_dir / f"data/jira/{project}-jira-bug-fix-dataset.csv.gz"
        reflect("load", "board", str(path), "--format", "jira", "--silent")
    out = reflect("run", "p3", "--out", str(tmp_path / "reports"), "--run-id", "r")
    # the registration was written while these exports were read: exploratory, never a
    # confirmation of it
    assert out.startswith("p3: insufficient-data (EXPLORATORY) — rule:")
    for origin in ("kafka-jira-bug-fix-dataset.csv", "math-jira-bug-fix-dataset.csv"):
        assert f"{origin} (jira) lacks reopened, commits" in out
    doc = read_results(tmp_path / "reports/r/p3/results.json")
    assert doc["verdict"] == "insufficient-data" and doc["exploratory"] is True
    (reason,) = doc["preregistration"]["exploratory_reasons"]
    assert reason.startswith("the data include board project 'KAFKA' (2,402 tasks, e.g. KAFKA-")
    assert "; board project 'MATH' (418 tasks, e.g. MATH-" in reason
    assert doc["metric"]["name"] == "detectable_fraction_lower_bound"
    assert doc["details"]["lower_bound"] is True
    by_source = {s["origin"]: s for s in doc["details"]["sources"]}
    # each export's own horizon: Commons Math ends in June 2018, Kafka in December 2018
    assert by_source["math-jira-bug-fix-dataset.csv"]["as_of"].startswith("2018-06-12")
    assert by_source["kafka-jira-bug-fix-dataset.csv"]["as_of"].startswith("2018-12-31")


def _embedded_onnxruntime(shared_dir: Path, target: Path) -> Path:
    """issues.jsonl with each issue's events embedded, as the github loader reads timelines,
    and the REST ``html_url`` (the dump has ``is_pull_request`` instead, which the loader does
    not read)."""
    events: dict[int, list[dict[str, Any]]] = {}
    with gzip.open(shared_dir / ONNX / "issue_events.jsonl.gz", "rt") as fh:
        for line in fh:
            e = json.loads(line)
            ev = {"event": e["event"], "created_at": e["created_at"]}
            events.setdefault(e["issue_number"], []).append(ev)
    with gzip.open(shared_dir / ONNX / "issues.jsonl.gz", "rt") as fh, target.open("w") as out:
        for line in fh:
            record = json.loads(line)
            kind = "pull" if record["is_pull_request"] else "issues"
            record["html_url"] = f"https://github.com/{record['repo']}/{kind}/{record['number']}"
            if record["number"] in events:
                record["events"] = events[record["number"]]
            out.write(json.dumps(record) + "\n")
    return target


@pytest.mark.shared
@pytest.mark.slow
def test_p3_on_the_onnxruntime_github_dump(shared_dir: Path, tmp_path: Path) -> None:
    prereg = load_preregistration()
    options = ParseOptions(project="microsoft/onnxruntime")
    # as shipped: the summaries carry no timelines, so no reopen can show
    con = connect(":memory:")
    load_board(con, shared_dir / ONNX / "issues.jsonl.gz", "github", options)
    bare = run_p3(con, prereg)
    assert bare.verdict == "insufficient-data"
    assert bare.details["sources"][0]["missing_channels"] == ["reopened", "commits"]
    rows = {c["channel"]: c for c in bare.details["channels"]}
    assert rows["regression-link"]["can_carry"] is False and rows["reopened"]["can_carry"]
    # with each issue's events embedded, the reopen channel is carried (201 reopen events)
    con = connect(":memory:")
    load_board(
        con, _embedded_onnxruntime(shared_dir, tmp_path / "embedded.jsonl"), "github", options
    )
    result = run_p3(con, prereg)
    rows = {c["channel"]: c for c in result.details["channels"]}
    # 201 reopen events, 60 of them within 5 minutes of a close (an accidental close undone)
    assert rows["reopened"]["records"] == 141 and rows["reopened"]["carries"] is True
    assert result.verdict == "insufficient-data"  # still no linked commits (no git history)
    (source,) = result.details["sources"]
    # per task: no task has a linked commit; the pull requests (and issues whose whole
    # history is their close) have no event history, so could not show a reopen
    assert source["missing_channels"] == ["reopened", "commits"]
    assert source["lacking"]["commits"] == source["eligible"] == source["not_observable"]
    # independent count over issues: first close that was not accidental, then a reopen
    # (not undoing an accidental close) within 30 days, with 30 days of follow-up to the
    # dump's last timestamp
    issues = pd.read_json(shared_dir / ONNX / "issues.jsonl.gz", lines=True)
    ev = pd.read_json(shared_dir / ONNX / "issue_events.jsonl.gz", lines=True)
    times = [
        pd.to_datetime(issues[c], utc=True)
        for c in ("created_at", "updated_at", "closed_at", "pr_merged_at")
    ]
    as_of = max(max(t.max() for t in times), pd.to_datetime(ev["created_at"], utc=True).max())
    ev["at"] = pd.to_datetime(ev["created_at"], utc=True)
    done, reopens = first_close_and_reopens(ev, issues, minutes=5)
    eligible = done[(as_of - done).dt.total_seconds() >= 30 * 86400]
    reopens = reopens.merge(eligible.rename("done"), left_on="issue_number", right_index=True)
    days = (reopens["at"] - reopens["done"]).dt.total_seconds() / 86400
    detectable = reopens.loc[(days >= 0) & (days <= 30), "issue_number"].nunique()
    by_category = {c["category"]: c for c in result.details["by_category"]}
    assert (by_category["issue"]["n"], by_category["issue"]["detectable"]) == (
        len(eligible),
        detectable,
    )
    # events exist for issues only: no pull request can show a reopen in this dump
    assert by_category["pull_request"]["detectable"] == 0
    # the eligible tasks with an event history: issues with an event other than their close
    historied = set(ev.loc[~ev["event"].isin(["closed", "created"]), "issue_number"])
    with_history = len(set(eligible.index) & historied)
    assert source["lacking"]["reopened"] == source["eligible"] - with_history
    reopened = {c["channel"]: c for c in result.details["channels"]}["reopened"]
    assert (reopened["tasks"], reopened["eligible"]) == (with_history, source["eligible"])


def first_close_and_reopens(
    events: pd.DataFrame, issues: pd.DataFrame, minutes: int
) -> tuple[pd.Series, pd.DataFrame]:
    """Independently of the SQL: each issue's first completion (the earlier of its first
    close and ``closed_at``, neither followed by a reopen within ``minutes``) and its reopens
    that do not come within ``minutes`` after a close (those undo an accidental close)."""
    closes = events[events["event"] == "closed"][["issue_number", "at"]]
    reopens = events[events["event"] == "reopened"][["issue_number", "at"]]
    pairs = closes.merge(reopens, on="issue_number", suffixes=("_close", "_reopen"))
    gap = pairs["at_reopen"] - pairs["at_close"]
    quick = pairs[(gap >= pd.Timedelta(0)) & (gap <= pd.Timedelta(minutes=minutes))]
    accidental = set(zip(quick["issue_number"], quick["at_close"], strict=True))
    undone = set(zip(quick["issue_number"], quick["at_reopen"], strict=True))
    kept = closes[
        [
            (n, a) not in accidental
            for n, a in zip(closes["issue_number"], closes["at"], strict=True)
        ]
    ]
    own = issues[~issues["is_pull_request"]].set_index("number")
    closed_at = pd.to_datetime(own["closed_at"], utc=True)
    after = reopens.assign(at_close=reopens["issue_number"].map(closed_at))
    late = after[
        (after["at"] >= after["at_close"])
        & (after["at"] - after["at_close"] <= pd.Timedelta(minutes=minutes))
    ]
    closed_at = closed_at.drop(index=set(late["issue_number"]))
    first = kept.groupby("issue_number")["at"].min()
    done = pd.concat([first, closed_at], axis=1).min(axis=1)
    done = done[done.index.isin(own.index)].dropna()  # events of numbers not in the dump
    signal = reopens[
        [(n, a) not in undone for n, a in zip(reopens["issue_number"], reopens["at"], strict=True)]
    ]
    return done, signal
