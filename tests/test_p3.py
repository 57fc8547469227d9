"""P3: detectability, the harness boundary cases, signal kinds, censoring."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agent_reflection.db import connect
from agent_reflection.experiments.p3 import run_p3, signals
from agent_reflection.experiments.preregistration import apply_overrides, load_preregistration
from agent_reflection.experiments.results import read_results
from agent_reflection.simulate.phase0 import (
    insert_commit,
    insert_event,
    insert_link,
    insert_task,
    insert_task_commit,
)

T0 = datetime(2024, 1, 1, tzinfo=UTC)
AS_OF = T0 + timedelta(days=400)


@pytest.fixture(scope="module")
def prereg():  # type: ignore[no-untyped-def]
    return apply_overrides(load_preregistration(), {"p3.as_of": AS_OF.isoformat()})


def board(n_tasks: int, reopened_after_days: list[float]):  # type: ignore[no-untyped-def]
    """n completed tasks; the first len(reopened_after_days) get a reopen after that delay."""
    con = connect(":memory:")
    for i in range(n_tasks):
        insert_task(con, f"T-{i}", created_at=T0, completed_at=T0 + timedelta(days=1))
    for i, days in enumerate(reopened_after_days):
        insert_event(con, f"T-{i}", T0 + timedelta(days=1 + days), "reopened")
    return con


@pytest.mark.spec
@pytest.mark.parametrize(
    ("n", "delays", "fraction", "verdict"),
    [
        pytest.param(20, [3, 3, 3], 0.15, "kill", id="P3.1-below-20pct"),
        pytest.param(20, [3, 3, 3, 3], 0.2, "continue", id="P3.2-exactly-20pct"),
        pytest.param(10, [30, 30], 0.2, "continue", id="P3.3-day-30-counts"),
        pytest.param(10, [31, 31], 0.0, "kill", id="P3.4-day-31-does-not"),
        pytest.param(10, [30, 31], 0.1, "kill", id="P3.5-day-30-vs-31"),
    ],
)
def test_harness_cases(prereg, n, delays, fraction, verdict, tmp_path):  # type: ignore[no-untyped-def]
    result = run_p3(board(n, delays), prereg)
    assert result.metric.value == pytest.approx(fraction)
    assert result.verdict == verdict
    if verdict == "kill":
        assert any("caveat notes only" in note for note in result.notes)
    assert "kill" in result.kill_condition
    doc = read_results(result.write_json(tmp_path / "results.json"))
    assert doc["details"]["detectable"] == round(fraction * n)


def test_wilson_ci_and_breakdowns(prereg):  # type: ignore[no-untyped-def]
    con = board(10, [2, 5])
    insert_task(con, "OTHER-1", created_at=T0, completed_at=T0 + timedelta(days=1), project="X")
    insert_event(con, "OTHER-1", T0 + timedelta(days=4), "status_changed", "Done -> Verified")
    result = run_p3(con, prereg)
    assert result.n == 11 and result.details["detectable"] == 3
    from scipy.stats import binomtest

    ci = binomtest(3, 11).proportion_ci(method="wilson")
    assert (result.metric.ci_low, result.metric.ci_high) == pytest.approx((ci.low, ci.high))
    kinds = {k["kind"]: k["tasks"] for k in result.details["by_kind"]}
    assert kinds["reopened"] == 2 and kinds["verified"] == 1
    projects = {p["project"]: (p["n"], p["detectable"]) for p in result.details["by_project"]}
    assert projects == {"DEMO": (10, 2), "X": (1, 1)}
    assert sorted(result.details["time_to_signal_days"]) == [2.0, 3.0, 5.0]


def test_right_censored_tasks_are_excluded_and_counted(prereg):  # type: ignore[no-untyped-def]
    con = board(10, [1])
    insert_task(con, "NEW", created_at=AS_OF - timedelta(days=40),
                completed_at=AS_OF - timedelta(days=29))  # fmt: skip
    insert_event(con, "NEW", AS_OF - timedelta(days=28), "reopened")
    insert_task(con, "OPEN", created_at=T0)  # never completed: not in P3 at all
    result = run_p3(con, prereg)
    assert result.details["censored"] == 1 and result.n == 10
    assert result.details["completed"] == 11
    assert any("right-censored" in n for n in result.notes)


def test_insufficient_data(prereg):  # type: ignore[no-untyped-def]
    result = run_p3(board(9, [1, 1, 1]), prereg)
    assert result.verdict == "insufficient-data"
    empty = run_p3(connect(":memory:"), prereg)
    assert empty.verdict == "insufficient-data" and empty.metric.value is None


def test_every_signal_kind(prereg):  # type: ignore[no-untyped-def]
    con = connect(":memory:")
    done = T0 + timedelta(days=1)
    for ref in ("LINK", "REV", "FIX", "LABEL", "NONE", "EARLY"):
        insert_task(con, ref, created_at=T0, completed_at=done)
    # regression link, dated by the linked bug's creation (day 12)
    insert_task(con, "BUG-9", created_at=done + timedelta(days=12))
    insert_link(con, "LINK", "BUG-9", "Regression", "outward")
    insert_link(con, "NONE", "ELSEWHERE-1", "is caused by", "inward")  # target not in data
    insert_link(con, "NONE", "BUG-9", "relates", "outward")  # not a regression kind
    # revert of a commit linked to REV; fix touching a file of a commit linked to FIX
    insert_commit(con, "r", "a" * 40, T0, "feat: add a", files=["src/a.py"])
    insert_commit(con, "r", "b" * 40, T0, "feat: add b", files=["src/b.py"])
    insert_task_commit(con, "REV", "r", "a" * 40)
    insert_task_commit(con, "FIX", "r", "b" * 40)
    insert_commit(con, "r", "c" * 40, done + timedelta(days=3), 'Revert "feat: add a"',
                  f"This reverts commit {'a' * 12}.", files=["src/a.py"])  # fmt: skip
    insert_commit(con, "r", "d" * 40, done + timedelta(days=6), "fix: b crashes",
                  files=["src/b.py"])  # fmt: skip
    insert_task(con, "LABEL2", created_at=T0, completed_at=done, labels=["verified"],
                updated_on=done + timedelta(days=2))  # fmt: skip
    insert_event(con, "LABEL", done + timedelta(days=1), "labeled", "confirmed")
    insert_event(con, "EARLY", done - timedelta(hours=1), "reopened")  # before completion
    sig = signals(con, prereg.p3)
    assert set(sig["kind"]) == {"regression-link", "revert", "fix", "verified", "reopened"}
    result = run_p3(con, apply_overrides(prereg, {"p3.min_tasks": 1}))
    per_task = {t["task_ref"]: t["first_signal_kind"] for t in result.details["tasks"]}
    assert per_task == {
        "LINK": "regression-link", "REV": "revert", "FIX": "fix", "LABEL": "verified",
        "LABEL2": "verified", "NONE": None, "EARLY": None,
    }  # fmt: skip
    assert any("no date" in n for n in result.notes)


@pytest.mark.parametrize(
    ("subject", "body", "detected"),
    [
        pytest.param("Fixes the thing (#12)", "", True, id="fix-wording-with-pr-suffix"),
        pytest.param("Update parser", "Fixes #3", True, id="closing-keyword-in-body"),
        pytest.param("fix-up whitespace", "", False, id="fix-up-is-not-a-fix"),
        pytest.param("fixture: add data", "", False, id="fixture-is-not-a-fix"),
    ],
)
def test_fix_signal_follows_the_production_definitions(prereg, subject, body, detected):  # type: ignore[no-untyped-def]
    con = connect(":memory:")
    insert_task(con, "FIX", created_at=T0, completed_at=T0 + timedelta(days=1))
    insert_commit(con, "r", "b" * 40, T0, "feat: add b", files=["src/b.py"])
    insert_task_commit(con, "FIX", "r", "b" * 40)
    insert_commit(con, "r", "d" * 40, T0 + timedelta(days=5), subject, body, files=["src/b.py"])
    sig = signals(con, prereg.p3)
    assert list(sig["kind"]) == (["fix"] if detected else [])


def test_commit_signals_can_be_switched_off(prereg):  # type: ignore[no-untyped-def]
    con = connect(":memory:")
    insert_task(con, "REV", created_at=T0, completed_at=T0)
    insert_commit(con, "r", "a" * 40, T0, "feat: a", files=["a"])
    insert_task_commit(con, "REV", "r", "a" * 40)
    insert_commit(con, "r", "c" * 40, T0 + timedelta(days=1), 'Revert "feat: a"',
                  f"This reverts commit {'a' * 40}.")  # fmt: skip
    on = signals(con, prereg.p3)
    off = signals(con, apply_overrides(prereg, {"p3.commit_signals": False}).p3)
    assert list(on["kind"]) == ["revert"] and off.empty


def test_as_of_from_data(prereg):  # type: ignore[no-untyped-def]
    con = board(10, [1])
    insert_event(con, "T-5", T0 + timedelta(days=31), "commented")
    data_prereg = apply_overrides(prereg, {"p3.as_of": "data"})
    result = run_p3(con, data_prereg)
    assert result.details["as_of"].startswith("2024-02-01")
    assert result.n == 10  # 30 days of follow-up exactly: not censored
    assert result.exploratory is True  # the fixture overrode as_of; "data" is the file's value
    assert load_preregistration().p3.as_of == "data"
