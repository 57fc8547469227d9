"""Agent-authored vs human commits (experiments/agent_vs_human/, `reflect run agent-vs-human`).

A real repository built here, with dates chosen so that every number is known by construction:
which commits are agent-marked, which one a revert undoes, which one SZZ blames for a later
fix, which fix is cosmetic, which commits are censored and how many of their lines survive.
Then the sqlite-utils history in ../shared/ through the real CLI (slow).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from agent_reflection.experiments.agent_vs_human import analysis as avh
from agent_reflection.experiments.agent_vs_human import report
from agent_reflection.experiments.registration import (
    AgentVsHumanParams,
    InvalidPreregistration,
    apply_overrides,
    load_preregistration,
)
from agent_reflection.experiments.report import read_summary
from agent_reflection.load.git.history import load_git_history
from agent_reflection.load.git.repo import open_repo
from agent_reflection.load.git.szz import load_fix_inducing
from agent_reflection.stats.wilson import wilson_ci
from agent_reflection.store.db import connect
from cli_inprocess import reflect
from conftest import run_git

CLAUDE_TRAILER = "\n\nCo-Authored-By: Claude <noreply@anthropic.com>"
COPILOT_TRAILER = "\n\nCo-authored-by: Copilot <175728472+Copilot@users.noreply.github.com>"


@pytest.fixture(scope="module")
def prereg_params() -> tuple[AgentVsHumanParams, str]:
    prereg = load_preregistration()
    return prereg.agent_vs_human, prereg.p2.cosmetic_lint_message


def at(day: str) -> dict[str, str]:
    stamp = f"{day}T12:00:00+00:00"
    return {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}


def write_commit(repo: Path, day: str, message: str, files: dict[str, str], **env: str) -> str:
    for name, text in files.items():
        path = repo / name
        if text:
            path.write_text(text)
            run_git(repo, "add", name)
        else:
            run_git(repo, "rm", "-q", name)
    run_git(repo, "commit", "-q", "-m", message, env={**at(day), **env})
    return run_git(repo, "rev-parse", "HEAD").strip()


def lines(*values: str) -> str:
    return "".join(f"{v}\n" for v in values)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The repository (see the module docstring); returns its commit ids by role."""
    repo = tmp_path_factory.mktemp("avh") / "repo"
    repo.mkdir()
    run_git(repo, "init", "-q", "-b", "main")
    c: dict[str, str] = {"path": str(repo)}
    c["c0"] = write_commit(repo, "2025-06-01", "Add base", {"base.py": lines("base = 1")})
    c["a1"] = write_commit(
        repo,
        "2026-01-05",
        "Add feature a" + CLAUDE_TRAILER,
        {"a.py": lines("a_1 = 1", "a_2 = 2", "a_3 = 3", "a_4 = 4")},
    )
    claude = {"GIT_AUTHOR_NAME": "Claude", "GIT_AUTHOR_EMAIL": "noreply@anthropic.com"}
    c["a2"] = write_commit(
        repo,
        "2026-01-06",
        "Add feature b",
        {"b.py": lines("b_1 = 1", "b_2 = 2", "b_3 = 3")},
        **claude,
    )
    c["h1"] = write_commit(
        repo,
        "2026-01-07",
        "Add helper",
        {"h.py": lines("h_1 = 1", "h_2 = 2", "h_3 = 3", "h_4 = 4", "h_5 = 5")},
    )
    run_git(repo, "revert", "--no-edit", c["a2"], env=at("2026-01-10"))
    c["r1"] = run_git(repo, "rev-parse", "HEAD").strip()
    c["f1"] = write_commit(
        repo,
        "2026-01-20",
        "Fix feature a returning the wrong value",
        {"a.py": lines("a_1 = 1", "a_2 = 20", "a_3 = 3", "a_4 = 4")},
    )
    c["h2"] = write_commit(repo, "2026-02-01", "Add more", {"m.py": lines("m_1 = 1", "m_2 = 2")})
    c["l1"] = write_commit(
        repo,
        "2026-02-03",
        "Fix flake8 error in helper",
        {"h.py": lines("h_1 = 1.0", "h_2 = 2", "h_3 = 3", "h_4 = 4", "h_5 = 5")},
    )
    c["a3"] = write_commit(
        repo, "2026-02-15", "Add feature c" + COPILOT_TRAILER, {"c.py": lines("c_1 = 1", "c_2 = 2")}
    )
    c["late"] = write_commit(repo, "2026-02-25", "Add late", {"z.py": lines("z = 1")})
    # an agent commit on a branch never merged: not on main's line of history
    run_git(repo, "checkout", "-q", "-b", "claude/side", c["a1"])
    c["off"] = write_commit(repo, "2026-01-08", "Try d" + CLAUDE_TRAILER, {"d.py": lines("d = 1")})
    run_git(repo, "checkout", "-q", "main")
    return c


@pytest.fixture(scope="module")
def db(history: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("avh-db") / "avh.duckdb"
    con = connect(path)
    load_git_history(con, history["path"])
    load_fix_inducing(con, history["path"])
    con.close()
    return path


def analyse(
    db: Path, history: dict[str, str], params: AgentVsHumanParams, cosmetic: str, **kw: object
) -> avh.AgentVsHuman:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return avh.run_agent_vs_human(
            con,
            open_repo(history["path"]),
            params,
            cosmetic_message=cosmetic,
            **kw,  # type: ignore[arg-type]
        )
    finally:
        con.close()


def test_agent_vs_human_on_a_repository_built_by_hand(
    db: Path, history: dict[str, str], prereg_params: tuple[AgentVsHumanParams, str]
) -> None:
    params, cosmetic = prereg_params
    params = replace(params, min_group_commits=2)
    result = analyse(db, history, params, cosmetic)
    c = history
    assert result.head == "HEAD"
    assert result.months == ("2026-01", "2026-02")  # 2025-06 holds no agent commit
    assert result.as_of == datetime(2026, 2, 25, 12, tzinfo=UTC)
    assert (result.agent_commits_loaded, result.agent_commits_on_head) == (4, 3)
    fates = {f.sha: f for f in result.fates}
    assert set(fates) == {c[k] for k in ("a1", "a2", "h1", "r1", "f1", "h2", "l1", "a3", "late")}
    assert fates[c["a2"]].days_to_revert == pytest.approx(4.0)
    assert fates[c["a1"]].days_to_fix == pytest.approx(15.0)
    # the flake8 fix is cosmetic: it fixes nothing, and blame passes over it
    assert fates[c["h1"]].days_to_fix is None
    assert result.cosmetic_fixes == (c["l1"],)
    assert result.cosmetic_fixes_of_compared == 1
    assert (fates[c["h1"]].lines_added, fates[c["h1"]].lines_surviving) == (5, 5)
    assert fates[c["l1"]].lines_surviving is None
    assert (fates[c["a1"]].lines_added, fates[c["a1"]].lines_surviving) == (4, 3)
    assert (fates[c["a2"]].lines_added, fates[c["a2"]].lines_surviving) == (3, 0)

    agent, human = result.group("agent"), result.group("human")
    # a3 (10 days before the last commit) is censored; a1 fixed, a2 reverted
    assert (agent.commits, agent.followed_up, agent.censored) == (3, 2, 1)
    assert agent.reverted == wilson_ci(1, 2, 0.95)
    assert agent.fixed == wilson_ci(1, 2, 0.95)
    assert (agent.fixed_ever, agent.median_days_to_fix, agent.never_fixed) == (1, 15.0, 2)
    assert (agent.lines_added, agent.lines_surviving) == (9, 5)  # a1 3/4, a2 0/3, a3 2/2
    # human: h1, r1, f1 followed; h2, l1 and late censored (under 30 days before the end)
    assert (human.commits, human.followed_up, human.censored) == (6, 3, 3)
    assert human.reverted == wilson_ci(0, 3, 0.95)
    assert human.fixed == wilson_ci(0, 3, 0.95)
    assert (human.lines_added, human.lines_surviving) == (9, 9)  # h1 5, f1 1, h2 2, late 1
    assert result.enough_agent_commits
    assert [d.measure for d in result.differences] == ["reverted", "fixed"]
    assert result.differences[1].value == pytest.approx(0.5)
    clustered = result.differences[1].clustered
    assert clustered is not None
    assert (clustered.agent_days, clustered.human_days) == (2, 3)
    assert (clustered.resamples, clustered.seed) == (params.bootstrap_resamples, params.seed)
    # one agent has two followed-up commits, the other none: only the first gets a row
    assert [g.group for g in result.groups] == ["agent", "human", "claude-code"]
    notes = " ".join(result.notes)
    assert "1 of 4 agent-marked commits are not on HEAD" in notes
    assert "1 agent and 3 human commits" in notes


def test_without_the_cosmetic_rule_the_lint_fix_counts(
    db: Path, history: dict[str, str], prereg_params: tuple[AgentVsHumanParams, str]
) -> None:
    params, cosmetic = prereg_params
    params = replace(params, exclude_cosmetic_fixes=False, min_group_commits=2)
    result = analyse(db, history, params, cosmetic)
    fates = {f.sha: f for f in result.fates}
    assert fates[history["h1"]].days_to_fix == pytest.approx(27.0)
    assert (fates[history["h1"]].lines_surviving, fates[history["l1"]].lines_surviving) == (4, 1)
    assert result.group("human").fixed == wilson_ci(1, 3, 0.95)
    assert result.cosmetic_fixes == ()


def test_too_few_agent_commits_draws_no_comparison(
    db: Path, history: dict[str, str], prereg_params: tuple[AgentVsHumanParams, str]
) -> None:
    params, cosmetic = prereg_params  # the registered minimum (30) is far above 2
    result = analyse(db, history, params, cosmetic, survival=False)
    assert not result.enough_agent_commits
    assert result.differences == ()
    assert result.notes[0].startswith("Too few agent commits: 2 followed-up agent commit(s)")
    assert all(f.lines_surviving is None for f in result.fates)
    opening = report.summary(result)
    assert opening.exploratory
    assert dict(opening.facts)["comparison"].startswith("none drawn: 2 followed-up agent")


def test_span_all_compares_every_month(
    db: Path, history: dict[str, str], prereg_params: tuple[AgentVsHumanParams, str]
) -> None:
    params, cosmetic = prereg_params
    result = analyse(db, history, replace(params, span="all"), cosmetic, survival=False)
    assert result.months == ("2025-06", "2026-01", "2026-02")
    assert history["c0"] in {f.sha for f in result.fates}


def test_head_other_than_the_default(
    db: Path, history: dict[str, str], prereg_params: tuple[AgentVsHumanParams, str]
) -> None:
    params, cosmetic = prereg_params
    result = analyse(db, history, params, cosmetic, head="claude/side", survival=False)
    assert result.head == "claude/side"
    assert {f.sha for f in result.fates} == {history["a1"], history["off"]}
    with pytest.raises(avh.AgentVsHumanError, match="no commit named nope"):
        analyse(db, history, params, cosmetic, head="nope")


def test_missing_szz_and_missing_repo_are_clear_errors(
    history: dict[str, str], tmp_path: Path, prereg_params: tuple[AgentVsHumanParams, str]
) -> None:
    params, _ = prereg_params
    con = connect(tmp_path / "no-szz.duckdb")
    with pytest.raises(avh.AgentVsHumanError, match="no commits in the database"):
        avh.read_history(con, "repo", params.time_column)
    load_git_history(con, history["path"])
    with pytest.raises(avh.AgentVsHumanError, match=r"reflect load git REPO --szz"):
        avh.read_history(con, "repo", params.time_column)


def test_newcombe_interval_matches_the_published_example() -> None:
    # Newcombe (1998), Statistics in Medicine 17:873, table II, example (a): 56/70 vs 48/80,
    # method 10 (score, no continuity correction): 0.0524 to 0.3339
    diff = avh.newcombe_difference("x", wilson_ci(56, 70), wilson_ci(48, 80))
    assert diff.value == pytest.approx(0.2)
    assert (round(diff.ci_low, 4), round(diff.ci_high, 4)) == (0.0524, 0.3339)


def test_events_before_the_commit_or_off_the_line_do_not_count() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    records = [
        avh.CommitRecord("a", "claude-code", t0, False, True, 2),
        avh.CommitRecord("m", None, t0, True, True, 0),  # a merge: never compared
        avh.CommitRecord("h", None, t0 + timedelta(days=1), False, False, 3),
    ]
    events = [
        avh.FollowingEvent("fix", "a", "x", t0 - timedelta(days=1)),  # before the commit
        avh.FollowingEvent("revert", "a", "off", t0 + timedelta(days=2)),  # not on the line
        avh.FollowingEvent("fix", "h", "y", t0 + timedelta(days=3)),
    ]
    on_head = frozenset({"a", "m", "h", "x", "y"})
    counted, cosmetic = avh.counted_events(events, on_head, None)
    fates = avh.commit_fates(records, counted, on_head, {"a": 5}, t0 + timedelta(days=10))
    assert [f.sha for f in fates] == ["a", "h"]
    assert (fates[0].days_to_fix, fates[0].days_to_revert) == (None, None)
    assert fates[0].lines_surviving == 2  # never more than it added
    assert fates[1].days_to_fix == pytest.approx(2.0)
    assert (fates[1].lines_added, fates[1].lines_surviving) == (None, None)  # files unavailable
    assert cosmetic == frozenset()


def test_preregistration_section_is_validated() -> None:
    prereg = load_preregistration()
    with pytest.raises(InvalidPreregistration, match="span must be one of"):
        apply_overrides(prereg, {"agent_vs_human.span": "recent"})
    with pytest.raises(InvalidPreregistration, match="min_group_commits must be >= 1"):
        apply_overrides(prereg, {"agent_vs_human.min_group_commits": 0})
    changed = apply_overrides(prereg, {"agent_vs_human.follow_up_days": 14})
    assert changed.exploratory and changed.agent_vs_human.follow_up_days == 14


def test_cli_refuses_a_repository_that_does_not_exist(tmp_path: Path) -> None:
    done = reflect("run", "agent-vs-human", str(tmp_path / "nope"), "--db", str(tmp_path / "x"))
    assert done.returncode != 0
    assert "no such file or folder" in done.stderr


@pytest.mark.slow
def test_cli_on_the_built_repository(db: Path, history: dict[str, str], tmp_path: Path) -> None:
    """The real CLI runs the notebook: the terminal lines are the summary the report opens
    with, and the tables are written beside it."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent_reflection",
            "run",
            "agent-vs-human",
            history["path"],
            "--db",
            str(db),
            "--out",
            str(tmp_path / "reports"),
            "--run-id",
            "r",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "CI": "1"},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out_dir = tmp_path / "reports" / "r" / "agent-vs-human"
    summary = read_summary(out_dir)
    assert summary is not None and summary.exploratory
    assert done.stdout.splitlines()[: len(summary.lines())] == list(summary.lines())
    assert dict(summary.facts)["comparison"].startswith("none drawn")
    fates = (out_dir / "fates.csv").read_text().splitlines()
    assert len(fates) == 1 + 9
    html = (out_dir / "report.html").read_text("utf-8")
    assert "filled in by the last cell.</p>" not in html
    assert (out_dir / "agent_vs_human.png").is_file()


@pytest.mark.slow
def test_sqlite_utils(shared_dir: Path, tmp_path: Path) -> None:
    """The real public history docs/experiments.md reports: loaded with SZZ, then analysed.
    The checks are the facts a reader can verify with git: the agent commits on main, the
    months, and that every compared commit is on main."""
    bundle = shared_dir / "data/git/sqlite-utils.bundle"
    cache = tmp_path / "cache"
    con = connect(tmp_path / "su.duckdb")
    load_git_history(con, bundle, cache_dir=cache)
    load_fix_inducing(con, bundle, cache_dir=cache)
    prereg = load_preregistration()
    source = open_repo(bundle, cache_dir=cache)
    result = avh.run_agent_vs_human(
        con, source, prereg.agent_vs_human, cosmetic_message=prereg.p2.cosmetic_lint_message
    )
    main = set(
        subprocess.run(
            ["git", "-C", str(source.path), "rev-list", "main"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
    )
    assert result.head == "main"  # the bundle's HEAD names a branch it does not have
    assert {f.sha for f in result.fates} <= main
    assert result.months == ("2025-11", "2025-12", "2026-07")
    assert (result.agent_commits_loaded, result.agent_commits_on_head) == (108, 78)
    agent, human = result.group("agent"), result.group("human")
    # 8 human release commits of those months are in neither group since issue 32 (76 before)
    assert (agent.commits, human.commits) == (78, 68)
    assert result.left_out == {"release": {"human": 8}}
    assert result.enough_agent_commits
    assert agent.reverted is not None and human.reverted is not None
    assert agent.reverted.successes == human.reverted.successes == 0


def _fates(
    group: str | None, days: int, per_day: int, fixed: dict[int, int]
) -> list[avh.CommitFate]:
    """``days`` x ``per_day`` followed-up commits; ``fixed`` maps a day to its fixed commits."""
    t0 = datetime(2026, 3, 1, 9, tzinfo=UTC)
    return [
        avh.CommitFate(
            sha=f"{group}-{d}-{i}",
            agent=group,
            at=t0 + timedelta(days=d, minutes=i),
            follow_up_days=100.0,
            days_to_revert=None,
            days_to_fix=1.0 if i < fixed.get(d, 0) else None,
            lines_added=1,
            lines_surviving=1,
        )
        for d in range(days)
        for i in range(per_day)
    ]


def test_resampling_days_widens_the_interval_when_fixes_cluster_in_one_day() -> None:
    """All five agent fixes fall on one of ten days: as independent commits, 5/50 against 0/50
    is a difference (Newcombe's interval excludes 0); with days resampled the chance that the
    day is not drawn, 0.9^10 = 35%, puts 0 inside the interval."""
    agent = _fates("claude-code", 10, 5, {0: 5})
    human = _fates(None, 10, 5, {})
    newcombe = avh.newcombe_difference("fixed", wilson_ci(5, 50), wilson_ci(0, 50))
    assert newcombe.ci_low > 0
    clustered = avh.day_clustered_interval("fixed", agent, human, 30, 0.95, 2000, 7)
    assert clustered is not None and (clustered.agent_days, clustered.human_days) == (10, 10)
    assert clustered.ci_low == 0.0 and clustered.ci_high > newcombe.ci_high
    diff = replace(newcombe, clustered=clustered)
    assert not report.excludes_zero(diff)
    # the same fixes spread over five days: the days no longer hide them as often
    spread = avh.day_clustered_interval(
        "fixed",
        _fates("claude-code", 10, 5, {0: 1, 2: 1, 4: 1, 6: 1, 8: 1}),
        human,
        30,
        0.95,
        2000,
        7,
    )
    assert spread is not None and spread.ci_low > 0
    # seeded: the same call gives the same interval; no event at all gives none
    assert avh.day_clustered_interval("fixed", agent, human, 30, 0.95, 2000, 7) == clustered
    assert avh.day_clustered_interval("fixed", human, human, 30, 0.95, 2000, 7) is None
