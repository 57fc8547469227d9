"""SZZ's blame horizon: blames stop where no registered analysis could count a commit, and what
they find inside it is what a blame to the root finds (tiny real repos, then flask and
sqlite-utils from ../shared/: every candidate, every line count, P2's signals)."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path
from typing import Any

import duckdb
import pytest

from agent_reflection.experiments.p2.inputs import WindowPastBlameHorizon, load_history
from agent_reflection.experiments.p2.signals import find_signals
from agent_reflection.experiments.registration import load_preregistration
from agent_reflection.load.git.history import load_git_history
from agent_reflection.load.git.szz import (
    METHOD_BEFORE_HORIZON,
    blame_horizon_days,
    load_fix_inducing,
)
from agent_reflection.store.db import connect
from test_szz import commit, write

DAY = 86_400


def inducing(con: duckdb.DuckDBPyConnection) -> list[tuple[Any, ...]]:
    return con.execute(
        "SELECT fix_sha, introducing_sha, path, lines, method, gap_days FROM fix_inducing "
        "ORDER BY ALL"
    ).fetchall()


def test_the_horizon_is_the_widest_registered_window() -> None:
    prereg = load_preregistration()
    assert blame_horizon_days(prereg) == max(
        prereg.p2.window_days,
        prereg.p1.loop_window_days,
        prereg.agent_vs_human.follow_up_days,
    )
    wider = dataclasses.replace(prereg, p2=dataclasses.replace(prereg.p2, window_days=90))
    assert blame_horizon_days(wider) == 90
    by_author = dataclasses.replace(
        prereg,
        agent_vs_human=dataclasses.replace(prereg.agent_vs_human, time_column="author_time"),
    )
    assert blame_horizon_days(by_author) is None  # author time: no bound, the whole history


def test_lines_older_than_the_horizon_are_counted_not_named(git_repo: Path, tmp_path: Path) -> None:
    """A fix deleting one line written 10 days before it and two written 100 days before: the
    young line names its commit (as a full blame does), the old ones are counted as older."""
    write(git_repo, "app.py", "old_a = 1\nold_b = 2\nkeep = 3\n")
    old = commit(git_repo, "add app", "2024-01-01T00:00:00+00:00")
    write(git_repo, "app.py", "old_a = 1\nold_b = 2\nkeep = 3\nyoung = 4\n")
    young = commit(git_repo, "add young", "2024-03-31T00:00:00+00:00")
    write(git_repo, "app.py", "keep = 3\n")
    fix = commit(git_repo, "fix app", "2024-04-10T00:00:00+00:00")
    prereg = load_preregistration()
    horizon = blame_horizon_days(prereg)
    assert horizon is not None and 10 < horizon < 100

    full = connect(tmp_path / "full.duckdb")
    load_git_history(full, git_repo)
    load_fix_inducing(full, git_repo, full_depth=True)
    bounded = connect(tmp_path / "bounded.duckdb")
    load_git_history(bounded, git_repo)
    summary = load_fix_inducing(bounded, git_repo, prereg=prereg)

    assert summary.reconciles and summary.detail["horizon_days"] == horizon
    assert {r[:5] for r in inducing(full)} == {
        (fix, old, "app.py", 2, "blame"),
        (fix, young, "app.py", 1, "blame"),
    }
    assert {r[:5] for r in inducing(bounded)} == {
        (fix, None, "app.py", 2, METHOD_BEFORE_HORIZON),
        (fix, young, "app.py", 1, "blame"),
    }
    assert summary.detail["methods"] == {"blame": 1}


def test_a_fix_whose_lines_are_all_older_says_so(git_repo: Path, con: Any) -> None:
    write(git_repo, "lib.py", "a = 1\nb = 2\n")
    commit(git_repo, "add lib", "2023-01-01T00:00:00+00:00")
    write(git_repo, "lib.py", "a = 1\n")
    fix = commit(git_repo, "fix lib", "2024-01-01T00:00:00+00:00")
    load_git_history(con, git_repo)
    summary = load_fix_inducing(con, git_repo)
    assert [r[:5] for r in inducing(con)] == [(fix, None, "lib.py", 1, METHOD_BEFORE_HORIZON)]
    assert summary.detail["methods"] == {METHOD_BEFORE_HORIZON: 1}


def test_p2_refuses_a_window_past_the_blame_horizon(git_repo: Path, con: Any) -> None:
    """Blame stopped at the horizon, so a wider P2 window would undercount without a word: it
    is an error naming the repo, both numbers and the fix. A full-depth load has no horizon."""
    write(git_repo, "lib.py", "a = 1\nb = 2\n")
    commit(git_repo, "add lib", "2024-01-01T00:00:00+00:00")
    write(git_repo, "lib.py", "a = 1\n")
    commit(git_repo, "fix lib", "2024-01-20T00:00:00+00:00")
    load_git_history(con, git_repo)
    load_fix_inducing(con, git_repo)
    p = load_preregistration().p2
    horizon = blame_horizon_days(load_preregistration())
    assert horizon is not None
    assert load_history(con, p).szz_repos  # the registered window is inside it
    wider = dataclasses.replace(p, window_days=horizon + 30)
    with pytest.raises(WindowPastBlameHorizon) as exc:
        load_history(con, wider)
    text = str(exc.value)
    assert f"window_days = {horizon + 30}" in text and f"{horizon}-day blame horizon" in text
    assert git_repo.name in text and "Fix: load the repository" in text
    con.execute("DELETE FROM fix_inducing")
    con.execute("DELETE FROM fix_changes")
    load_fix_inducing(con, git_repo, full_depth=True)
    assert load_history(con, wider).szz_repos  # no horizon: any window


@pytest.fixture
def con(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    return connect(tmp_path / "szz.duckdb")


# ------------------------------------------------------------------ real histories, ../shared/


def _clone(shared_dir: Path, name: str, tmp: Path) -> Path:
    clone = tmp / name
    bundle = shared_dir / "data" / "git" / f"{name}.bundle"
    subprocess.run(["git", "clone", "-q", "--mirror", str(bundle), str(clone)], check=True)
    return clone


@pytest.fixture(scope="module", params=["sqlite-utils", "flask"])
def both_depths(
    request: pytest.FixtureRequest, shared_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, duckdb.DuckDBPyConnection, duckdb.DuckDBPyConnection, int]:
    """The repo's history loaded once, then SZZ to the root in one copy, bounded in the other."""
    name: str = request.param
    tmp = tmp_path_factory.mktemp(f"horizon-{name}")
    clone = _clone(shared_dir, name, tmp)
    history = connect(tmp / "history.duckdb")
    load_git_history(history, clone, name=name)
    history.close()
    shutil.copy(tmp / "history.duckdb", tmp / "full.duckdb")
    shutil.move(tmp / "history.duckdb", tmp / "bounded.duckdb")
    full, bounded = connect(tmp / "full.duckdb"), connect(tmp / "bounded.duckdb")
    prereg = load_preregistration()
    horizon = blame_horizon_days(prereg)
    assert horizon is not None
    assert load_fix_inducing(full, clone, name=name, full_depth=True).reconciles
    summary = load_fix_inducing(bounded, clone, name=name, prereg=prereg)
    assert summary.reconciles and summary.rejected == 0
    return name, full, bounded, horizon


@pytest.mark.shared
@pytest.mark.slow(reason="a history with SZZ to the root and bounded (once a repository)")
def test_inside_the_horizon_every_candidate_and_line_is_the_full_blames(
    both_depths: tuple[str, duckdb.DuckDBPyConnection, duckdb.DuckDBPyConnection, int],
) -> None:
    """Per fix and path: the candidates a full blame finds no older than the horizon (by
    committer time) are exactly the bounded blame's, with the same line counts, merge and bulk
    flags and gaps; the full blame's older lines add up to the bounded ``before-horizon`` lines;
    ``fix_changes`` is the same."""
    name, full, bounded, horizon = both_depths
    query = (
        "SELECT f.fix_sha, f.path, f.introducing_sha, f.lines, f.gap_days, "
        "f.introducing_is_merge, f.introducing_is_bulk, "
        "epoch(i.committer_time) >= epoch(x.committer_time) - ? AS inside "
        "FROM fix_inducing f JOIN commits x ON x.repo = f.repo AND x.sha = f.fix_sha "
        "LEFT JOIN commits i ON i.repo = f.repo AND i.sha = f.introducing_sha "
        "WHERE f.method = 'blame' ORDER BY ALL"
    )
    full_rows = full.execute(query, [horizon * DAY]).fetchall()
    bounded_rows = bounded.execute(query, [horizon * DAY]).fetchall()
    inside = [r[:7] for r in full_rows if r[7]]
    older: dict[tuple[str, str], int] = {}
    for r in full_rows:
        if not r[7]:
            older[(r[0], r[1])] = older.get((r[0], r[1]), 0) + r[3]
    assert [r[:7] for r in bounded_rows] == inside
    assert all(r[7] for r in bounded_rows)
    bounded_older = dict(
        ((fix, path), lines)
        for fix, path, lines in bounded.execute(
            "SELECT fix_sha, path, lines FROM fix_inducing WHERE method = ?",
            [METHOD_BEFORE_HORIZON],
        ).fetchall()
    )
    assert bounded_older == older
    changes = "SELECT * EXCLUDE (load_id, szz_version) FROM fix_changes ORDER BY ALL"
    assert full.execute(changes).fetchall() == bounded.execute(changes).fetchall()
    calls = {
        depth: con.execute(
            "SELECT CAST(detail->>'$.blame_calls' AS INTEGER), "
            "CAST(detail->>'$.blames_skipped' AS INTEGER) FROM loads WHERE source = 'git-szz'"
        ).fetchone()
        for depth, con in (("full", full), ("bounded", bounded))
    }
    assert calls["full"] is not None and calls["bounded"] is not None
    # a blame the loaded history shows to be all older is counted, not run
    assert calls["full"] == (calls["bounded"][0] + calls["bounded"][1], 0)
    print(
        f"\n{name}: blame calls {calls}; {len(inside)} candidate rows inside {horizon} days, "
        f"{len(older)} (fix, path) pairs with older lines, {len(full_rows) - len(inside)} older "
        "rows folded"
    )


@pytest.mark.shared
@pytest.mark.slow
def test_p2_counts_the_same_signals_either_way(
    both_depths: tuple[str, duckdb.DuckDBPyConnection, duckdb.DuckDBPyConnection, int],
) -> None:
    name, full, bounded, _ = both_depths
    p = load_preregistration().p2
    ours = find_signals(load_history(bounded, p), p)
    theirs = find_signals(load_history(full, p), p)
    assert ours == theirs
    fixes = [s for s in ours if s.kind == "fix" and s.introducing_sha is not None]
    print(f"\n{name}: {len(ours)} P2 signals, {len(fixes)} fixes paired with a feature change")
    assert fixes  # the comparison covers signals SZZ pairs, not only reverts
