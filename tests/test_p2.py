"""P2: failure signals, first-match classification, revert target + risk floor, verdicts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agent_reflection.db import connect
from agent_reflection.experiments.p2 import classify, run_p2
from agent_reflection.experiments.preregistration import apply_overrides, load_preregistration
from agent_reflection.experiments.results import read_results
from agent_reflection.risk_floor import evaluate_risk_floor
from agent_reflection.simulate.phase0 import insert_commit

T0 = datetime(2024, 3, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def prereg():  # type: ignore[no-untyped-def]
    return load_preregistration()


def sha(n: int) -> str:
    return f"{n:040x}"


def day(d: float) -> datetime:
    return T0 + timedelta(days=d)


def feature_and_fix(con, n, fix_files, *, after=1.0, feat_files=("src/report.py",),  # type: ignore[no-untyped-def]
                    fix_subject="fix: wrong totals", repo="r"):  # fmt: skip
    insert_commit(con, repo, sha(n), day(n), f"feat: feature {n}", files=feat_files)
    insert_commit(con, repo, sha(n + 1), day(n + after), fix_subject, files=fix_files)


@pytest.mark.spec
def test_revert_is_a_signal_with_resolved_target_and_risk_floor(prereg, tmp_path):  # type: ignore[no-untyped-def]
    con = connect(":memory:")
    insert_commit(con, "r", sha(1), day(0), "Add login throttle", files=["src/auth/login.py"])
    insert_commit(con, "r", sha(2), day(2), 'Revert "Add login throttle"',
                  f"This reverts commit {sha(1)[:10]}.", files=["src/auth/login.py"])  # fmt: skip
    result = run_p2(con, prereg)
    [s] = result.details["signals"]
    assert s["kind"] == "revert" and s["failing_sha"] == sha(1)
    assert s["failing_risk"] == evaluate_risk_floor(["src/auth/login.py"]).to_dict()
    assert (s["bucket"], s["rule"]) == ("human-review", "risk-floor-needs-review")
    read_results(result.write_json(tmp_path / "results.json"))


@pytest.mark.spec
@pytest.mark.parametrize(
    ("after", "fix_files", "feat_files", "signal"),
    [
        pytest.param(1, ["src/report.py"], ["src/report.py"], True, id="P2.fix-within-window"),
        pytest.param(7, ["src/report.py"], ["src/report.py"], True, id="P2.fix-day-7"),
        pytest.param(7.01, ["src/report.py"], ["src/report.py"], False, id="P2.fix-after-7d"),
        pytest.param(1, ["src/other.py"], ["src/report.py"], False, id="P2.fix-other-file"),
        pytest.param(-1, ["src/report.py"], ["src/report.py"], False, id="P2.fix-before"),
    ],
)
def test_fix_after_feature(prereg, after, fix_files, feat_files, signal):  # type: ignore[no-untyped-def]
    con = connect(":memory:")
    feature_and_fix(con, 10, fix_files, after=after, feat_files=feat_files)
    signals = run_p2(con, prereg).details["signals"]
    assert len(signals) == int(signal)
    if signal:
        assert signals[0]["kind"] == "fix-after-feature"
        assert signals[0]["failing_sha"] == sha(10)


@pytest.mark.parametrize(
    ("subject", "body", "signal"),
    [
        pytest.param("Fixes the thing (#12)", "", True, id="fix-wording-with-pr-suffix"),
        pytest.param("Update parser", "Fixes #3", True, id="closing-keyword-in-body"),
        pytest.param("fix-up whitespace", "", False, id="fix-up-is-not-a-fix"),
        pytest.param("fixture: add data", "", False, id="fixture-is-not-a-fix"),
        pytest.param("Bug fix for totals", "", True, id="bug-fix-two-words"),
    ],
)
def test_fix_signals_follow_the_production_definitions(prereg, subject, body, signal):  # type: ignore[no-untyped-def]
    # The rows carry load.git_signals' definitions (the simulator no longer has its own), so
    # P2 counts a fix exactly when the git loader would have marked it fix-like.
    con = connect(":memory:")
    insert_commit(con, "r", sha(1), day(0), "feat: parser", files=["src/parser.py"])
    insert_commit(con, "r", sha(2), day(1), subject, body, files=["src/parser.py"])
    signals = run_p2(con, prereg).details["signals"]
    assert [(s["kind"], s["fixing_sha"]) for s in signals] == (
        [("fix-after-feature", sha(2))] if signal else []
    )


def test_hotfix_after_merged_pr_uses_second_parent_files(prereg):  # type: ignore[no-untyped-def]
    con = connect(":memory:")
    insert_commit(con, "r", sha(1), day(0), "base", files=["src/app.py"])
    insert_commit(con, "r", sha(2), day(1), "Tweak renderer", parents=[sha(1)],
                  files=["src/render.py"])  # fmt: skip
    insert_commit(con, "r", sha(3), day(2), "Merge pull request #42 from x/render",
                  parents=[sha(1), sha(2)])  # fmt: skip
    insert_commit(con, "r", sha(4), day(3), "hotfix renderer crash", files=["src/render.py"])
    [s] = run_p2(con, prereg).details["signals"]
    assert s["failing_sha"] == sha(3) and s["bucket"] == "only-self-reflection"


@pytest.mark.parametrize(
    ("files", "message", "risky", "bucket", "rule"),
    [
        (["tests/test_x.py", "src/x.py"], "fix: x", False, "ci", "ci-tests-or-build"),
        (["src/x.py"], "fix: failing test in x", False, "ci", "ci-tests-or-build"),
        (["src/x.py"], "fix: mypy errors", False, "ci", "ci-tests-or-build"),
        ([".github/workflows/ci.yml"], "fix: y", True, "ci", "ci-tests-or-build"),
        (["src/x.py"], "fix: x", True, "human-review", "risk-floor-needs-review"),
        (["src/x.py"], "fix: x", False, "only-self-reflection", "otherwise"),
    ],
)
def test_first_match_rule_table(prereg, files, message, risky, bucket, rule):  # type: ignore[no-untyped-def]
    risk = evaluate_risk_floor(["src/auth/a.py"] if risky else ["src/x.py"])
    c = classify(prereg.p2.rules, files, message, risk)
    assert (c.bucket, c.rule) == (bucket, rule)
    assert c.why


@pytest.mark.spec
def test_empty_only_self_bucket_kills(prereg):  # type: ignore[no-untyped-def]
    con = connect(":memory:")
    for n in (10, 20, 30, 40):
        feature_and_fix(con, n, ["src/report.py", "tests/test_report.py"])
    result = run_p2(con, prereg)
    assert result.details["pooled"] == {"ci": 4, "human-review": 0, "only-self-reflection": 0}
    assert result.verdict == "kill"
    assert "only-self-reflection" in result.kill_condition


def test_continue_per_repo_and_pooled(prereg):  # type: ignore[no-untyped-def]
    con = connect(":memory:")
    for n in (10, 20, 30):
        feature_and_fix(con, n, ["src/report.py"], repo="a")
    feature_and_fix(con, 10, ["src/report.py", "tests/t.py"], repo="b")
    insert_commit(con, "c", sha(1), day(0), "chore: nothing")
    result = run_p2(con, prereg)
    assert result.verdict == "continue"
    assert result.metric.value == pytest.approx(0.75)
    by_repo = {r["repo"]: r for r in result.details["by_repo"]}
    assert by_repo["a"]["only-self-reflection"] == 3 and by_repo["b"]["ci"] == 1
    assert by_repo["c"]["signals"] == 0


def test_few_only_self_signals_kill_by_count(prereg):  # type: ignore[no-untyped-def]
    con = connect(":memory:")
    feature_and_fix(con, 10, ["src/report.py"])
    feature_and_fix(con, 20, ["src/report.py"])
    result = run_p2(con, prereg)
    assert result.metric.value == 1.0 and result.verdict == "kill"  # 2 < 3


def test_no_signals_is_insufficient_and_exploratory_is_labelled(prereg, tmp_path):  # type: ignore[no-untyped-def]
    con = connect(":memory:")
    insert_commit(con, "r", sha(1), day(0), "feat: a", files=["a.py"])
    result = run_p2(con, prereg)
    assert result.verdict == "insufficient-data" and result.n == 0
    wide = apply_overrides(prereg, {"p2.window_days": 30})
    doc = read_results(run_p2(con, wide).write_json(tmp_path / "r.json"))
    assert doc["exploratory"] is True and doc["parameters"]["window_days"] == 30


def test_unresolved_revert_target_is_noted(prereg):  # type: ignore[no-untyped-def]
    con = connect(":memory:")
    insert_commit(con, "r", sha(2), day(2), 'Revert "gone"', "This reverts commit deadbeef1.",
                  files=["x.py"])  # fmt: skip
    result = run_p2(con, prereg)
    assert result.details["signals"][0]["failing_sha"] is None
    assert any("not in the data" in n for n in result.notes)


def test_merged_pr_risk_floor_uses_the_files_it_brought_in(prereg):  # type: ignore[no-untyped-def]
    con = connect(":memory:")
    insert_commit(con, "r", sha(1), day(0), "base", files=["src/app.py"])
    insert_commit(con, "r", sha(2), day(1), "Rotate tokens", parents=[sha(1)],
                  files=["src/auth/tokens.py"])  # fmt: skip
    insert_commit(con, "r", sha(3), day(2), "Merge pull request #7 from x/tokens",
                  parents=[sha(1), sha(2)])  # fmt: skip
    insert_commit(con, "r", sha(4), day(3), "fix: token expiry", files=["src/auth/tokens.py"])
    [s] = run_p2(con, prereg).details["signals"]
    assert s["failing_risk"]["surface"] == "auth" and s["bucket"] == "human-review"
