"""The reader's escalation labels: the selection rule, the split, the file format."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_reflection.in_loop.escalation_labels import (
    HALVES,
    EscalationLabel,
    LabelFileError,
    has_long_failure_streak,
    label_selection,
    read_labels,
    read_split,
    split_halves,
)
from agent_reflection.in_loop.loop_replay import Session, ToolCall, read_agent_runs

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
    assert len(labels) == 67
    assert all(not x.saw_detector and x.labeller for x in labels)
    # the committed split is the seeded rule's split of the committed labels
    assert read_split(LABEL_DIR / "split.csv") == split_halves(labels)


@pytest.mark.shared
@pytest.mark.slow
def test_labelled_runs_are_exactly_the_selection_on_real_runs(shared_dir: Path) -> None:
    sessions = read_agent_runs(shared_dir / "data" / "agent-runs")
    labels = read_labels(LABEL_DIR / "labels.csv")
    assert list(label_selection(sessions).items()) == [(x.run_id, x.stratum) for x in labels]
    # the observation text joins 1:1: every step of every run carries what the agent saw
    assert all(c.output for s in sessions for c in s.calls)
