"""P2's CI gate by evidence (issue 32): CI results on the introducing commit first, then the
fix's diff (does it add or change the test that would have failed? ``[p2] ci_fix_test``), the
path rules only as the fallback where neither exists; each row names the evidence.

No repository has both CI results and a git history in ../shared (the CI records are of
orientdb, django, tomcat, spring-kafka, byte-buddy and LSPatch; the histories are flask and
sqlite-utils), so: the diff rule on real flask commits, and CI results on a tiny real git
repository from real GitHub Actions workflow-run records (../shared BugSwarm orientdb
``runs-page1.json``, their ``head_sha`` pointed at the tiny repository's commits).
"""

from __future__ import annotations

import copy
import json
import tarfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from agent_reflection.experiments.p2.analysis import run_p2
from agent_reflection.experiments.p2.buckets import fix_tests
from agent_reflection.experiments.registration import Preregistration, load_preregistration
from agent_reflection.load.ci import load_ci
from agent_reflection.load.git.history import load_git_history
from agent_reflection.load.git.szz import load_fix_inducing
from agent_reflection.store.db import connect
from conftest import run_git

REPO_ROOT = Path(__file__).resolve().parents[1]

#: real flask fixes: "Fix blueprint renaming" (src/flask/blueprints.py + its test), "Fixed a
#: testcase" (tests only), "Fixed a broken test" (tests only, its words name the failure)
FIX_WITH_TEST = "3257b7574e7f010686a617197e0fb4596986f7f7"
TEST_ONLY = "b26aeba972686b9cb9a9b111e1bc8997e1f259c8"
NAMES_BROKEN_TEST = "ddb5f9dc490879236cf20a7fa1cb75d7f787a0f0"


@pytest.fixture(scope="module")
def prereg() -> Preregistration:
    return load_preregistration(REPO_ROOT / "preregistration.toml")


def _signals(result: Any) -> dict[str, dict[str, Any]]:
    return {s["fixing_sha"]: s for s in result.details["signals"]}


def test_the_diff_rule_is_registered(prereg: Preregistration) -> None:
    assert prereg.p2.ci_fix_test == "same-commit"


def test_fix_tests_pairs_a_test_with_the_code_it_repairs(prereg: Preregistration) -> None:
    p = prereg.p2
    rule = p.ci_fix_test
    pair = fix_tests(
        [("src/flask/blueprints.py", 3), ("tests/test_blueprints.py", 22), ("CHANGES.rst", 2)],
        p.test_paths,
        p.non_code_paths,
        rule,
    )
    assert pair == (("tests/test_blueprints.py",), ("src/flask/blueprints.py",))
    # a test-only repair, a test with only deleted lines, docs beside a test: no pair
    assert fix_tests([("tests/test_x.py", 4)], p.test_paths, p.non_code_paths, rule) == ((), ())
    assert fix_tests(
        [("src/a.py", 2), ("tests/test_a.py", 0)], p.test_paths, p.non_code_paths, rule
    ) == ((), ())
    assert fix_tests(
        [("docs/api.rst", 2), ("tests/test_a.py", 5)], p.test_paths, p.non_code_paths, rule
    ) == ((), ())
    assert fix_tests(
        [("src/a.py", 2), ("tests/test_a.py", 5)], p.test_paths, p.non_code_paths, "off"
    ) == ((), ())


@pytest.mark.slow
def test_on_flask_each_row_names_its_evidence(flask_szz_con: Any, prereg: Preregistration) -> None:
    result = run_p2(flask_szz_con, prereg, labels=[])
    off = run_p2(
        flask_szz_con, replace(prereg, p2=replace(prereg.p2, ci_fix_test="off")), labels=[]
    )
    signals, before = _signals(result), _signals(off)
    fixed = signals[FIX_WITH_TEST]
    assert (fixed["bucket"], fixed["ci_evidence"], fixed["evidence"]) == (
        "only-self-reflection",
        "fix-adds-test",
        "fix diff: adds the test",
    )
    assert "tests/test_blueprints.py, beside src/flask/blueprints.py" in fixed["why"]
    assert before[FIX_WITH_TEST]["evidence"] == "no gate's evidence"
    # tests only: the path rule, the fallback where no CI result exists
    assert (signals[TEST_ONLY]["rule"], signals[TEST_ONLY]["evidence"]) == (
        "ci-test-only",
        "fix paths (fallback: no CI result)",
    )
    assert signals[NAMES_BROKEN_TEST]["evidence"] == "fix message"
    counted = [s for s in signals.values() if s["bucket"] is not None]
    assert all(s["evidence"] for s in counted)
    with_test = [s for s in counted if s["ci_evidence"] == "fix-adds-test"]
    # measured: 19 of flask's 67 counted signals are fixes that bring their test (18 in
    # only-self-reflection, 1 in human-review); none was in ci under the path rules, so no
    # flask signal moves bucket
    assert len(with_test) == 19
    assert all(before[s["fixing_sha"]]["bucket"] == s["bucket"] for s in counted)
    assert any("19 whose fix adds the test" in n for n in result.notes)


def _commit(repo: Path, day: int, message: str, files: dict[str, str]) -> str:
    for path, text in files.items():
        file = repo / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(text)
        run_git(repo, "add", path)
    stamp = f"2024-03-{day:02d}T12:00:00+00:00"
    env = {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
    run_git(repo, "commit", "-q", "-m", message, env=env)
    return run_git(repo, "rev-parse", "HEAD").strip()


def _code(name: str, value: int) -> str:
    body = f"    total = 0\n    for r in rows:\n        total += r * {value}\n    return total\n"
    return f"def {name}(rows):\n{body}"


def _test(name: str, cases: int) -> str:
    lines = [f"from src.{name} import {name}\n"]
    for i in range(cases):
        lines.append(f"def test_{name}_{i}():\n    assert {name}([{i}]) == {2 * i}\n")
    return "\n".join(lines)


@pytest.fixture
def tiny(git_repo: Path, tmp_path: Path) -> dict[str, str]:
    """Four feature -> fix pairs on a real git repository, loaded with --szz:
    a: the fix repairs src/a.py and adds its test; b: the fix changes only a test;
    c: like a, its words name a failing test; d: the fix repairs code without a test."""
    shas: dict[str, str] = {}
    day = 2
    for pair in "abcd":
        shas[f"feat_{pair}"] = _commit(
            git_repo,
            day,
            f"Add totals {pair}",
            {f"src/{pair}.py": _code(pair, 1), f"tests/test_{pair}.py": _test(pair, 1)},
        )
        message = {"c": "fix failing tests in c"}.get(pair, f"fix: wrong totals in {pair}")
        files = {
            "a": {"src/a.py": _code("a", 2), "tests/test_a.py": _test("a", 3)},
            "b": {"tests/test_b.py": _test("b", 2)},
            "c": {"src/c.py": _code("c", 2), "tests/test_c.py": _test("c", 3)},
            "d": {"src/d.py": _code("d", 2)},
        }[pair]
        if pair == "b":  # the test-only fix re-touches the test the feature wrote
            files = {"tests/test_b.py": _test("b", 1).replace("== 0", "== 2 * 0")}
        shas[f"fix_{pair}"] = _commit(git_repo, day + 1, message, files)
        day += 3
    db = tmp_path / "tiny.duckdb"
    con = connect(db)
    try:
        load_git_history(con, git_repo, name="tiny")
        load_fix_inducing(con, git_repo, name="tiny")
    finally:
        con.close()
    shas["db"] = str(db)
    return shas


def _real_runs(shared_dir: Path, tmp_path: Path) -> dict[str, Any]:
    """The real workflow-runs page of orientdb's GitHub Actions (BugSwarm's test data)."""
    archive = shared_dir / "data" / "github" / "ci-samples-bugswarm" / "raw"
    with tarfile.open(archive / "github-pair-finder-tests-data.tar.gz") as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("orientdb/runs-page1.json"))
        handle = tar.extractfile(member)
        assert handle is not None
        doc: dict[str, Any] = json.load(handle)
    return doc


@pytest.mark.slow
def test_ci_results_decide_first_then_the_diff(
    tiny: dict[str, str], shared_dir: Path, tmp_path: Path, prereg: Preregistration
) -> None:
    page = _real_runs(shared_dir, tmp_path)
    failed = next(r for r in page["workflow_runs"] if r["conclusion"] == "failure")
    passed = next(r for r in page["workflow_runs"] if r["conclusion"] == "success")
    runs = []
    # CI ran on a's and b's introducing commits and passed; it failed on d's
    for run, sha in ((passed, tiny["feat_a"]), (passed, tiny["feat_b"]), (failed, tiny["feat_d"])):
        record = copy.deepcopy(run)
        record["id"] = int(run["id"]) + len(runs)  # one run per commit
        record["head_sha"] = sha
        runs.append(record)
    path = tmp_path / "runs.json"
    path.write_text(json.dumps({"total_count": len(runs), "workflow_runs": runs}))
    con = connect(tiny["db"])
    try:
        no_ci = _signals(run_p2(con, prereg, labels=[]))
        assert load_ci(con, path).loaded == 3
        with_ci = _signals(run_p2(con, prereg, labels=[]))
    finally:
        con.close()
    a, b, c, d = (tiny[f"fix_{p}"] for p in "abcd")
    # without CI results: the diff, then the words, then the paths
    assert (no_ci[a]["ci_evidence"], no_ci[a]["evidence"]) == (
        "fix-adds-test",
        "fix diff: adds the test",
    )
    assert no_ci[a]["bucket"] == "only-self-reflection"
    assert (no_ci[b]["rule"], no_ci[b]["evidence"]) == (
        "ci-test-only",
        "fix paths (fallback: no CI result)",
    )
    # its words name a failing check: that check existed, the test it adds does not undo it
    assert (no_ci[c]["bucket"], no_ci[c]["evidence"]) == ("ci", "fix message")
    assert (no_ci[d]["bucket"], no_ci[d]["evidence"]) == (
        "only-self-reflection",
        "no gate's evidence",
    )
    # with them: CI passed on a's change (the row names the test CI lacked), the path rule no
    # longer applies to b, CI's failure on d's change puts d in ci
    assert (with_ci[a]["ci_evidence"], with_ci[a]["evidence"]) == (
        "ci_runs-passed",
        "ci_runs: runs passed",
    )
    assert "CI ran (1 on the introducing commit), none failed" in with_ci[a]["why"]
    assert "tests/test_a.py, beside src/a.py" in with_ci[a]["why"]
    assert (with_ci[b]["bucket"], with_ci[b]["evidence"]) == (
        "only-self-reflection",
        "ci_runs: runs passed",
    )
    assert (with_ci[d]["bucket"], with_ci[d]["rule"], with_ci[d]["evidence"]) == (
        "ci",
        "ci-reported-failure",
        "ci_runs: failed run",
    )
    assert failed["name"] in with_ci[d]["why"]
    assert with_ci[c] == no_ci[c] | {"label_is_failure": with_ci[c]["label_is_failure"]}
