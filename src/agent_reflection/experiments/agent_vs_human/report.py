"""What the agent-vs-human notebook shows: its tables, its figure and its opening summary.

Built from an :class:`~.analysis.AgentVsHuman` only, so the notebook stays a list of calls and
the CLI prints the same sentences.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from matplotlib.figure import Figure

from agent_reflection.experiments.agent_vs_human.analysis import (
    AGENT,
    HUMAN,
    AgentVsHuman,
    CommitFate,
    Difference,
    GroupOutcome,
)
from agent_reflection.experiments.registration import Preregistration
from agent_reflection.experiments.report import Summary
from agent_reflection.stats.wilson import WilsonResult

TITLE = "Agent-authored vs human commits"
QUESTION = (
    "Are commits that carry a coding agent's mark reverted or fixed more often, fixed sooner, "
    "or overwritten more than human commits of the same months?"
)


def parameters_markdown(prereg: Preregistration) -> str:
    """Where the parameters come from; this analysis is exploratory whatever the file says."""
    text = (
        "**EXPLORATORY analysis**, not part of the Phase-0 gate. Parameters: "
        f"`[agent_vs_human]` of `{prereg.path}` (SHA-256 `{prereg.sha256}`)."
    )
    if prereg.exploratory:
        text += "\n\nThe file differs from the registered one:\n\n" + "\n".join(
            f"- {reason}" for reason in prereg.reasons
        )
    return text


def pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def rate_text(rate: WilsonResult | None) -> str:
    """``9.0% (7/78; 95% CI 4.4%–17.4%)``."""
    if rate is None:
        return "no followed-up commit"
    level = round(100 * rate.confidence_level)
    return (
        f"{pct(rate.proportion)} ({rate.successes}/{rate.n}; {level}% CI "
        f"{pct(rate.ci_low)}–{pct(rate.ci_high)})"
    )


def days_text(days: float | None) -> str:
    if days is None:
        return "n/a"
    return f"{days * 24:.1f} h" if days < 1 else f"{days:.1f} d"


def groups_table(result: AgentVsHuman) -> list[dict[str, Any]]:
    """One row per group: counts, both rates with their intervals, time to fix, survival."""
    rows = []
    for g in result.groups:
        rows.append(
            {
                "group": g.group,
                "commits": g.commits,
                "followed up": g.followed_up,
                "censored": g.censored,
                "reverted": rate_text(g.reverted),
                "fixed": rate_text(g.fixed),
                "fixed (any time)": g.fixed_ever,
                "median time to fix": days_text(g.median_days_to_fix),
                "never fixed (censored)": g.never_fixed,
                "their median follow-up": days_text(g.median_follow_up_days_never_fixed),
                "lines added": g.lines_added,
                "lines at head": g.lines_surviving,
                "surviving (pooled)": pct(g.surviving_share),
                "surviving (median commit)": pct(g.median_commit_surviving_share),
            }
        )
    return rows


def _points(low: float, high: float) -> str:
    return f"{100 * low:+.1f} to {100 * high:+.1f} points"


def excludes_zero(d: Difference) -> bool:
    """Both intervals (Newcombe's and the day-clustered one, when there is one) exclude 0."""
    lows = [d.ci_low] + ([d.clustered.ci_low] if d.clustered else [])
    highs = [d.ci_high] + ([d.clustered.ci_high] if d.clustered else [])
    return min(lows) > 0 or max(highs) < 0


def differences_table(result: AgentVsHuman) -> list[dict[str, Any]]:
    """Agent minus human, per rate, with Newcombe's interval and the day-clustered one."""
    level = round(100 * result.confidence_level)
    return [
        {
            "rate": d.measure,
            "agent": pct(d.agent),
            "human": pct(d.human),
            "agent - human": f"{100 * d.value:+.1f} points",
            f"{level}% CI (Newcombe)": _points(d.ci_low, d.ci_high),
            f"{level}% CI (days resampled)": (
                _points(d.clustered.ci_low, d.clustered.ci_high) if d.clustered else "n/a"
            ),
            "days (agent / human)": (
                f"{d.clustered.agent_days} / {d.clustered.human_days}" if d.clustered else "n/a"
            ),
            "both exclude 0": excludes_zero(d),
            f"{level}% CI within change kind and month": (
                f"{100 * d.stratified.value:+.1f} points, "
                + _points(d.stratified.ci_low, d.stratified.ci_high)
                + f" ({d.stratified.strata_used} strata)"
                if d.stratified
                else "n/a"
            ),
            f"smallest detectable ({result.power:.0%} power)": (
                "none" if d.detectable is None else f"{100 * d.detectable:.1f} points"
            ),
        }
        for d in result.differences
    ]


#: The columns of :func:`fates_table`, also when no commit is compared (an empty table keeps them)
FATE_COLUMNS = (*(f.name for f in dataclasses.fields(CommitFate)), "group")


def fates_table(result: AgentVsHuman) -> list[dict[str, Any]]:
    """Every compared commit with its fate (written as CSV beside the report), in
    :data:`FATE_COLUMNS`."""
    return [{**dataclasses.asdict(f), "group": f.group} for f in result.fates]


def _comparison(result: AgentVsHuman) -> str:
    if not result.enough_agent_commits:
        return (
            f"none drawn: {result.group(AGENT).followed_up} followed-up agent commits, fewer "
            f"than the pre-registered {result.min_group_commits}"
        )
    parts = []
    for d in result.differences:
        level = round(100 * d.confidence_level)
        verdict = "differs" if excludes_zero(d) else "no difference shown"
        clustered = (
            f", days resampled {_points(d.clustered.ci_low, d.clustered.ci_high)}"
            if d.clustered
            else ""
        )
        parts.append(
            f"{d.measure} {100 * d.value:+.1f} points (agent - human; {level}% CI "
            f"{_points(d.ci_low, d.ci_high)}{clustered}): {verdict}"
        )
    return "; ".join(parts) or "no rate to compare"


def _group_facts(g: GroupOutcome, days: int) -> str:
    return (
        f"{g.commits} commits ({g.followed_up} with {days} days of follow-up); reverted "
        f"{rate_text(g.reverted)}; fixed {rate_text(g.fixed)}; first fix after a median "
        f"{days_text(g.median_days_to_fix)} ({g.fixed_ever} ever fixed, {g.never_fixed} never: "
        f"censored); {pct(g.surviving_share)} of {g.lines_added:,} added lines still at the head"
    )


def summary(result: AgentVsHuman) -> Summary:
    """The report's opening block (EXPLORATORY: not part of the Phase-0 gate)."""
    agent, human = result.group(AGENT), result.group(HUMAN)
    months = ", ".join(result.months) or "no month"
    if len(result.months) > 6:  # a long list: its first and last month and how many
        months = (
            f"{len(result.months)} months with a commit, {result.months[0]} to {result.months[-1]}"
        )
    facts = [
        ("repository", f"{result.repo} at {result.head} (last commit {result.as_of:%Y-%m-%d})"),
        ("compared", f"{result.span}: {months}"),
        ("agent commits", _group_facts(agent, result.follow_up_days)),
        ("human commits", _group_facts(human, result.follow_up_days)),
        ("comparison", _comparison(result)),
    ]
    facts += [("note", note) for note in result.notes]
    return Summary(title=TITLE, question=QUESTION, facts=tuple(facts), exploratory=True)


def rates_figure(result: AgentVsHuman) -> Figure:
    """Reverted and fixed rates with their intervals, and surviving lines, per group."""
    fig = Figure(figsize=(9, 3.4))
    rates_ax, survival_ax = fig.subplots(1, 2, gridspec_kw={"width_ratios": [2, 1]})
    names = [g.group for g in result.groups]
    for offset, measure, colour in ((-0.15, "reverted", "C3"), (0.15, "fixed", "C0")):
        for i, g in enumerate(result.groups):
            rate: WilsonResult | None = getattr(g, measure)
            if rate is None:
                continue
            y = i + offset
            rates_ax.errorbar(
                100 * rate.proportion,
                y,
                xerr=[
                    [100 * (rate.proportion - rate.ci_low)],
                    [100 * (rate.ci_high - rate.proportion)],
                ],
                fmt="o",
                color=colour,
                capsize=3,
                label=measure if i == 0 else None,
            )
    rates_ax.set_yticks(range(len(names)), names)
    rates_ax.invert_yaxis()
    level = round(100 * result.confidence_level)
    rates_ax.set_xlabel(
        f"% of followed-up commits, within {result.follow_up_days} days ({level}% CI)"
    )
    highs = [
        100 * rate.ci_high
        for g in result.groups
        for rate in (g.reverted, g.fixed)
        if rate is not None
    ]
    # a rate of 0 stays visible; room on the right for the legend
    rates_ax.set_xlim(-1, 1.4 * max(highs, default=10) + 1)
    rates_ax.legend(loc="lower right", fontsize=8)
    shares = [100 * (g.surviving_share or 0) for g in result.groups]
    survival_ax.barh(names, shares, color="#999")
    survival_ax.invert_yaxis()
    survival_ax.set_xlim(0, 100)
    survival_ax.set_xlabel("% of added lines still at the head")
    fig.suptitle(f"{result.repo}: agent-marked vs human commits ({result.span})", fontsize=10)
    fig.tight_layout()
    return fig
