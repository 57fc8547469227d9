"""The reader's escalation labels: the selection rule, the split, the file format."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_reflection.in_loop.escalation_labels import (
    HALVES,
    HELD_OUT_2,
    HELD_OUT_3,
    HELD_OUT_4,
    HELD_OUT_BOTH,
    SECOND_READS_FILE,
    EscalationLabel,
    LabelFileError,
    agreement,
    fourth_second_reads,
    fourth_selection,
    has_long_failure_streak,
    has_repeated_failure,
    label_selection,
    read_labels,
    read_split,
    repeat_keys,
    second_read_agreement,
    second_selection,
    split_halves,
    third_selection,
)
from agent_reflection.in_loop.loop_replay import (
    EscalationPoint,
    Session,
    SessionReplay,
    ToolCall,
    read_agent_runs,
)

LABEL_DIR = Path(__file__).parent / "data" / "escalation_labels"


def calls(pattern: str) -> tuple[ToolCall, ...]:
    """``f`` a failed step, ``t`` a step exiting 0 that shows a traceback, ``.`` a clean one."""
    return tuple(
        ToolCall(
            i + 1,
            "Bash",
            {"command": "x"},
            c == "f",
            "Exit code 1" if c == "f" else "",
            "Traceback (most recent call last):\nValueError" if c == "t" else "",
        )
        for i, c in enumerate(pattern)
    )


def test_long_failure_streak_counts_text_failures_and_windows() -> None:
    assert has_long_failure_streak(calls("..ff.f...")) is False
    assert has_long_failure_streak(calls("..fft...."))  # a traceback behind exit 0 counts
    assert has_long_failure_streak(calls("f.f.f.ff."))  # 5 failures within 8 steps
    assert has_long_failure_streak(calls("f.f.f.f.f.")) is False  # only 4 within any 8
    assert has_long_failure_streak(()) is False


def test_selection_takes_every_long_streak_and_a_seeded_sample() -> None:
    sessions = [Session(f"r{i:02}", "hand", calls("fff" if i < 3 else "f.f")) for i in range(20)]
    strata = label_selection(sessions, sample_size=5, seed=1)
    assert list(strata)[:3] == ["r00", "r01", "r02"]
    assert [strata[r] for r in strata] == ["long_streak"] * 3 + ["sample"] * 5
    assert strata == label_selection(sessions, sample_size=5, seed=1)  # seeded: repeatable
    assert list(strata) != list(label_selection(sessions, sample_size=5, seed=2))


def commands(*steps: tuple[str, bool]) -> tuple[ToolCall, ...]:
    return tuple(
        ToolCall(i + 1, "Bash", {"command": c}, f, "Exit code 1" if f else "", "")
        for i, (c, f) in enumerate(steps)
    )


def test_repeat_keys_normalise_the_command_and_name_the_py_file() -> None:
    assert repeat_keys("cd /testbed && python reproduce_issue.py 2>&1 | tail -5") == {
        "cmd:python reproduce_issue.py",
        "file:reproduce_issue.py",
    }
    assert "file:reproduce_issue.py" in repeat_keys("python -m pytest ./reproduce_issue.py -x")
    assert "file:reproduce_issue.py" in repeat_keys("python /testbed/reproduce_issue.py")
    assert repeat_keys("ls   -la") == {"cmd:ls -la"}


def test_repeated_failure_counts_one_command_or_file_with_steps_between() -> None:
    edit = ("sed -i 's/a/b/' x.py", False)
    run = "python reproduce_issue.py"
    # three failures of one script, an edit between each: no streak, but a repeated failure
    loop = commands((run, True), edit, (run, True), edit, (f"cd /testbed && {run} | tail", True))
    assert has_long_failure_streak(loop) is False
    assert has_repeated_failure(loop)
    # the same file through another command counts too
    assert has_repeated_failure(
        commands((run, True), edit, ("python -m pytest reproduce_issue.py", True), (run, True))
    )
    # three different failing commands, or two failures of one, are not a repeat
    assert not has_repeated_failure(commands(("a", True), ("b", True), edit, ("c", True)))
    assert not has_repeated_failure(commands((run, True), edit, (run, True), (run, False)))


def test_second_selection_excludes_labelled_runs_and_is_seeded() -> None:
    loop = commands(("t", True), ("e", False), ("t", True), ("e", False), ("t", True))
    quiet = commands(("t", True), ("e", False))
    sessions = [Session(f"r{i:02}", "hand", loop if i < 8 else quiet) for i in range(20)]
    strata = second_selection(sessions, ["r00", "r01", "r08"], repeat_size=4, sample_size=3)
    assert not {"r00", "r01", "r08"} & set(strata)
    assert [strata[r] for r in strata] == ["repeat_failure"] * 4 + ["sample_2"] * 3
    assert all(int(r[1:]) < 8 for r, s in strata.items() if s == "repeat_failure")
    assert all(int(r[1:]) > 8 for r, s in strata.items() if s == "sample_2")
    assert strata == second_selection(sessions, ["r00", "r01", "r08"], repeat_size=4, sample_size=3)


def test_fourth_selection_takes_every_unlabelled_run_in_a_seeded_order() -> None:
    quiet = commands(("t", True), ("e", False))
    sessions = [Session(f"r{i:02}", "hand", quiet) for i in range(60)]
    strata = fourth_selection(sessions, ["r00", "r07"])
    assert set(strata) == {f"r{i:02}" for i in range(60)} - {"r00", "r07"}
    assert set(strata.values()) == {"rest_4"}
    assert list(strata) != sorted(strata)
    assert list(strata) == list(fourth_selection(list(reversed(sessions)), ["r07", "r00"]))
    second = fourth_second_reads(list(strata))
    assert len(second) == len(set(second)) == 40 and set(second) <= set(strata)
    assert second == fourth_second_reads(sorted(strata, reverse=True))


def label(run: str, escalate: bool) -> EscalationLabel:
    return EscalationLabel(run, "sample", escalate, 3 if escalate else None, "r", "me", False)


def test_split_is_seeded_and_stratified_by_label() -> None:
    labels = [label(f"e{i}", True) for i in range(5)] + [label(f"n{i}", False) for i in range(9)]
    halves = split_halves(labels, seed=7)
    assert halves == split_halves(list(reversed(labels)), seed=7)  # order of rows irrelevant
    for value, sizes in ((True, (3, 2)), (False, (5, 4))):
        runs = [x.run_id for x in labels if x.escalate is value]
        assert tuple(sum(halves[r] == h for r in runs) for h in HALVES) == sizes


def test_label_file_errors_name_file_line_and_field(tmp_path: Path) -> None:
    head = "run_id,stratum,label,step,reason,labeller,saw_detector\n"
    bad = tmp_path / "labels.csv"
    bad.write_text(head + "a,sample,escalate,,stuck,me,no\n", encoding="utf-8")
    with pytest.raises(LabelFileError, match=r"labels\.csv line 2: field 'step'"):
        read_labels(bad)
    bad.write_text(head + "a,sample,maybe,,r,me,no\n", encoding="utf-8")
    with pytest.raises(LabelFileError, match=r"line 2: field 'label' must be one of"):
        read_labels(bad)
    bad.write_text(head + "a,sample,no,,r,me,no\na,sample,no,,r,me,no\n", encoding="utf-8")
    with pytest.raises(LabelFileError, match=r"line 3: run 'a' is labelled twice"):
        read_labels(bad)


def test_committed_labels_and_split_agree() -> None:
    labels = read_labels(LABEL_DIR / "labels.csv")
    first = [x for x in labels if x.stratum in ("long_streak", "sample")]
    second = [x for x in labels if x.stratum in ("repeat_failure", "sample_2")]
    third = [x for x in labels if x.stratum in ("repeat_failure_3", "sample_3")]
    fourth = [x for x in labels if x.stratum == "rest_4"]
    assert (len(first), len(second), len(third), len(fourth)) == (67, 40, 83, 310)
    # the first draw's labeller had not seen the detector; the second draw's had seen its rule;
    # the third draw's six readers had not
    assert all(not x.saw_detector and x.labeller.startswith("reader-1") for x in first)
    assert all(x.saw_detector and x.labeller.startswith("reader-2") for x in second)
    assert all(not x.saw_detector and x.labeller.startswith("reader-3.") for x in third)
    assert all(not x.saw_detector and x.labeller.startswith("reader-4.") for x in fourth)
    split = read_split(LABEL_DIR / "split.csv")
    # the first draw: the seeded rule's split; the second and third: each held out apart
    apart = (HELD_OUT_2, HELD_OUT_3, HELD_OUT_4)
    assert {r: h for r, h in split.items() if h not in apart} == split_halves(first)
    assert {r for r, h in split.items() if h == HELD_OUT_2} == {x.run_id for x in second}
    assert {r for r, h in split.items() if h == HELD_OUT_3} == {x.run_id for x in third}
    assert {r for r, h in split.items() if h == HELD_OUT_4} == {x.run_id for x in fourth}
    assert [sum(x.escalate for x in draw) for draw in (second, third, fourth)] == [3, 5, 7]


def test_second_reads_are_independent_readers_of_the_third_and_fourth_draws() -> None:
    labels = read_labels(LABEL_DIR / "labels.csv")
    second = read_labels(LABEL_DIR / SECOND_READS_FILE)
    third = {x.run_id for x in labels if x.stratum in ("repeat_failure_3", "sample_3")}
    fourth = [x.run_id for x in labels if x.stratum == "rest_4"]
    assert {x.run_id for x in second[:30]} <= third
    # the fourth draw's second reads are the seeded sample the rule names, in its order
    assert [x.run_id for x in second[30:]] == fourth_second_reads(fourth)
    assert all(not x.saw_detector for x in second)
    found = second_read_agreement(labels, second)
    assert (found.runs, found.agree, found.both_escalate, found.disagreements) == (70, 70, 2, ())


def test_second_read_agreement_counts_and_refuses_the_same_reader() -> None:
    labels = [label("a", True), label("b", False), label("c", True)]
    other = [
        EscalationLabel("a", "sample", True, 9, "r", "other", False),
        EscalationLabel("b", "sample", True, 4, "r", "other", False),
        EscalationLabel("c", "sample", False, None, "r", "other", False),
    ]
    found = second_read_agreement(labels, other)
    assert (found.runs, found.agree, found.both_escalate) == (3, 1, 1)
    assert found.disagreements == ("b", "c")
    assert found.step_differences == (("a", 9 - (labels[0].step or 0)),)
    with pytest.raises(LabelFileError, match="made by its first reader"):
        second_read_agreement(labels, labels[:1])
    with pytest.raises(LabelFileError, match="has no label"):
        second_read_agreement(labels[:1], other[1:2])


def fired_at(run: str, step: int) -> SessionReplay:
    point = EscalationPoint(run, "hand", step, 1, 4, "sig", 10, 10 - step, False, 0, None, "")
    return SessionReplay(run, "hand", 10, 4, 4, None, (point,))


def test_agreement_on_both_held_out_sets_pools_their_runs() -> None:
    labels = [label("a", True), label("b", False), label("c", True), label("d", False)]
    halves = {"a": "held_out", "b": "held_out", "c": HELD_OUT_2, "d": "tuning"}
    replays = [fired_at("a", 4), fired_at("b", 6), fired_at("d", 6)]
    both = agreement(labels, replays, halves, HELD_OUT_BOTH, 4)
    assert (both.runs, both.labelled, both.fired, both.both) == (3, 2, 2, 1)
    assert (both.false_alarms, both.missed, both.offsets) == (("b",), ("c",), (("a", 1),))
    assert agreement(labels, replays, halves, HELD_OUT_2, 4).runs == 1


@pytest.mark.shared
@pytest.mark.slow
def test_labelled_runs_are_exactly_the_selection_on_real_runs(shared_dir: Path) -> None:
    sessions = read_agent_runs(shared_dir / "data" / "agent-runs")
    labels = read_labels(LABEL_DIR / "labels.csv")
    rows = [(x.run_id, x.stratum) for x in labels]
    first = label_selection(sessions)
    assert list(first.items()) == rows[: len(first)]
    # the second draw: the rule written down before its runs were read, never a run labelled
    # before; 83 unlabelled runs repeat a failure, 30 of them drawn, and 10 of the rest
    second = second_selection(sessions, list(first))
    assert list(second.items()) == rows[len(first) : len(first) + len(second)]
    # the third draw: every unlabelled run with a repeated failure and 30 of the rest
    third = third_selection(sessions, [*first, *second])
    before = len(first) + len(second)
    assert list(third.items()) == rows[before : before + len(third)]
    assert sum(1 for s in third.values() if s == "repeat_failure_3") == 53
    # the fourth draw: every run left, in the seeded order; with it all 500 are labelled
    fourth = fourth_selection(sessions, [*first, *second, *third])
    assert list(fourth.items()) == rows[before + len(third) :]
    assert len(rows) == len(sessions) == 500
    pool = [s for s in sessions if s.session_id not in first and has_repeated_failure(s.calls)]
    assert len(pool) == 83
    # the observation text joins 1:1: every step of every run carries what the agent saw
    assert all(c.output for s in sessions for c in s.calls)
