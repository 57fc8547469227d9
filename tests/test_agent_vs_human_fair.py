"""agent-vs-human made fair (issue 32): bots, bumps and releases in neither group; a fix by the
same session reported apart; each difference within change kind and month, and with the
smallest difference the sample could detect; an empty comparison still has its columns."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd

from agent_reflection.experiments.agent_vs_human import analysis as avh
from agent_reflection.experiments.agent_vs_human import report
from agent_reflection.experiments.registration import load_preregistration
from agent_reflection.load.git.kinds import change_kind
from agent_reflection.stats.power import detectable_difference
from agent_reflection.stats.risk_difference import mantel_haenszel_difference

T0 = datetime(2026, 3, 2, 12, tzinfo=UTC)
CLAUDE = "Claude <noreply@anthropic.com>"
ANA = "Ana <ana@example.com>"


def record(n: int, agent: str | None, **kw: object) -> avh.CommitRecord:
    base = dict(
        sha=f"{n:040x}",
        agent=agent,
        at=T0 + timedelta(hours=n),
        is_merge=False,
        files_available=True,
        lines_added=3,
        author=CLAUDE if agent else ANA,
        change="feat" if (n // 2) % 2 else "fix",
    )
    base.update(kw)
    return avh.CommitRecord(**base)  # type: ignore[arg-type]


def fix(target: int, fixer: int, hours_after: float) -> avh.FollowingEvent:
    return avh.FollowingEvent(
        "fix", f"{target:040x}", f"{fixer:040x}", T0 + timedelta(hours=target + hours_after)
    )


def test_bots_bumps_and_same_session_fixes_are_apart_and_power_is_stated() -> None:
    params = load_preregistration().agent_vs_human
    assert params.same_session_hours == 2 and params.power == 0.8
    records = [record(n, "claude-code") for n in range(0, 80, 2)]  # 40 agent commits
    records += [record(n, None) for n in range(1, 81, 2)]  # 40 human commits
    records += [  # in the same month as the others
        record(100 + n, None, kind="dependency-bump", author="renovate[bot] <r@x>")
        for n in range(10)
    ]
    records.append(record(2000, None))  # the last commit: 80+ days of follow-up for the rest
    events = [
        fix(0, 2, 1.0),  # the agent session fixing itself within the hour: apart
        fix(4, 1, 30.0),  # a human fixes an agent commit a day later: counted
        fix(1, 100, 48.0),  # a bump "fixes" a human commit: nobody's work, not counted
        fix(3, 5, 26.0),  # a person fixes another human commit: counted
    ]
    on_head = frozenset(r.sha for r in records)
    result = avh.compare("r", "main", records, events, on_head, None, params)
    assert result.left_out == {"dependency-bump": {"human": 10}}
    assert result.left_out_events == 1
    assert result.same_session_fixes == {"agent": 1}
    assert {f.sha for f in result.fates}.isdisjoint({r.sha for r in records if r.kind})
    agent, human = result.group("agent"), result.group("human")
    assert (agent.fixed.successes, human.fixed.successes) == (1, 1)  # type: ignore[union-attr]
    fixed = next(d for d in result.differences if d.measure == "fixed")
    assert fixed.stratified is not None and fixed.stratified.strata_used == 2
    expected = detectable_difference(1 / 40, 40, 40)
    assert fixed.detectable == expected and expected is not None and 0.05 < expected < 0.3
    assert result.detectable["fixed"] == expected
    notes = " ".join(result.notes)
    assert "Left out of both groups" in notes and "10 dependency-bump (0 agent, 10 human)" in notes
    assert "same session" in notes and "1 fix(es) of agent commits" in notes
    assert "smallest fixed rate difference detectable at 80% power" in notes
    table = report.differences_table(result)
    assert any(k.startswith("smallest detectable") for k in table[0])


def test_an_empty_comparison_keeps_its_columns() -> None:
    params = load_preregistration().agent_vs_human
    records = [record(1, None), record(3, None)]  # no agent commit: nothing is compared
    result = avh.compare("r", "main", records, [], frozenset(r.sha for r in records), None, params)
    fates = pd.DataFrame(report.fates_table(result), columns=list(report.FATE_COLUMNS))
    assert fates.empty and {"days_to_fix", "days_to_revert"} <= set(fates.columns)
    fates[fates["days_to_fix"].notna() | fates["days_to_revert"].notna()]  # the notebook's cell


def test_change_kind_and_the_stratified_difference() -> None:
    assert change_kind("feat", ["src/a.py"]) == "feat"
    assert change_kind(None, ["docs/a.md", "README.md"]) == "docs"
    assert change_kind(None, ["tests/test_a.py"]) == "test"
    assert change_kind(None, ["src/a.py", "README.md"]) == "code"
    # two strata with the same difference: the pooled one is it; a one-group stratum is ignored
    d = mantel_haenszel_difference([(2, 10, 1, 10), (4, 20, 2, 20), (5, 5, 0, 0)])
    assert d is not None and abs(d.value - 0.1) < 1e-12 and d.strata_used == 2
    assert d.ci_low < 0.1 < d.ci_high
    assert mantel_haenszel_difference([(1, 3, 0, 0)]) is None
    # more trials, a smaller detectable difference
    assert detectable_difference(0.1, 400, 400) < detectable_difference(0.1, 40, 40)  # type: ignore[operator]
