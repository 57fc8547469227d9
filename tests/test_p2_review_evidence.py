"""P2's review gate by evidence (issue 32): where a board's GitHub timeline is loaded for the
introducing commit's pull request, its review events and the size of the change decide the
human-review bucket; the risk floor's path rule is the fallback where no review data exists."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from agent_reflection.experiments.p2.analysis import run_p2
from agent_reflection.experiments.registration import load_preregistration
from agent_reflection.store.db import connect
from sim_rows import insert_event, insert_task, insert_task_commit
from test_p2 import by_sha, sha, szz_fix

REPO_ROOT = Path(__file__).resolve().parents[1]
AT = datetime(2026, 1, 5, tzinfo=UTC)


def pull_request(con, ref: str, commit: str, kinds: list[str]) -> None:  # type: ignore[no-untyped-def]
    """A pull request naming ``commit`` with timeline events of ``kinds``."""
    insert_task(con, ref, created_at=AT, completed_at=AT, project="org/r")
    con.execute("UPDATE tasks SET category = 'pull_request' WHERE task_ref = ?", [ref])
    for i, kind in enumerate(kinds):
        insert_event(con, ref, AT.replace(hour=i + 1), kind)
    con.execute("UPDATE task_events SET via = 'timeline' WHERE task_ref = ?", [ref])
    insert_task_commit(con, ref, "r", commit)


def test_review_events_decide_where_they_exist_and_the_path_rule_elsewhere() -> None:
    prereg = load_preregistration(REPO_ROOT / "preregistration.toml")
    assert [r.name for r in prereg.p2.rules][3] == "review-evidence"
    con = connect(":memory:")
    auth = ("src/auth/login.py",)
    szz_fix(con, 10, feat_files=("src/report.py",), fix_files=("src/report.py",))
    szz_fix(con, 20, feat_files=auth, fix_files=auth)  # a risk surface, but not reviewed
    szz_fix(con, 30, feat_files=auth, fix_files=auth)  # a risk surface, no review data
    szz_fix(con, 40, feat_files=("src/report.py",), fix_files=("src/report.py",))
    pull_request(con, "org/r#1", sha(10), ["reviewed", "commented"])  # reviewed, small
    pull_request(con, "org/r#2", sha(20), ["commented"])  # commented only: no review
    con.execute("UPDATE commit_files SET added = 900 WHERE sha = ?", [sha(40)])
    pull_request(con, "org/r#4", sha(40), ["reviewed"])  # reviewed, but 900 lines
    signals = by_sha(run_p2(con, prereg, labels=[]))
    got = {
        n: (signals[sha(n + 1)]["bucket"], signals[sha(n + 1)]["rule"]) for n in (10, 20, 30, 40)
    }
    assert got == {
        10: ("human-review", "review-evidence"),
        20: ("only-self-reflection", "otherwise"),  # the path rule does not apply: data say no
        30: ("human-review", "risk-floor-needs-review"),  # no review data: the fallback
        40: ("only-self-reflection", "otherwise"),  # too large to have been read
    }
    assert "1 review(s), 1 comment(s) on org/r#1" in signals[sha(11)]["why"]
