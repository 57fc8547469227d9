"""Agent-authored vs human commits in one repository (exploratory; not part of the Phase-0 gate).

For the non-merge commits on one line of history (reachable from its head), split by
``commits.agent`` (docs/git.md, "Agent marks"), and only in the months that hold an agent commit
(``[agent_vs_human] span``): how often each group's commits are reverted, how often a later fix
is blamed on them (SZZ, ``fix_inducing``), how long until the first fix, and what share of the
lines they added is still there at the head. Rates count only what happens within
``follow_up_days`` and leave out (and count) commits with less history after them.

:func:`read_history` and :func:`blame_surviving_lines` do the I/O (DuckDB, git); everything
else is pure and returns frozen dataclasses. docs/experiments.md says how to read the report.
"""

from __future__ import annotations

import math
import os
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_reflection.errors import ReflectionError
from agent_reflection.experiments.registration import AgentVsHumanParams
from agent_reflection.load.git.kinds import DEFAULT_RULES, KindRules, change_kind, classify_commit
from agent_reflection.names import by_text
from agent_reflection.stats.interval import Interval
from agent_reflection.stats.power import detectable_difference
from agent_reflection.stats.risk_difference import (
    StratifiedDifference,
    mantel_haenszel_difference,
)
from agent_reflection.stats.wilson import WilsonResult, wilson_ci
from agent_reflection.store.db import read_sql

if TYPE_CHECKING:
    import duckdb

    from agent_reflection.load.git.repo import GitSource

#: The group of commits without an agent mark.
HUMAN = "human"
#: The group of every agent-marked commit, whichever agent.
AGENT = "agent"
#: Heads tried, in order, when none is given (a bundle's mirror may have a dangling HEAD).
DEFAULT_HEADS = ("HEAD", "main", "master")
_DAY = 86_400.0


class AgentVsHumanError(ReflectionError):
    """The repository cannot be analysed as asked (not loaded, no SZZ, unknown head)."""


@dataclass(frozen=True)
class CommitRecord:
    """One loaded commit with the events that may follow it (from the database)."""

    sha: str
    agent: str | None
    at: datetime
    is_merge: bool
    files_available: bool
    lines_added: int  # non-binary lines added over its files (0 when it added none)
    author: str = ""  # ``Name <email>``
    # bot / dependency-bump / release (load/git/kinds.py): nobody's work, left out of both
    # groups; None: a person's or an agent's commit
    kind: str | None = None
    change: str = "code"  # the change kind (kinds.change_kind): conventional type or files


@dataclass(frozen=True)
class FollowingEvent:
    """A later commit that reverts (``kind = "revert"``) or is SZZ-blamed as fixing
    (``kind = "fix"``) the commit ``target``."""

    kind: str
    target: str
    sha: str
    at: datetime
    message: str = ""  # the following commit's subject and body


@dataclass(frozen=True)
class CommitFate:
    """What happened to one commit of the comparison after it landed."""

    sha: str
    agent: str | None
    at: datetime
    follow_up_days: float  # from the commit to the repository's last commit (as_of)
    days_to_revert: float | None  # first revert on the line of history, any time
    days_to_fix: float | None  # first fix blamed on it, any time
    lines_added: int | None  # None: its file list is unavailable
    lines_surviving: int | None  # lines blamed to it at the head; None: not measured
    change: str = "code"  # the change kind: the stratum with the month

    @property
    def group(self) -> str:
        return HUMAN if self.agent is None else AGENT


@dataclass(frozen=True)
class GroupOutcome:
    """One group's rates, time to fix and surviving lines."""

    group: str  # "agent", "human" or one agent's name
    commits: int  # in the span
    followed_up: int  # with at least follow_up_days of history after them
    censored: int  # commits - followed_up (in neither rate)
    reverted: WilsonResult | None  # of followed_up, reverted within follow_up_days
    fixed: WilsonResult | None  # of followed_up, a fix blamed on it within follow_up_days
    fixed_ever: int  # of commits, with any fix blamed on it up to as_of
    median_days_to_fix: float | None  # over fixed_ever
    never_fixed: int  # commits - fixed_ever: censored for time to fix (at their follow-up)
    median_follow_up_days_never_fixed: float | None
    lines_added: int
    lines_surviving: int
    surviving_share: float | None  # lines_surviving / lines_added (pooled over commits)
    median_commit_surviving_share: float | None  # per commit that added lines


@dataclass(frozen=True)
class Difference(Interval):
    """Agent rate minus human rate (``value``), with Newcombe's hybrid score interval."""

    measure: str  # "reverted" | "fixed"
    agent: float
    human: float
    confidence_level: float
    #: the same difference's interval when a day's commits move together (see
    #: :func:`day_clustered_interval`); None when a group has fewer than two days
    clustered: ClusteredInterval | None = None
    #: the difference within change kind and month (Mantel-Haenszel), None: no shared stratum
    stratified: StratifiedDifference | None = None
    #: the smallest rise over the human rate these group sizes detect (``power``)
    detectable: float | None = None


@dataclass(frozen=True)
class ClusteredInterval(Interval):
    """A rate difference (``value``) with the percentile interval of a seeded bootstrap that
    resamples each group's days (UTC, of the commit time) with replacement, keeping a day's
    commits together."""

    agent_days: int
    human_days: int
    resamples: int
    seed: int


@dataclass(frozen=True)
class AgentVsHuman:
    """The comparison for one repository."""

    repo: str
    head: str
    as_of: datetime  # the repository's last commit (of time_column)
    span: str
    months: tuple[str, ...]  # YYYY-MM of the span ("all": every month with a commit)
    agent_commits_loaded: int  # agent-marked non-merge commits loaded (any branch)
    agent_commits_on_head: int  # of those, reachable from the head
    cosmetic_fixes: tuple[str, ...]  # fix commits on the head not counted (lint / format)
    cosmetic_fixes_of_compared: int  # of those, the ones that blame a compared commit
    groups: tuple[GroupOutcome, ...]  # agent, human, then single agents with enough commits
    differences: tuple[Difference, ...]
    enough_agent_commits: bool
    min_group_commits: int
    follow_up_days: int
    confidence_level: float
    fates: tuple[CommitFate, ...]
    notes: tuple[str, ...]
    # commits on the head left out of both groups, by kind and group (bot, dependency-bump,
    # release), and the fixes / reverts those commits made (not counted either)
    left_out: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    left_out_events: int = 0
    # fixes by the same session (author and agent, within same_session_hours), per group of
    # the fixed commit: reported apart, not counted as fixes
    same_session_fixes: Mapping[str, int] = field(default_factory=dict)
    same_session_hours: int = 0
    # per rate: the smallest difference detectable at ``power`` with these group sizes
    detectable: Mapping[str, float | None] = field(default_factory=dict)
    power: float = 0.8

    def group(self, name: str) -> GroupOutcome:
        for g in self.groups:
            if g.group == name:
                return g
        raise KeyError(name)


# --------------------------------------------------------------------------- pure


def counted_events(
    events: Iterable[FollowingEvent], on_head: frozenset[str], cosmetic: str | None
) -> tuple[list[FollowingEvent], frozenset[str]]:
    """(the events that count, the cosmetic fix commits left out). An event counts when the
    reverting / fixing commit is on the head's line of history; a fix whose message matches
    ``cosmetic`` (regex, case-insensitive; None: none is cosmetic) is lint / formatting /
    annotation work, not a repair of what it blames."""
    kept, cosmetic_fixes = [], set()
    for e in events:
        if e.sha not in on_head:
            continue
        if e.kind == "fix" and cosmetic and re.search(cosmetic, e.message, re.IGNORECASE):
            cosmetic_fixes.add(e.sha)
            continue
        kept.append(e)
    return kept, frozenset(cosmetic_fixes)


def commit_fates(
    records: Iterable[CommitRecord],
    events: Iterable[FollowingEvent],
    on_head: frozenset[str],
    surviving: Mapping[str, int] | None,
    as_of: datetime,
    unmeasured: frozenset[str] = frozenset(),
) -> list[CommitFate]:
    """The fate of each non-merge commit reachable from the head, from the ``events`` that
    count (:func:`counted_events`): the first revert / fix after the commit; ``surviving``
    maps shas to lines blamed to them at the head (None: not measured). The ``unmeasured``
    commits (cosmetic fixes, which blame passes over) get no surviving lines."""
    firsts: dict[tuple[str, str], datetime] = {}
    for e in events:
        key = (e.kind, e.target)
        if key not in firsts or e.at < firsts[key]:
            firsts[key] = e.at
    fates = []
    for r in records:
        if r.is_merge or r.sha not in on_head:
            continue

        def after(kind: str, record: CommitRecord = r) -> float | None:
            when = firsts.get((kind, record.sha))
            if when is None or when < record.at:
                return None
            return (when - record.at).total_seconds() / _DAY

        fates.append(
            CommitFate(
                sha=r.sha,
                agent=r.agent,
                at=r.at,
                follow_up_days=(as_of - r.at).total_seconds() / _DAY,
                days_to_revert=after("revert"),
                days_to_fix=after("fix"),
                lines_added=r.lines_added if r.files_available else None,
                lines_surviving=(
                    None
                    if surviving is None or not r.files_available or r.sha in unmeasured
                    else min(surviving.get(r.sha, 0), r.lines_added)
                ),
                change=r.change,
            )
        )
    return fates


def month(at: datetime) -> str:
    return f"{at.year:04d}-{at.month:02d}"


def group_outcome(
    name: str, fates: Sequence[CommitFate], follow_up_days: int, confidence_level: float
) -> GroupOutcome:
    """Rates over the followed-up commits, time to fix over all, surviving lines."""
    followed = [f for f in fates if f.follow_up_days >= follow_up_days]

    def rate(days: Iterable[float | None]) -> WilsonResult | None:
        if not followed:
            return None
        hits = sum(1 for d in days if d is not None and d <= follow_up_days)
        return wilson_ci(hits, len(followed), confidence_level)

    fixed_ever = [f.days_to_fix for f in fates if f.days_to_fix is not None]
    never = [f.follow_up_days for f in fates if f.days_to_fix is None]
    measured = [f for f in fates if f.lines_added is not None and f.lines_surviving is not None]
    added = sum(f.lines_added or 0 for f in measured)
    kept = sum(f.lines_surviving or 0 for f in measured)
    shares = [
        (f.lines_surviving or 0) / f.lines_added for f in measured if f.lines_added
    ]  # commits that added no line have no share
    return GroupOutcome(
        group=name,
        commits=len(fates),
        followed_up=len(followed),
        censored=len(fates) - len(followed),
        reverted=rate(f.days_to_revert for f in followed),
        fixed=rate(f.days_to_fix for f in followed),
        fixed_ever=len(fixed_ever),
        median_days_to_fix=statistics.median(fixed_ever) if fixed_ever else None,
        never_fixed=len(never),
        median_follow_up_days_never_fixed=statistics.median(never) if never else None,
        lines_added=added,
        lines_surviving=kept,
        surviving_share=kept / added if added else None,
        median_commit_surviving_share=statistics.median(shares) if shares else None,
    )


def newcombe_difference(measure: str, agent: WilsonResult, human: WilsonResult) -> Difference:
    """``agent - human`` with Newcombe's (1998) hybrid score interval, method 10: built from
    the two Wilson intervals, so it stays inside [-1, 1] and behaves at 0 and n events."""
    d = agent.proportion - human.proportion
    low = d - math.sqrt(
        (agent.proportion - agent.ci_low) ** 2 + (human.ci_high - human.proportion) ** 2
    )
    high = d + math.sqrt(
        (agent.ci_high - agent.proportion) ** 2 + (human.proportion - human.ci_low) ** 2
    )
    return Difference(
        value=d,
        ci_low=max(-1.0, low),
        ci_high=min(1.0, high),
        measure=measure,
        agent=agent.proportion,
        human=human.proportion,
        confidence_level=agent.confidence_level,
    )


def _events_per_day(
    fates: Sequence[CommitFate], measure: str, follow_up_days: int
) -> tuple[list[int], list[int]]:
    """(events, followed-up commits) per UTC day of the group's followed-up commits."""
    per_day: dict[str, list[int]] = {}
    for f in fates:
        if f.follow_up_days < follow_up_days:
            continue
        days = f.days_to_revert if measure == "reverted" else f.days_to_fix
        cell = per_day.setdefault(f.at.astimezone(UTC).date().isoformat(), [0, 0])
        cell[0] += days is not None and days <= follow_up_days
        cell[1] += 1
    return [c[0] for c in per_day.values()], [c[1] for c in per_day.values()]


def day_clustered_interval(
    measure: str,
    agent: Sequence[CommitFate],
    human: Sequence[CommitFate],
    follow_up_days: int,
    confidence_level: float,
    resamples: int,
    seed: int,
) -> ClusteredInterval | None:
    """The agent - human difference of ``measure`` (``reverted`` / ``fixed``) under a seeded
    bootstrap of days: each resample draws each group's days with replacement and pools their
    commits. Commits of one day (often one agent session) share their fate more than two
    random commits do; this interval widens by as much. None when a group has under 2 days
    or neither group has an event."""
    import numpy as np

    a_events, a_n = _events_per_day(agent, measure, follow_up_days)
    h_events, h_n = _events_per_day(human, measure, follow_up_days)
    if len(a_n) < 2 or len(h_n) < 2 or not (sum(a_events) or sum(h_events)):
        return None  # too few days, or no event at all: every resample says 0
    rng = np.random.default_rng(seed)

    def rates(events: list[int], n: list[int]) -> Any:
        pick = rng.integers(0, len(n), size=(resamples, len(n)))
        return np.asarray(events)[pick].sum(axis=1) / np.asarray(n)[pick].sum(axis=1)

    diff = rates(a_events, a_n) - rates(h_events, h_n)
    alpha = 1 - confidence_level
    low, high = np.quantile(diff, [alpha / 2, 1 - alpha / 2])
    observed = sum(a_events) / sum(a_n) - sum(h_events) / sum(h_n)
    return ClusteredInterval(
        value=observed,
        ci_low=float(low),
        ci_high=float(high),
        agent_days=len(a_n),
        human_days=len(h_n),
        resamples=resamples,
        seed=seed,
    )


def stratified_difference(
    measure: str,
    agent: Sequence[CommitFate],
    human: Sequence[CommitFate],
    follow_up_days: int,
    confidence_level: float,
) -> StratifiedDifference | None:
    """The agent - human difference of ``measure`` within change kind and month (UTC), pooled
    over the strata that hold both groups (Mantel-Haenszel): like compared with like, since the
    groups' mixes of fixes, features and docs differ."""
    cells: dict[tuple[str, str], list[int]] = {}
    for group, fates in ((0, agent), (1, human)):
        for f in fates:
            if f.follow_up_days < follow_up_days:
                continue
            days = f.days_to_revert if measure == "reverted" else f.days_to_fix
            cell = cells.setdefault((f.change, month(f.at)), [0, 0, 0, 0])
            cell[2 * group] += days is not None and days <= follow_up_days
            cell[2 * group + 1] += 1
    strata = [(c[0], c[1], c[2], c[3]) for c in cells.values()]
    return mantel_haenszel_difference(strata, confidence_level)


def compare(
    repo: str,
    head: str,
    records: Sequence[CommitRecord],
    events: Sequence[FollowingEvent],
    on_head: frozenset[str],
    surviving: Mapping[str, int] | None,
    params: AgentVsHumanParams,
    cosmetic_message: str | None = None,
) -> AgentVsHuman:
    """The whole comparison (pure): fates, span, groups, differences and what to say.
    ``cosmetic_message``: the regex of a lint / formatting fix ([p2] cosmetic_lint_message),
    used when ``params.exclude_cosmetic_fixes``."""
    if not records:
        raise AgentVsHumanError(f"{repo}: no commits loaded; run `reflect load git` first")
    as_of = max(r.at for r in records)
    cosmetic = cosmetic_message if params.exclude_cosmetic_fixes else None
    # bots', dependency bumps' and release commits: in neither group, and their fixes and
    # reverts count for nobody
    by_sha = {r.sha: r for r in records}
    nobody = {r.sha for r in records if r.kind is not None}
    kept_events = [e for e in events if e.sha not in nobody]
    # a fix by the same session (author and agent) soon after the commit is the session at work
    same_session: Counter[str] = Counter()
    if params.same_session_hours:
        window = params.same_session_hours * 3600.0
        rest = []
        for e in kept_events:
            target, fixer = by_sha.get(e.target), by_sha.get(e.sha)
            if (
                e.kind == "fix"
                and target is not None
                and fixer is not None
                and fixer.author == target.author
                and fixer.agent == target.agent
                and 0 <= (e.at - target.at).total_seconds() <= window
                and e.sha in on_head
            ):
                same_session[HUMAN if target.agent is None else AGENT] += 1
                continue
            rest.append(e)
        kept_events = rest
    counted, cosmetic_fixes = counted_events(kept_events, on_head, cosmetic)
    fates = commit_fates(
        [r for r in records if r.kind is None], counted, on_head, surviving, as_of, cosmetic_fixes
    )
    # the commits compared and the months they come from: every commit of a month (UTC) with
    # an agent commit (agent-months), or every commit (all)
    spanned = {month(f.at) for f in fates if params.span == "all" or f.agent is not None}
    chosen = [f for f in fates if month(f.at) in spanned]
    months = tuple(sorted(spanned))
    left_out: dict[str, Counter[str]] = {}  # of the months compared
    for r in records:
        if r.kind is not None and not r.is_merge and r.sha in on_head and month(r.at) in spanned:
            left_out.setdefault(r.kind, Counter())[HUMAN if r.agent is None else AGENT] += 1
    level, days = params.confidence_level, params.follow_up_days
    compared = {f.sha for f in chosen}
    cosmetic_of_compared = {
        e.sha for e in events if e.sha in cosmetic_fixes and e.target in compared
    }
    agent_fates = [f for f in chosen if f.agent is not None]
    human_fates = [f for f in chosen if f.agent is None]
    groups = [
        group_outcome(AGENT, agent_fates, days, level),
        group_outcome(HUMAN, human_fates, days, level),
    ]
    per_agent = Counter(f.agent for f in agent_fates if f.follow_up_days >= days)
    if len({f.agent for f in agent_fates}) > 1:  # one agent alone would repeat the agent row
        for name, n in sorted(per_agent.items(), key=lambda kv: (-kv[1], str(kv[0]))):
            if n >= params.min_group_commits and name is not None:
                own = [f for f in agent_fates if f.agent == name]
                groups.append(group_outcome(name, own, days, level))
    enough = groups[0].followed_up >= params.min_group_commits
    differences: list[Difference] = []
    if enough and groups[1].followed_up:
        for measure in ("reverted", "fixed"):
            a, h = getattr(groups[0], measure), getattr(groups[1], measure)
            if a is not None and h is not None:
                clustered = day_clustered_interval(
                    measure,
                    agent_fates,
                    human_fates,
                    days,
                    level,
                    params.bootstrap_resamples,
                    params.seed,
                )
                differences.append(
                    replace(
                        newcombe_difference(measure, a, h),
                        clustered=clustered,
                        stratified=stratified_difference(
                            measure, agent_fates, human_fates, days, level
                        ),
                        detectable=detectable_difference(
                            h.proportion,
                            groups[0].followed_up,
                            groups[1].followed_up,
                            confidence_level=level,
                            power=params.power,
                        ),
                    )
                )
    detectable = {
        measure: detectable_difference(
            rate.proportion,
            groups[0].followed_up,
            groups[1].followed_up,
            confidence_level=level,
            power=params.power,
        )
        for measure in ("reverted", "fixed")
        if (rate := getattr(groups[1], measure)) is not None and groups[0].followed_up
    }
    loaded_agent = sum(1 for r in records if r.agent is not None and not r.is_merge)
    on_head_agent = sum(1 for f in fates if f.agent is not None)
    result = AgentVsHuman(
        repo=repo,
        head=head,
        as_of=as_of,
        span=params.span,
        months=months,
        agent_commits_loaded=loaded_agent,
        agent_commits_on_head=on_head_agent,
        cosmetic_fixes=tuple(sorted(cosmetic_fixes)),
        cosmetic_fixes_of_compared=len(cosmetic_of_compared),
        groups=tuple(groups),
        differences=tuple(differences),
        enough_agent_commits=enough,
        min_group_commits=params.min_group_commits,
        follow_up_days=days,
        confidence_level=level,
        fates=tuple(chosen),
        notes=(),
        left_out={k: dict(v) for k, v in sorted(left_out.items())},
        left_out_events=len(events) - len([e for e in events if e.sha not in nobody]),
        same_session_fixes=dict(same_session),
        same_session_hours=params.same_session_hours,
        detectable=detectable,
        power=params.power,
    )
    return replace(result, notes=tuple(notes_for(result)))


def notes_for(result: AgentVsHuman) -> list[str]:
    """What a reader must know before reading the numbers."""
    agent, human = result.group(AGENT), result.group(HUMAN)
    notes = []
    if not result.enough_agent_commits:
        notes.append(
            f"Too few agent commits: {agent.followed_up} followed-up agent commit(s) in "
            f"{result.repo}, fewer than the pre-registered {result.min_group_commits}; the "
            "rates are shown but no comparison is drawn."
        )
    off_head = result.agent_commits_loaded - result.agent_commits_on_head
    if off_head:
        notes.append(
            f"{off_head} of {result.agent_commits_loaded} agent-marked commits are not on "
            f"{result.head} (unmerged branches, or squashed into a commit without the mark): "
            "they are left out."
        )
    if result.span == "agent-months":
        notes.append(
            f"Human commits are compared only from the months with an agent commit "
            f"({', '.join(result.months) or 'none'}), not from the whole history."
        )
    if agent.censored or human.censored:
        notes.append(
            f"Censored (under {result.follow_up_days} days of history after them, in neither "
            f"rate): {agent.censored} agent and {human.censored} human commits."
        )
    if result.cosmetic_fixes_of_compared:
        notes.append(
            f"{result.cosmetic_fixes_of_compared} fix commit(s) that blame compared commits say "
            "lint / formatting / type-annotation work in their message: not counted as fixes, "
            "and git blame passes over them for the surviving lines (pre-registered: "
            "exclude_cosmetic_fixes, with P2's cosmetic_lint_message)."
        )
    if result.left_out:
        parts = ", ".join(
            f"{sum(by.values())} {kind} ({by.get(AGENT, 0)} agent, {by.get(HUMAN, 0)} human)"
            for kind, by in result.left_out.items()
        )
        notes.append(
            f"Left out of both groups (load/git/kinds.py, [p2]'s registered rules): {parts} "
            f"commit(s) on {result.head} in the months compared, and the "
            f"{result.left_out_events} revert / fix event(s) such commits made anywhere: a "
            "bot's lock-file churn or a release is nobody's work."
        )
    if result.same_session_fixes:
        notes.append(
            f"Fixes by the same session (same author and agent, within "
            f"{result.same_session_hours} h of the fixed commit) are the session at work, not a "
            f"failure found later: reported apart, not counted as fixes: "
            f"{result.same_session_fixes.get(AGENT, 0)} fix(es) of agent commits, "
            f"{result.same_session_fixes.get(HUMAN, 0)} of human commits."
        )
    for measure, d in result.detectable.items():
        notes.append(
            f"Power: with {agent.followed_up} agent and {human.followed_up} human followed-up "
            f"commits, the smallest {measure} rate difference detectable at "
            f"{result.power:.0%} power is "
            + (
                "beyond any rate (none detectable)"
                if d is None
                else f"{100 * d:.1f} points over the human rate"
            )
            + ": a smaller difference would usually go unseen, so 'no difference shown' "
            "is no evidence of none."
        )
    notes.append(
        "Commits of one session or day are not independent (an agent often lands a burst of "
        "commits): the Wilson and Newcombe intervals assume they are. Each difference also "
        "gets an interval that resamples days; a difference counts only when both exclude 0."
    )
    return notes


# --------------------------------------------------------------------------- I/O


def read_history(
    con: duckdb.DuckDBPyConnection,
    repo: str,
    time_column: str,
    kind_rules: KindRules = DEFAULT_RULES,
) -> tuple[list[CommitRecord], list[FollowingEvent]]:
    """The loaded commits of ``repo`` and the reverts and SZZ fixes that name them. Raises
    :class:`AgentVsHumanError` when the repo is not loaded or has no SZZ attribution."""
    params = {"repo": repo, "time_column": time_column}
    rows = con.execute(read_sql("experiments/agent_vs_human_commits.sql"), params).fetchall()
    if not rows:
        raise AgentVsHumanError(
            f"{repo}: no commits in the database; run `reflect load git REPO --szz` first "
            "(--name sets the repo name)"
        )
    if any(r[6] is None for r in rows):
        raise AgentVsHumanError(
            f"{repo}: commits.agent is not filled for every commit (loaded before the agent "
            "column existed); run `reflect load git` on the repository again"
        )
    szz = con.execute(
        read_sql("experiments/agent_vs_human_szz_done.sql"), {"repo": repo}
    ).fetchone()
    if szz is None or not szz[0]:
        raise AgentVsHumanError(
            f"{repo}: no SZZ attribution loaded (fix_inducing is empty for it), so no commit "
            "could count as fixed; run `reflect load git REPO --szz`"
        )
    from agent_reflection.load.git.agents import identity_agent

    records = [
        CommitRecord(
            sha=sha,
            agent=agent,
            at=at,
            is_merge=bool(is_merge),
            files_available=bool(files_available),
            lines_added=int(added or 0),
            author=author,
            kind=classify_commit(
                kind_rules,
                author=author,
                committer=committer,
                subject=subject,
                body=body or "",
                cc_type=cc_type,
                cc_scope=cc_scope,
                paths=list(paths or ()),
                agent_identity=identity_agent(author, committer) is not None,
            ).kind,
            change=change_kind(cc_type, list(paths or ())),
        )
        for (
            sha,
            agent,
            at,
            is_merge,
            files_available,
            added,
            _version,
            author,
            committer,
            subject,
            body,
            cc_type,
            cc_scope,
            paths,
        ) in rows
    ]
    events = [
        FollowingEvent(kind=kind, target=target, sha=sha, at=at, message=message)
        for kind, target, sha, at, message in con.execute(
            read_sql("experiments/agent_vs_human_events.sql"), params
        ).fetchall()
    ]
    return records, events


def resolve_head(source: GitSource, head: str) -> tuple[str, str]:
    """(the head's name, its commit id): ``head``, else the first of :data:`DEFAULT_HEADS`
    that resolves."""
    from agent_reflection.load.git.repo import git

    for name in (head,) if head else DEFAULT_HEADS:
        done = git(source.path, "rev-parse", "--verify", "-q", f"{name}^{{commit}}")
        if done.returncode == 0:
            return name, done.stdout.decode().strip()
    tried = head or ", ".join(DEFAULT_HEADS)
    raise AgentVsHumanError(
        f"{source.origin}: no commit named {tried}; pass the branch to analyse (--head main)"
    )


def blame_surviving_lines(
    source: GitSource, head_sha: str, paths: Iterable[str], ignore: Sequence[str] = ()
) -> dict[str, int]:
    """Lines at ``head_sha`` per commit that last changed them (``git blame --porcelain -w``,
    so a whitespace-only reformat does not take a line over), over the ``paths`` that exist
    there. The ``ignore`` commits (cosmetic fixes) do not take lines over either: git blames
    the lines they changed on the commit before (``--ignore-rev``). One blame per file."""
    from agent_reflection.load.git.repo import git
    from agent_reflection.load.git.szz import parse_blame

    listed = git(source.path, "ls-tree", "-r", "-z", "--name-only", head_sha, check=True)
    # ``paths`` are the loaded names' text; git wants each name's own bytes
    present = by_text(os.fsdecode(listed.stdout).split("\0"))
    counts: Counter[str] = Counter()
    # an empty --ignore-revs-file drops any blame.ignoreRevsFile setting of the repository
    options = ["--porcelain", "-w", "--ignore-revs-file", ""]
    options += [arg for sha in ignore for arg in ("--ignore-rev", sha)]
    for path in sorted(set(paths) & present.keys()):
        done = git(source.path, "blame", *options, head_sha, "--", present[path])
        if done.returncode != 0:  # a binary or unreadable file: nothing to count
            continue
        counts.update(parse_blame(done.stdout).values())
    return dict(counts)


def run_agent_vs_human(
    con: duckdb.DuckDBPyConnection,
    source: GitSource,
    params: AgentVsHumanParams,
    *,
    head: str = "",
    survival: bool = True,
    cosmetic_message: str | None = None,
    kind_rules: KindRules = DEFAULT_RULES,
) -> AgentVsHuman:
    """Read, blame and compare: the whole analysis of ``source`` (loaded under its name).
    ``cosmetic_message``: see :func:`compare`; ``kind_rules``: the bot / bump / release rules
    ([p2]'s registered ones), whose commits are in neither group."""
    from agent_reflection.load.git.repo import git

    records, events = read_history(con, source.name, params.time_column, kind_rules)
    head_name, head_sha = resolve_head(source, head)
    listed = git(source.path, "rev-list", head_sha, "--", check=True)
    on_head = frozenset(listed.stdout.decode().split())  # every commit reachable from the head
    surviving = None
    if survival:
        draft = compare(
            source.name, head_name, records, events, on_head, None, params, cosmetic_message
        )
        if draft.fates:
            # a line of a compared commit can only be in a file that it, or a later commit
            # (a rename), changed: blaming those files at the head misses none of its lines
            since = min(f.at for f in draft.fates)
            later = [r.sha for r in records if r.at >= since and r.sha in on_head]
            paths = [
                path
                for (path,) in con.execute(
                    read_sql("experiments/agent_vs_human_paths.sql"),
                    {"repo": source.name, "shas": later},
                ).fetchall()
            ]
            surviving = blame_surviving_lines(source, head_sha, paths, draft.cosmetic_fixes)
    return compare(
        source.name, head_name, records, events, on_head, surviving, params, cosmetic_message
    )


def notebook_parameters(
    repo_path: str,
    *,
    name: str = "",
    head: str = "",
    cache_dir: str | None = None,
    preregistration_path: str | None = None,
) -> dict[str, str]:
    """The agent-vs-human notebook's parameters (``reflect run agent-vs-human``), paths made
    absolute from the current folder. The repository is opened first, so one that cannot be
    read fails before a kernel starts."""
    from agent_reflection.load.git.repo import open_repo

    open_repo(repo_path, name=name or None, cache_dir=cache_dir or None)
    return {
        "repo_path": str(Path(repo_path).resolve()),
        "name": name,
        "head": head,
        "cache_dir": str(Path(cache_dir).resolve()) if cache_dir else "",
        "preregistration_path": str(Path(preregistration_path).resolve())
        if preregistration_path
        else "",
    }
