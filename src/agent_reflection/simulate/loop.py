"""Simulated agent sessions in one real repository, through the real hooks, with known outcomes.

:func:`build_loop_world` plays a team's history for P1 on loop labels. Each simulated session:

1. runs the real ``SessionStart`` hook (a subprocess, the event on stdin, as Claude Code does);
2. writes a new module (and its test) and, by its kind, commits them during the session
   (``during``: one or two commits), leaves them uncommitted (``later``) or commits the module
   and leaves the test (``mixed``);
3. writes its self-report and runs the real Stop hook, which writes the reflection.v1 sidecar
   with the session's git facts;
4. what it left uncommitted is committed by a human right after; the ``post-commit`` hook that
   ``reflect hook install --git`` installs notes that commit with the session in
   ``refs/notes/reflection``.

Every commit made in this clone runs that hook. A teammate's later commits (made, as in their
own clone, without the hook) decide the sessions' fates: a session planned *wrong* has one of
its commits reverted (``git revert``) or fixed on the lines it wrote (a ``fix:`` commit, found
by SZZ) within the window; a session planned *right* has no later commit on its work, or one
that must not count: a fix after the window, or a type-annotation fix (the
``loop_ignore_cosmetic_fixes`` rule). The history ends ``follow_up_days`` after the last
session, so the last sessions without evidence are censored.

The truth is the simulator's own record, never read back from git or the database: which
commits each session made and how they are linked (:meth:`LoopWorld.link_rows`), and each
session's outcome under the pre-registered rule (:meth:`LoopWorld.outcomes`). Confidences
come from :func:`~agent_reflection.simulate.calibration.simulate_calibration`, binormal with
population AUC ``auc`` for "not wrong" (all in [0.8, 1], P1's self-rated-high subset). Which
sessions end up labelled (not censored) depends on their class and their time, never on their
confidence within a class, so the labelled sessions' population AUC is ``auc`` too.
:meth:`LoopWorld.realised_auc` is the AUC of the labelled sessions as drawn (pair counting,
independent of ``stats/``): P1 on loop labels reproduces it exactly when the links and
outcomes it derives are exact.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_reflection.simulate import DEMO_LOOP_SESSIONS
from agent_reflection.simulate.session import (
    SimulationFailed,
    commit_env,
    git,
    run_hook,
    run_stop_hook,
    write_files,
)

if TYPE_CHECKING:
    import duckdb

    from agent_reflection.experiments.registration import Preregistration
    from agent_reflection.experiments.runner import RunReport

REPO_NAME = "loop-repo"
AGENT = "demo-agent"
BASE = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
#: (risk-floor surface, folder): where a session's module lives; the self-report names it.
AREAS: tuple[tuple[str, str], ...] = (
    ("auth", "src/shop/auth"),
    ("data", "src/shop/repository"),
    ("none", "src/shop/core"),
)
#: Session kinds, cycled so that any four consecutive sessions hold every kind of link.
KINDS: tuple[str, ...] = ("during", "later", "during2", "mixed")
WRONG, RIGHT, CENSORED = "wrong", "right-so-far", "censored"
DURING, NOTE = "during-session", "note"
AGENT_TRAILER = "\n\nCo-Authored-By: Claude <noreply@anthropic.com>"
HUMAN = ("Dana Dev", "dana@example.com")
#: who reverts and fixes, in a clone of their own: the post-commit hook is not installed there
TEAMMATE = ("Sam Reviewer", "sam@example.com")
BOT = ("Demo Agent", "agent@example.com")


@dataclass(frozen=True)
class LoopSpec:
    """The world to simulate (every default is the demo's)."""

    sessions: int = DEMO_LOOP_SESSIONS
    auc: float = 0.80
    wrong_share: float = 0.4
    #: days of history after the last session: sessions after ``end - window_days`` are censored
    #: unless evidence came first (26 with a 30-day window: the last four or so)
    follow_up_days: int = 26
    #: the outcome window: ``[p1] loop_window_days``
    window_days: int = 30
    #: right sessions whose module gets a fix after the window / a cosmetic (lint) fix within it
    late_fix_share: float = 0.15
    cosmetic_fix_share: float = 0.15
    seed: int = 7

    def __post_init__(self) -> None:
        if self.sessions < 1:
            raise ValueError(f"sessions must be >= 1, got {self.sessions}")
        if not 0 < self.wrong_share < 1:
            raise ValueError(f"wrong_share must be in (0, 1), got {self.wrong_share}")
        if self.window_days < 8:
            raise ValueError(f"window_days must be >= 8, got {self.window_days}")


@dataclass(frozen=True)
class SessionPlan:
    """What one session will do, drawn before anything runs (pure)."""

    index: int
    session_id: str
    start: datetime
    kind: str
    area: str
    folder: str
    confidence: float
    planned_wrong: bool
    #: revert | fix (wrong), late-fix | cosmetic-fix | none (right)
    fate: str
    fate_delay: timedelta
    #: for a revert: which of the session's commits (index into its commits, modulo)
    fate_target: int


@dataclass(frozen=True)
class SessionTruth:
    """One session as it happened: its commits and links, its fate and outcome."""

    plan: SessionPlan
    #: (sha, committer time, link) of every commit holding the session's work
    commits: tuple[tuple[str, datetime, str], ...]
    #: the fate commit, when it landed before the history ended
    fate_sha: str | None
    outcome: str


@dataclass(frozen=True)
class LoopWorld:
    """The repository and the truth about every session in it."""

    repo: Path
    sidecar_dir: Path
    spec: LoopSpec
    sessions: tuple[SessionTruth, ...]
    as_of: datetime

    def link_rows(self) -> set[tuple[str, str, str]]:
        """``(session_id, sha, link)``: what ``session_commits`` must hold for this repo."""
        return {(s.plan.session_id, sha, link) for s in self.sessions for sha, _, link in s.commits}

    def outcomes(self) -> dict[str, str]:
        return {s.plan.session_id: s.outcome for s in self.sessions}

    def labelled(self) -> tuple[SessionTruth, ...]:
        return tuple(s for s in self.sessions if s.outcome != CENSORED)

    def realised_auc(self) -> float:
        """AUC of confidence for "not wrong" over the labelled sessions: the share of
        (right-so-far, wrong) pairs the confidence orders correctly, ties counting one half."""
        right = [s.plan.confidence for s in self.labelled() if s.outcome == RIGHT]
        wrong = [s.plan.confidence for s in self.labelled() if s.outcome == WRONG]
        if not right or not wrong:
            raise ValueError("the realised AUC needs right-so-far and wrong sessions")
        won = sum((r > w) + 0.5 * (r == w) for r in right for w in wrong)
        return won / (len(right) * len(wrong))

    def counts(self) -> dict[str, int]:
        links = [link for s in self.sessions for _, _, link in s.commits]
        outcomes = [s.outcome for s in self.sessions]
        return {
            "sessions": len(self.sessions),
            "commits": len(links),
            DURING: links.count(DURING),
            NOTE: links.count(NOTE),
            WRONG: outcomes.count(WRONG),
            RIGHT: outcomes.count(RIGHT),
            CENSORED: outcomes.count(CENSORED),
        }


def plan_sessions(spec: LoopSpec) -> tuple[SessionPlan, ...]:
    """Every session's plan (seeded; no git, no files)."""
    import numpy as np  # here, not at the top: `reflect demo --help` stays light

    from agent_reflection.simulate.calibration import StratumSpec, simulate_calibration

    rng = np.random.default_rng(spec.seed)
    draws = simulate_calibration(
        [StratumSpec("loop", spec.sessions, spec.auc, base_rate=1 - spec.wrong_share)],
        seed=spec.seed,
    )
    plans = []
    for i in range(spec.sessions):
        wrong = not bool(draws["correct"].iloc[i])
        u = float(rng.random())
        if wrong:
            fate = "revert" if u < 0.5 else "fix"
            days = float(rng.uniform(1, spec.window_days - 5))
        elif u < spec.late_fix_share:
            fate = "late-fix"
            days = float(rng.uniform(spec.window_days + 5, spec.window_days + 15))
        elif u < spec.late_fix_share + spec.cosmetic_fix_share:
            fate = "cosmetic-fix"
            days = float(rng.uniform(1, spec.window_days - 5))
        else:
            fate, days = "none", 0.0
        area, folder = AREAS[int(rng.integers(len(AREAS)))]
        plans.append(
            SessionPlan(
                index=i,
                session_id=f"loop-{i:03d}",
                start=BASE + timedelta(days=i),
                kind=KINDS[i % len(KINDS)],
                area=area,
                folder=folder,
                confidence=float(draws["confidence"].iloc[i]),
                planned_wrong=wrong,
                fate=fate,
                # whole days after the target's day, at 21:00: after that day's commits
                # (10:00, 11:00, 17:00), before the next session starts (09:00)
                fate_delay=timedelta(days=int(days), hours=21),
                fate_target=int(rng.integers(2)),
            )
        )
    return tuple(plans)


def history_end(spec: LoopSpec) -> datetime:
    """The history's last commit: 22:00, after any fate of that day."""
    return BASE + timedelta(days=spec.sessions - 1 + spec.follow_up_days, hours=13)


def build_loop_world(path: Path, spec: LoopSpec | None = None) -> LoopWorld:
    """Build the repository at ``path`` (must not exist) by running every session's hooks."""
    spec = spec or LoopSpec()
    if path.exists():
        raise SimulationFailed(f"{path} already exists; pick an empty folder")
    plans = plan_sessions(spec)
    end = history_end(spec)
    repo = _Repo(path, path.parent / f"{path.name}-hook-state")
    repo.start()
    made: dict[int, list[tuple[str, datetime, str]]] = {}
    fates: dict[int, tuple[str, datetime]] = {}
    # sessions in time order, each fate when its time comes: a fate before the next session
    for plan in plans:
        due = [(t, i) for t, i in _pending(plans, made, fates) if t < plan.start]
        for when, i in sorted(due):
            fates[i] = (repo.fate(plans[i], made[i], when), when)
        made[plan.index] = repo.session(plan)
    for when, i in sorted(_pending(plans, made, fates)):
        if when <= end:
            fates[i] = (repo.fate(plans[i], made[i], when), when)
    release = {"CHANGELOG.md": "# Changes\n\n- release\n"}
    repo.commit(end, "docs: release notes", release, TEAMMATE)
    window = timedelta(days=spec.window_days)
    truths = []
    for plan in plans:
        commits = tuple(made[plan.index])
        fate_sha, fate_time = fates.get(plan.index, (None, None))
        if (
            plan.planned_wrong
            and fate_time is not None
            and fate_time <= _target(plan, commits)[1] + window
        ):
            outcome = WRONG
        elif end < max(t for _, t, _ in commits) + window:
            outcome = CENSORED
        else:
            outcome = RIGHT
        truths.append(SessionTruth(plan, commits, fate_sha, outcome))
    return LoopWorld(path, path / ".reflection" / "sidecars", spec, tuple(truths), end)


def _pending(
    plans: Sequence[SessionPlan],
    made: Mapping[int, list[tuple[str, datetime, str]]],
    fates: Mapping[int, tuple[str, datetime]],
) -> list[tuple[datetime, int]]:
    """(time, session index) of the fates not yet played whose session has run."""
    out = []
    for i, commits in made.items():
        if plans[i].fate != "none" and i not in fates:
            # the delay counts from the midnight that starts the targeted commit's day
            when = _target(plans[i], commits)[1]
            midnight = when.replace(hour=0, minute=0, second=0, microsecond=0)
            out.append((midnight + plans[i].fate_delay, i))
    return out


def _target(
    plan: SessionPlan, commits: Sequence[tuple[str, datetime, str]]
) -> tuple[str, datetime, str]:
    """The commit a fate acts on: a revert picks one of the session's commits; a fix edits the
    module's lines, so it blames the commit that added the module (the session's first)."""
    if plan.fate == "revert":
        return commits[plan.fate_target % len(commits)]
    return commits[0]


def _module(plan: SessionPlan) -> tuple[str, str]:
    name = f"feature_{plan.index:03d}"
    return f"{plan.folder}/{name}.py", name


def _module_text(plan: SessionPlan, *, fixed: bool = False, annotated: bool = False) -> str:
    _, name = _module(plan)
    signature = f"def {name}(value: int) -> int:" if annotated else f"def {name}(value):"
    body = f"max(value, 0) + {plan.index}" if fixed else f"value + {plan.index}"
    return f'"""Feature {plan.index} ({plan.area})."""\n\n\n{signature}\n    return {body}\n'


def _test_text(plan: SessionPlan) -> str:
    path, name = _module(plan)
    package = path.removesuffix(".py").replace("/", ".").removeprefix("src.")
    return (
        f"from {package} import {name}\n\n\ndef test_{name}():\n"
        f"    assert {name}(1) == {1 + plan.index}\n"
    )


class _Repo:
    """The repository the sessions work in, its hooks and its clock."""

    def __init__(self, path: Path, state_dir: Path) -> None:
        self.path = path
        self.state_dir = state_dir
        self.env = {
            k: v for k, v in os.environ.items() if not k.startswith(("REFLECTION_", "GIT_"))
        }
        self.env.update(
            GIT_CONFIG_GLOBAL=os.devnull,  # a user's hooksPath or signing must not interfere
            GIT_CONFIG_NOSYSTEM="1",
            REFLECTION_STATE_DIR=str(state_dir),
        )

    def start(self) -> None:
        from agent_reflection.hooks.git_hooks import install_git_hooks
        from agent_reflection.hooks.settings import HookSpec, hook_command

        self.path.mkdir(parents=True)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.git(["init", "-q", "-b", "main"])
        files = {
            ".gitignore": ".reflection/\n",
            "README.md": "# shop\n\nWhere the simulated agents work.\n",
            "CHANGELOG.md": "# Changes\n",
        }
        self.commit(BASE - timedelta(days=1), "Initial commit", files, HUMAN)
        # the command `reflect hook install --git` writes into the hook
        spec = HookSpec(
            "post-commit", "reflect-post-commit-hook", "agent_reflection.hooks.post_commit"
        )
        install_git_hooks(self.path, hook_command(spec, project_dir=None, stdin_guard=False))

    def git(self, args: Sequence[str], env: Mapping[str, str] | None = None) -> str:
        return git(self.path, args, {**self.env, **(env or {})})

    def commit(
        self, when: datetime, message: str, files: Mapping[str, str], who: tuple[str, str]
    ) -> str:
        """Write ``files`` and commit exactly them (the post-commit hook runs, except for a
        teammate: see :meth:`teammate`)."""
        write_files(self.path, files)
        self.git(["add", "--", *files])
        self.git([*self.teammate(who), "commit", "-q", "-m", message], commit_env(*who, when))
        return self.git(["rev-parse", "HEAD"])

    def teammate(self, who: tuple[str, str]) -> list[str]:
        """Git options for ``who``'s commits: a teammate works in a clone without our hook
        (a hooks path holding no hook here), which also spares the demo a hook process per
        fate."""
        return ["-c", f"core.hooksPath={os.devnull}"] if who == TEAMMATE else []

    def session(self, plan: SessionPlan) -> list[tuple[str, datetime, str]]:
        """Run one session; (sha, committer time, link) of the commits holding its work."""
        env = {
            "REFLECTION_MODE": "solo",
            "REFLECTION_AGENT": AGENT,
            "REFLECTION_TASK_REF": f"LOOP-{plan.index:03d}",
        }
        cwd = str(self.path)
        start = {"session_id": plan.session_id, "source": "startup", "cwd": cwd}
        event = {**start, "hook_event_name": "SessionStart"}
        run_hook("agent_reflection.hooks.session_start", event, self.path, {**self.env, **env})
        module, name = _module(plan)
        test = f"tests/test_{name}.py"
        work = {module: _module_text(plan), test: _test_text(plan)}
        # what the session commits itself, commit by commit; the rest it leaves uncommitted
        own = {
            "during": [work],
            "during2": [{module: work[module]}, {test: work[test]}],
            "mixed": [{module: work[module]}],
            "later": [],
        }[plan.kind]
        made: list[tuple[str, datetime, str]] = []
        for k, files in enumerate(own):
            when = plan.start + timedelta(hours=1 + k)
            message = f"{'Test' if k else 'Add'} {name}{AGENT_TRAILER}"
            made.append((self.commit(when, message, files, BOT), when, DURING))
        write_files(self.path, work)
        left = {p: t for p, t in work.items() if not any(p in files for files in own)}
        report = {
            "confidence": plan.confidence,
            "most_likely_wrong": {
                "surface": plan.area,
                "description": f"{name} may mishandle negative values",
            },
            "known_not_in_diff": None,
        }
        write_files(self.path, {".reflection/input.json": json.dumps(report) + "\n"})
        run_stop_hook(plan.session_id, self.path, self.path.parent, {**self.env, **env})
        if left:  # a human commits what the session left: the post-commit hook notes it
            later = plan.start + timedelta(hours=8)
            made.append((self.commit(later, f"Add {name} tests", left, HUMAN), later, NOTE))
        return made

    def fate(
        self, plan: SessionPlan, commits: Sequence[tuple[str, datetime, str]], when: datetime
    ) -> str:
        """Play the session's fate at ``when``; the commit it made."""
        module, name = _module(plan)
        if plan.fate == "revert":
            sha = _target(plan, commits)[0]
            self.git(
                [*self.teammate(TEAMMATE), "revert", "--no-edit", sha], commit_env(*TEAMMATE, when)
            )
            return self.git(["rev-parse", "HEAD"])
        if plan.fate == "cosmetic-fix":
            text = _module_text(plan, annotated=True)
            return self.commit(
                when, f"fix: type annotations for {name} (mypy)", {module: text}, TEAMMATE
            )
        message = f"fix: {name} crashes on negative input"
        return self.commit(when, message, {module: _module_text(plan, fixed=True)}, TEAMMATE)


# --------------------------------------------------------------------------- the demo's step


@dataclass(frozen=True)
class Recovery:
    """What ``reflect load git`` derived, against the simulator's truth."""

    links_found: int
    links_true: int
    links_equal: bool
    outcomes_equal: bool
    mismatches: tuple[str, ...]


def load_loop_world(
    con: duckdb.DuckDBPyConnection, world: LoopWorld, prereg: Preregistration
) -> None:
    """What ``reflect load sidecars`` and ``reflect load git --szz`` do with the world."""
    from agent_reflection.load.git.history import load_git_history
    from agent_reflection.load.git.szz import load_fix_inducing
    from agent_reflection.load.sessions import load_git_sessions
    from agent_reflection.load.sidecars.loader import load_sidecars
    from agent_reflection.store.db import record_simulated

    # every report made from this database says SIMULATED
    seed = world.spec.seed
    record_simulated(con, f"reflect demo: the loop world (simulate/loop.py), seed {seed}")
    load_sidecars(con, [world.sidecar_dir])
    load_git_history(con, world.repo, name=REPO_NAME)
    load_fix_inducing(con, world.repo, name=REPO_NAME)
    load_git_sessions(con, world.repo, prereg, name=REPO_NAME)


def recovery(con: duckdb.DuckDBPyConnection, world: LoopWorld) -> Recovery:
    """Compare the database's sessions (``session_report``: links and outcomes) to the truth."""
    from agent_reflection.load.sessions import session_report

    rows = [r for r in session_report(con) if r["repo"] == REPO_NAME]
    found = {
        (r["session_id"], sha, link)
        for r in rows
        for sha, link in zip(r["commits"], r["links"], strict=True)
    }
    truth = world.link_rows()
    outcomes = {r["session_id"]: r["outcome"] for r in rows}
    mismatches = [f"link {x} found, not true" for x in sorted(found - truth)]
    mismatches += [f"link {x} true, not found" for x in sorted(truth - found)]
    mismatches += [
        f"{s}: outcome {outcomes.get(s)}, true {o}"
        for s, o in sorted(world.outcomes().items())
        if outcomes.get(s) != o
    ]
    return Recovery(
        len(found), len(truth), found == truth, outcomes == world.outcomes(), tuple(mismatches)
    )


@dataclass(frozen=True)
class LoopData:
    """The loop world loaded into its database, and how the load compares with the truth."""

    world: LoopWorld
    db_path: Path
    recovery: Recovery

    def describe(self) -> str:
        w, r, c = self.world, self.recovery, self.world.counts()
        labelled = len(w.labelled())
        lines = [
            f"simulated: {c['sessions']} sessions through the real SessionStart, Stop and "
            f"post-commit hooks; {c['commits']} commits ({c[DURING]} made during a session, "
            f"{c[NOTE]} made later by a human and noted); outcomes {c[WRONG]} wrong, "
            f"{c[RIGHT]} right-so-far, {c[CENSORED]} censored",
            f"truth: population AUC {w.spec.auc:.2f}; realised AUC of the {labelled} "
            f"labelled sessions {w.realised_auc():.3f}",
            f"recovered by `reflect load git`: session->commit links "
            f"{'equal the truth' if r.links_equal else 'DIFFER from the truth'} "
            f"({r.links_found} found, {r.links_true} true); outcomes "
            f"{'equal the truth' if r.outcomes_equal else 'DIFFER from the truth'}",
            *(f"  mismatch: {m}" for m in r.mismatches[:5]),
            f"database: {self.db_path}\ngit repo: {w.repo}",
        ]
        return "\n".join(lines)


def build_loop_demo(out_dir: Path, *, sessions: int = LoopSpec.sessions, seed: int = 7) -> LoopData:
    """Build the loop world under ``out_dir`` (fresh: ``loop-repo``) and load it into
    ``out_dir/loop.duckdb``. Only those two (and the hooks' state folder) are touched, so it
    can run while :func:`~agent_reflection.simulate.phase0.run_demo` uses the same folder."""
    import shutil

    from agent_reflection.experiments.registration import load_preregistration
    from agent_reflection.store.db import connect

    out_dir = out_dir.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    repo, db_path = out_dir / REPO_NAME, out_dir / "loop.duckdb"
    for stale in (repo, out_dir / f"{REPO_NAME}-hook-state"):
        shutil.rmtree(stale, ignore_errors=True)
    for stale_file in (db_path, db_path.with_suffix(".duckdb.wal")):
        stale_file.unlink(missing_ok=True)
    prereg = load_preregistration()
    spec = LoopSpec(sessions=sessions, seed=seed, window_days=prereg.p1.loop_window_days)
    world = build_loop_world(repo, spec)
    con = connect(db_path)
    try:
        load_loop_world(con, world, prereg)
        found = recovery(con, world)
    finally:
        con.close()
    return LoopData(world, db_path, found)


def run_loop_demo(out_dir: Path, data: LoopData, **runner_options: Any) -> RunReport:
    """P1 with ``p1.label_source = loop`` (an override of the file: EXPLORATORY) on the loop
    world ``data`` (:func:`build_loop_demo`); the report goes to out_dir/reports."""
    from agent_reflection.experiments.runner import run_experiments

    return run_experiments(
        ["p1"],
        db_path=data.db_path,
        out_root=out_dir.resolve() / "reports",
        params={"p1.label_source": "loop"},
        summary_notebook=False,
        **runner_options,
    )
