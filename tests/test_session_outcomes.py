"""session_commits and session_outcomes on real tiny git repositories (real git, DuckDB, SZZ)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import duckdb
import pytest

from agent_reflection.experiments.registration import Preregistration, load_preregistration
from agent_reflection.load.git.history import load_git_history
from agent_reflection.load.git.szz import load_fix_inducing
from agent_reflection.load.sessions import load_git_sessions, session_outcomes, session_report
from agent_reflection.load.sidecars.loader import load_sidecars
from agent_reflection.store.db import connect
from conftest import run_git
from session_repo import add_note, commit, new_repo, revert, session_sidecar
from sidecar_samples import write


@pytest.fixture
def prereg() -> Preregistration:
    return load_preregistration()


def outcomes(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, Any]]:
    rows = con.execute(
        "SELECT session_id, outcome, rule, commit_sha, evidence_sha, evidence_time, evidence, "
        "n_commits, window_days, szz_loaded FROM session_outcomes"
    ).fetchall()
    keys = ("outcome", "rule", "commit", "by", "at", "evidence", "n", "window", "szz")
    return {r[0]: dict(zip(keys, r[1:], strict=True)) for r in rows}


@pytest.fixture
def history(tmp_path: Path) -> dict[str, Any]:
    """A shop repository: four sessions' commits, a revert, a fix on blamed lines, a quiet
    change and a recent one; every session named by a reflection note on its commit."""
    repo = new_repo(tmp_path / "shop")
    base = commit(repo, "start", "2024-01-01T10:00:00+00:00", {"README.md": "shop\n"})
    cart = commit(repo, "add cart", "2024-01-02T10:00:00+00:00", {"cart.py": "total = 1\n"})
    pay = commit(
        repo,
        "add pay",
        "2024-01-03T10:00:00+00:00",
        {"pay.py": "def fee():\n    return 2\n\n\ndef tax():\n    return 3\n"},
    )
    ship = commit(repo, "add ship", "2024-01-04T10:00:00+00:00", {"ship.py": "days = 3\n"})
    undo = revert(repo, cart, "2024-01-05T10:00:00+00:00")
    fix = commit(
        repo,
        "fix fee rounding",
        "2024-01-10T10:00:00+00:00",
        {"pay.py": "def fee():\n    return 2.5\n\n\ndef tax():\n    return 3\n"},
    )
    late_fix = commit(
        repo, "fix ship days", "2024-02-20T10:00:00+00:00", {"ship.py": "days = 4\n"}
    )  # ship's fix comes 47 days after it: outside the 30-day window
    recent = commit(repo, "add gift", "2024-02-25T10:00:00+00:00", {"gift.py": "wrap = 1\n"})
    commit(repo, "docs", "2024-03-01T10:00:00+00:00", {"README.md": "shop v2\n"})
    for session, sha, day in (
        ("s-cart", cart, "02"),
        ("s-pay", pay, "03"),
        ("s-ship", ship, "04"),
    ):
        add_note(repo, sha, session_sidecar(session, "shop", f"2024-01-{day}T09:00:00Z"))
    add_note(repo, recent, session_sidecar("s-gift", "shop", "2024-02-25T09:00:00Z"))
    return {
        "repo": repo,
        "base": base,
        "cart": cart,
        "pay": pay,
        "ship": ship,
        "undo": undo,
        "fix": fix,
        "late_fix": late_fix,
        "recent": recent,
    }


def load(
    con: duckdb.DuckDBPyConnection, repo: Path, prereg: Preregistration, *, szz: bool = True
) -> None:
    load_git_history(con, repo)
    if szz:  # blames reach back as far as prereg's windows (load.git.szz.blame_horizon_days)
        load_fix_inducing(con, repo, prereg=prereg)
    load_git_sessions(con, repo, prereg)


def test_outcomes_revert_szz_quiet_and_censored(
    history: dict[str, Any], tmp_path: Path, prereg: Preregistration
) -> None:
    con = connect(tmp_path / "s.duckdb")
    load(con, history["repo"], prereg)
    got = outcomes(con)
    assert {s: o["outcome"] for s, o in got.items()} == {
        "s-cart": "wrong",
        "s-pay": "wrong",
        "s-ship": "right-so-far",
        "s-gift": "censored",
    }
    cart = got["s-cart"]
    assert (cart["rule"], cart["commit"], cart["by"]) == (
        "reverted",
        history["cart"],
        history["undo"],
    )
    assert cart["at"].isoformat().startswith("2024-01-05T10:00:00")
    pay = got["s-pay"]
    assert (pay["rule"], pay["commit"], pay["by"]) == ("szz-fix", history["pay"], history["fix"])
    assert json.loads(pay["evidence"]) == [
        {
            "commit": history["pay"],
            "rule": "szz-fix",
            "by": history["fix"],
            "task": None,
            "at": "2024-01-10T10:00:00Z",
        }
    ]
    # ship's fix is blamed on it, 47 days later: outside the window, so right so far
    assert got["s-ship"]["rule"] == "none" and got["s-ship"]["by"] is None
    assert got["s-gift"]["rule"] == "short-follow-up"
    assert {o["window"] for o in got.values()} == {30}
    assert all(o["szz"] for o in got.values())

    # without --szz the fix is unseen: the row says so, and pay is right so far
    plain = connect(tmp_path / "plain.duckdb")
    load(plain, history["repo"], prereg, szz=False)
    without = outcomes(plain)
    assert without["s-pay"]["outcome"] == "right-so-far" and not without["s-pay"]["szz"]
    assert without["s-cart"]["outcome"] == "wrong"


def test_a_wider_window_sees_the_late_fix(
    history: dict[str, Any], tmp_path: Path, prereg: Preregistration
) -> None:
    con = connect(tmp_path / "s.duckdb")
    wide = replace(prereg, p1=replace(prereg.p1, loop_window_days=60))
    # SZZ attributed with the wider window too: its blames stop at the widest window
    load(con, history["repo"], wide)
    rows = session_outcomes(con, wide).to_pylist()
    by_session = {r["session_id"]: r for r in rows}
    assert by_session["s-ship"]["outcome"] == "wrong"
    assert by_session["s-ship"]["evidence_sha"] == history["late_fix"]
    # 60 days: the history after gift (5 days) and ship's is short for gift only
    assert by_session["s-gift"]["outcome"] == "censored"


def test_a_session_fixing_its_own_commit_is_not_wrong(
    tmp_path: Path, prereg: Preregistration
) -> None:
    repo = new_repo(tmp_path / "shop")
    first = commit(repo, "add pay", "2024-01-02T10:00:00+00:00", {"pay.py": "x = 1\n"})
    second = commit(repo, "fix pay typo", "2024-01-02T11:00:00+00:00", {"pay.py": "x = 2\n"})
    commit(repo, "later", "2024-03-01T10:00:00+00:00", {"z.py": "1\n"})
    record = session_sidecar("s-pay", "shop", "2024-01-02T12:00:00Z")
    add_note(repo, first, record)
    add_note(repo, second, record)
    con = connect(tmp_path / "s.duckdb")
    load(con, repo, prereg)
    got = outcomes(con)["s-pay"]
    assert (got["outcome"], got["n"]) == ("right-so-far", 2)


def test_reopened_linked_task_makes_the_session_wrong(
    tmp_path: Path, prereg: Preregistration
) -> None:
    repo = new_repo(tmp_path / "shop")
    sha = commit(repo, "PROJ-7: add pay", "2024-01-02T10:00:00+00:00", {"pay.py": "x = 1\n"})
    commit(repo, "later", "2024-03-01T10:00:00+00:00", {"z.py": "1\n"})
    add_note(repo, sha, session_sidecar("s-pay", "shop", "2024-01-02T09:00:00Z"))
    con = connect(tmp_path / "s.duckdb")
    load_git_history(con, repo)
    con.execute(
        "INSERT INTO task_commits (task_ref, repo, sha, matched_by, load_id) "
        "VALUES ('PROJ-7', 'shop', ?, 'jira-key', 0)",
        [sha],
    )
    con.execute(
        'INSERT INTO task_events (task_ref, "at", kind, detail, load_id) '
        "VALUES ('PROJ-7', TIMESTAMPTZ '2024-01-09 10:00:00+00', 'reopened', '', 0)"
    )
    load_git_sessions(con, repo, prereg)
    got = outcomes(con)["s-pay"]
    assert (got["outcome"], got["rule"], got["by"]) == ("wrong", "reopened-task", None)
    assert con.execute("SELECT evidence_task FROM session_outcomes").fetchone() == ("PROJ-7",)


def test_file_overlap_fallback_links_with_jaccard_confidence(
    tmp_path: Path, prereg: Preregistration
) -> None:
    repo = new_repo(tmp_path / "shop")
    commit(repo, "start", "2024-01-01T10:00:00+00:00", {"README.md": "x\n"})
    both = commit(
        repo, "cart and pay", "2024-01-06T15:00:00+00:00", {"cart.py": "1\n", "pay.py": "1\n"}
    )
    half = commit(repo, "cart again", "2024-01-06T16:00:00+00:00", {"cart.py": "2\n"})
    commit(
        repo,
        "cart, ship, gift",
        "2024-01-06T17:00:00+00:00",
        {"cart.py": "3\n", "ship.py": "1\n", "gift.py": "1\n"},
    )  # 1/4
    commit(
        repo,
        "cart and pay, days later",
        "2024-01-09T10:00:00+00:00",
        {"cart.py": "4\n", "pay.py": "2\n"},
    )  # outside the 24 h after
    before = commit(repo, "pay early", "2024-01-06T03:00:00+00:00", {"pay.py": "0\n"})
    # a sidecar without git facts (an older Stop hook): linked by its files
    record = session_sidecar(
        "s-old", "shop", "2024-01-06T10:00:00Z", files_changed=["cart.py", "pay.py"]
    )
    con = connect(tmp_path / "s.duckdb")
    load_sidecars(con, [write(tmp_path / "side" / "s.reflection.json", record)], workers=1)
    load(con, repo, prereg, szz=False)
    links = con.execute(
        "SELECT sha, link, confidence FROM session_commits WHERE session_id = 's-old'"
    ).fetchall()
    assert sorted(links) == sorted(
        [(both, "file-overlap", 1.0), (half, "file-overlap", 0.5), (before, "file-overlap", 0.5)]
    )
    # a stricter registered minimum drops the half matches
    strict = replace(prereg, p1=replace(prereg.p1, loop_link_min_jaccard=0.6))
    load_git_sessions(con, repo, strict)
    assert con.execute("SELECT sha FROM session_commits").fetchall() == [(both,)]


def test_one_query_joins_sidecar_commits_and_outcome(
    history: dict[str, Any], tmp_path: Path, prereg: Preregistration
) -> None:
    con = connect(tmp_path / "s.duckdb")
    load(con, history["repo"], prereg)
    by_session = {row["session_id"]: row for row in session_report(con)}
    cart = by_session["s-cart"]
    assert cart["confidence"] == 0.75 and cart["outcome"] == "wrong"
    assert cart["commits"] == [history["cart"]] and cart["subjects"] == ["add cart"]
    assert cart["evidence_subject"] == 'Revert "add cart"'
    assert by_session["s-gift"]["outcome"] == "censored"


def git_facts(start: str, stop: str, commits: list[str], **more: Any) -> dict[str, Any]:
    """The sidecar's ``git`` object as the Stop hook writes it."""
    return {
        "branch": "main",
        "head_start": start,
        "head_stop": stop,
        "commits": commits,
        "uncommitted": [],
        **more,
    }


def test_commits_made_during_the_session_link_exactly_and_a_revert_makes_it_wrong(
    tmp_path: Path, prereg: Preregistration
) -> None:
    repo = new_repo(tmp_path / "shop")
    start = commit(repo, "start", "2024-01-01T10:00:00+00:00", {"README.md": "x\n"})
    one = commit(repo, "add cart", "2024-01-02T10:00:00+00:00", {"cart.py": "1\n"})
    two = commit(repo, "add pay", "2024-01-02T11:00:00+00:00", {"pay.py": "1\n"})
    # a human commit to the same files, the same hour: no fallback for a session with git facts
    human = commit(repo, "tweak pay", "2024-01-02T13:00:00+00:00", {"pay.py": "2\n"})
    undo = revert(repo, one, "2024-01-08T10:00:00+00:00")
    commit(repo, "docs", "2024-03-01T10:00:00+00:00", {"README.md": "y\n"})
    record = session_sidecar(
        "s-live",
        "shop",
        "2024-01-02T12:00:00Z",
        files_changed=["cart.py", "pay.py"],
        git=git_facts(start, two, [one, two]),
    )
    con = connect(tmp_path / "s.duckdb")
    result = load_sidecars(con, [write(tmp_path / "side" / "s.reflection.json", record)], workers=1)
    assert result.loaded == 1, result.detail
    # the same session also named by a note on its first commit: the exact link wins
    add_note(repo, one, record)
    load(con, repo, prereg)
    links = con.execute("SELECT sha, link, confidence FROM session_commits ORDER BY sha").fetchall()
    assert links == sorted([(one, "during-session", 1.0), (two, "during-session", 1.0)])
    assert human not in {sha for sha, _, _ in links}
    got = outcomes(con)["s-live"]
    assert (got["outcome"], got["rule"], got["commit"], got["by"], got["n"]) == (
        "wrong",
        "reverted",
        one,
        undo,
        2,
    )


def test_commits_not_in_the_loaded_history_do_not_link(
    tmp_path: Path, prereg: Preregistration
) -> None:
    repo = new_repo(tmp_path / "shop")
    start = commit(repo, "start", "2024-01-01T10:00:00+00:00", {"README.md": "x\n"})
    elsewhere = "f" * 40  # a commit on a branch never pushed here
    record = session_sidecar(
        "s-away", "shop", "2024-01-02T12:00:00Z", git=git_facts(start, elsewhere, [elsewhere])
    )
    con = connect(tmp_path / "s.duckdb")
    load_sidecars(con, [write(tmp_path / "side" / "s.reflection.json", record)], workers=1)
    load(con, repo, prereg, szz=False)
    assert con.execute("SELECT count(*) FROM session_commits").fetchone() == (0,)
    assert con.execute("SELECT count(*) FROM session_outcomes").fetchone() == (0,)


def test_session_id_unknown_is_no_session(tmp_path: Path, prereg: Preregistration) -> None:
    repo = new_repo(tmp_path / "shop")
    start = commit(repo, "start", "2024-01-01T10:00:00+00:00", {"README.md": "x\n"})
    one = commit(repo, "add cart", "2024-01-02T10:00:00+00:00", {"cart.py": "1\n"})
    commit(repo, "add pay", "2024-01-02T11:00:00+00:00", {"pay.py": "1\n"})
    con = connect(tmp_path / "s.duckdb")
    records = [
        session_sidecar(
            "unknown", "shop", "2024-01-02T12:00:00Z", git=git_facts(start, one, [one])
        ),
        session_sidecar("unknown", "shop", "2024-01-02T12:30:00Z", files_changed=["pay.py"]),
    ]
    paths = [write(tmp_path / "side" / f"{i}.reflection.json", r) for i, r in enumerate(records)]
    load_sidecars(con, paths, workers=1)
    add_note(repo, one, records[0])
    load(con, repo, prereg, szz=False)
    assert con.execute("SELECT count(*) FROM session_commits").fetchone() == (0,)


def test_notes_travel_in_a_bundle(tmp_path: Path, prereg: Preregistration) -> None:
    repo = new_repo(tmp_path / "shop")
    sha = commit(repo, "add cart", "2024-01-02T10:00:00+00:00", {"cart.py": "1\n"})
    add_note(repo, sha, session_sidecar("s-a", "shop", "2024-01-02T09:00:00Z"))
    bundle = tmp_path / "shop.bundle"
    run_git(repo, "bundle", "create", str(bundle), "--all")
    con = connect(tmp_path / "s.duckdb")
    load_git_history(con, bundle, cache_dir=tmp_path / "cache")
    result = load_git_sessions(con, bundle, prereg, cache_dir=tmp_path / "cache")
    assert result.notes is not None and result.notes.loaded == 1
    assert con.execute("SELECT session_id, sha FROM session_commits").fetchall() == [("s-a", sha)]


def test_docs_show_the_join_query_as_it_is() -> None:
    root = Path(__file__).resolve().parents[1]
    sql = (root / "src/agent_reflection/sql/sessions/session_report.sql").read_text()
    body = "\n".join(line for line in sql.splitlines() if not line.startswith("--")).strip()
    assert body in (root / "docs/loading.md").read_text()
