"""The demo's loop world (``simulate/loop.py``): simulated sessions through the real hooks in a
real repository, loaded as ``reflect load git --szz`` loads it, against the simulator's truth.

The world is the demo's (32 sessions, seed 7). The truth is the simulator's own record of what
it did; the database's links, outcomes and P1's AUC must equal it exactly.
"""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agent_reflection.experiments.p1.analysis import run_p1
from agent_reflection.experiments.registration import (
    Preregistration,
    apply_overrides,
    load_preregistration,
)
from agent_reflection.load.git.history import load_git_history
from agent_reflection.load.sessions import load_git_sessions
from agent_reflection.load.sidecars.loader import load_sidecars
from agent_reflection.simulate.loop import (
    CENSORED,
    DURING,
    KINDS,
    NOTE,
    REPO_NAME,
    RIGHT,
    WRONG,
    LoopSpec,
    LoopWorld,
    build_loop_world,
    history_end,
    load_loop_world,
    plan_sessions,
    recovery,
)
from agent_reflection.simulate.session import SimulationFailed
from agent_reflection.store.db import connect
from conftest import run_git


@pytest.fixture(scope="module")
def prereg() -> Preregistration:
    return load_preregistration()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, prereg: Preregistration) -> LoopWorld:
    spec = LoopSpec(window_days=prereg.p1.loop_window_days)
    return build_loop_world(tmp_path_factory.mktemp("loop") / REPO_NAME, spec)


@pytest.fixture(scope="module")
def db(world: LoopWorld, prereg: Preregistration, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("db") / "loop.duckdb"
    con = connect(path)
    try:
        load_loop_world(con, world, prereg)
    finally:
        con.close()
    return path


@pytest.fixture
def con(db: Path) -> Any:
    con = connect(db, read_only=True)
    yield con
    con.close()


# --------------------------------------------------------------------------- the plan (pure)


def test_the_plan_is_seeded_and_holds_every_kind_and_fate() -> None:
    spec = LoopSpec()
    plans = plan_sessions(spec)
    assert plans == plan_sessions(spec)
    assert plans != plan_sessions(LoopSpec(seed=8))
    assert {p.kind for p in plans} == set(KINDS)
    assert {p.fate for p in plans} == {"revert", "fix", "late-fix", "cosmetic-fix", "none"}
    assert all(0.8 < p.confidence < 1 for p in plans), "P1's self-rated-high subset"
    for p in plans:  # a planned-wrong fate lands inside the window, a late fix after it
        days = p.fate_delay.days
        if p.fate in ("revert", "fix", "cosmetic-fix"):
            assert 1 <= days <= spec.window_days - 5
        elif p.fate == "late-fix":
            assert days >= spec.window_days + 5
        assert p.planned_wrong == (p.fate in ("revert", "fix"))


def test_spec_refuses_what_cannot_be_simulated() -> None:
    with pytest.raises(ValueError, match="sessions"):
        LoopSpec(sessions=0)
    with pytest.raises(ValueError, match="wrong_share"):
        LoopSpec(wrong_share=1.0)


def test_the_world_refuses_a_used_folder(tmp_path: Path) -> None:
    (tmp_path / REPO_NAME).mkdir()
    with pytest.raises(SimulationFailed, match="already exists"):
        build_loop_world(tmp_path / REPO_NAME, LoopSpec(sessions=1))


# --------------------------------------------------------------------------- the demo's world


@pytest.mark.slow
def test_the_world_has_every_link_and_outcome(world: LoopWorld) -> None:
    counts = world.counts()
    assert counts["sessions"] == 32
    assert counts[DURING] > 0 and counts[NOTE] > 0
    assert min(counts[WRONG], counts[RIGHT], counts[CENSORED]) > 0
    fates = Counter((s.plan.fate, s.outcome) for s in world.sessions)
    # both kinds of evidence, and later commits on right sessions that must not count
    assert fates[("revert", WRONG)] and fates[("fix", WRONG)]
    assert fates[("late-fix", RIGHT)] and fates[("cosmetic-fix", RIGHT)]
    assert max(len(s.commits) for s in world.sessions) == 2
    assert world.as_of == history_end(world.spec)


@pytest.mark.slow
def test_session_commits_equal_the_truth(world: LoopWorld, con: Any) -> None:
    rows = con.execute(
        "SELECT session_id, sha, link FROM session_commits WHERE repo = ?", [REPO_NAME]
    ).fetchall()
    assert len(rows) == len(set(rows))
    assert set(rows) == world.link_rows()


@pytest.mark.slow
def test_session_outcomes_and_evidence_equal_the_truth(world: LoopWorld, con: Any) -> None:
    rows = con.execute(
        "SELECT session_id, outcome, rule, evidence_sha FROM session_outcomes WHERE repo = ?",
        [REPO_NAME],
    ).fetchall()
    assert {r[0]: r[1] for r in rows} == world.outcomes()
    evidence = {s.plan.session_id: s.fate_sha for s in world.sessions if s.outcome == WRONG}
    assert {r[0]: r[3] for r in rows if r[1] == WRONG} == evidence
    rule = {"revert": "reverted", "fix": "szz-fix"}
    by_id = {s.plan.session_id: s for s in world.sessions}
    for session_id, outcome, got, _ in rows:
        if outcome == WRONG:
            assert got == rule[by_id[session_id].plan.fate]
    found = recovery(con, world)
    assert found.links_equal and found.outcomes_equal


@pytest.mark.slow
def test_notes_name_exactly_the_commits_of_left_over_work(world: LoopWorld, con: Any) -> None:
    """The post-commit hook ran on every commit of the clone; it noted the human commits of
    what a session left uncommitted, and nothing else."""
    listed = run_git(world.repo, "notes", "--ref", "reflection", "list").split()
    noted = set(listed[1::2])  # "<note blob> <commit>" pairs
    assert noted == {sha for _, sha, link in world.link_rows() if link == NOTE}
    sidecars = con.execute("SELECT count(*), count(DISTINCT session_id) FROM reflections")
    assert sidecars.fetchone() == (32, 32), "sidecar files and notes load idempotently"


@pytest.mark.slow
def test_p1_on_loop_labels_recovers_the_truth(
    world: LoopWorld, con: Any, prereg: Preregistration
) -> None:
    result = run_p1(con, apply_overrides(prereg, {"p1.label_source": "loop"}))
    labelled = world.labelled()
    assert result.n == len(labelled)
    assert result.details["loop"]["counts"]["censored"] == world.counts()[CENSORED]
    assert result.metric.interval.value == pytest.approx(world.realised_auc(), abs=1e-12)
    assert result.metric.interval.ci_low is not None and result.metric.interval.ci_high is not None
    assert result.metric.interval.ci_low <= world.spec.auc <= result.metric.interval.ci_high
    assert result.exploratory, "label_source differs from the registered file"


# --------------------------------------------------------------------------- the checks can fail


@pytest.mark.slow
def test_without_szz_the_fixed_sessions_are_not_found_wrong(
    world: LoopWorld, prereg: Preregistration, tmp_path: Path
) -> None:
    con = connect(tmp_path / "no-szz.duckdb")
    try:
        load_sidecars(con, [world.sidecar_dir])
        load_git_history(con, world.repo, name=REPO_NAME)
        load_git_sessions(con, world.repo, prereg, name=REPO_NAME)
        found = recovery(con, world)
    finally:
        con.close()
    fixed = {
        s.plan.session_id for s in world.sessions if s.plan.fate == "fix" and s.outcome == WRONG
    }
    assert found.links_equal and not found.outcomes_equal
    assert {m.split(":")[0] for m in found.mismatches} == fixed


@pytest.mark.slow
def test_a_clone_without_the_notes_loses_the_note_links(
    world: LoopWorld, prereg: Preregistration, tmp_path: Path
) -> None:
    """`git clone` does not fetch refs/notes/reflection: the human commits of left-over work
    are then linked to no session (docs/capture.md: push and fetch the notes ref)."""
    clone = tmp_path / REPO_NAME
    subprocess.run(["git", "clone", "-q", str(world.repo), str(clone)], check=True)
    con = connect(tmp_path / "clone.duckdb")
    try:
        load_loop_world(con, _moved(world, clone), prereg)
        found = recovery(con, world)
        query = "SELECT DISTINCT link FROM session_commits WHERE repo = ?"
        links = {r[0] for r in con.execute(query, [REPO_NAME]).fetchall()}
    finally:
        con.close()
    assert links == {DURING}
    assert not found.links_equal
    assert found.links_true - found.links_found == world.counts()[NOTE]


def _moved(world: LoopWorld, repo: Path) -> LoopWorld:
    """The same truth, its repository read from ``repo`` (the sidecars stay where they are)."""
    return LoopWorld(repo, world.sidecar_dir, world.spec, world.sessions, world.as_of)
