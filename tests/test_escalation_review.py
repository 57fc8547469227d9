"""The anti-loop detector against a person reading the steps: the label file, the selection
rule and the agreement figures (hand-made sessions, then the real runs)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from agent_reflection.in_loop import loop_detector
from agent_reflection.in_loop.escalation_review import (
    COLUMNS,
    ReviewLabel,
    ReviewLabelError,
    agreement,
    agreement_by_threshold,
    read_review_labels,
    review_strata,
    stale_labels,
)
from agent_reflection.in_loop.loop_replay import Session, ToolCall, read_agent_runs, replay_all

LABELS = Path(__file__).parent / "data" / "escalation_review" / "labels.csv"


def session(name: str, streak: int, other_failures: int = 0) -> Session:
    """``streak`` failures of one command, then ``other_failures`` of distinct commands."""
    calls = [
        ToolCall(i + 1, "Bash", {"command": "make"}, True, "Exit code 2") for i in range(streak)
    ]
    calls += [
        ToolCall(streak + i + 1, "Bash", {"command": f"probe {chr(97 + i)}"}, True, "Exit code 1")
        for i in range(other_failures)
    ]
    return Session(name, "hand", tuple(calls))


def label(
    run: str,
    stratum: str,
    should: bool,
    *,
    max_streak: int,
    first: int | None = None,
    timing: str | None = None,
    person: int | None = None,
) -> ReviewLabel:
    return ReviewLabel(run, stratum, max_streak, first, should, timing, person, "why")


def test_agreement_counts_precision_recall_timing_and_misses() -> None:
    sessions = [
        session("loop", 5),  # escalates at step 4; a person would at step 3
        session("alarm", 4),  # escalates at step 4; a person would not
        session("near", 3),  # does not escalate; a person would at step 3
        session("quiet", 2, other_failures=3),
        session("unread", 6),  # escalates, never reviewed
    ]
    replays = replay_all(sessions, 4)
    labels = [
        label("loop", "escalated", True, max_streak=5, first=4, timing="too_late", person=3),
        label("alarm", "escalated", False, max_streak=4, first=4),
        label("near", "near_miss", True, max_streak=3, person=3),
        label("quiet", "sample", False, max_streak=2),
    ]
    result = agreement(labels, replays, 4)
    assert (result.reviewed, result.escalated, result.escalated_should) == (4, 2, 1)
    assert (result.should, result.escalated_should) == (2, 1)
    assert result.precision == result.recall == 0.5
    assert result.precision_low is not None and 0 < result.precision_low < 0.5
    assert dict(result.timing) == {"too_early": 0, "right": 0, "too_late": 1, "unjudged": 0}
    assert result.median_lag_steps == 1.0
    assert (result.missed, result.false_alarms) == (("near",), ("alarm",))
    assert result.unreviewed_escalations == ("unread",)
    assert [(s.stratum, s.runs, s.should_escalate, s.escalated) for s in result.strata] == [
        ("escalated", 2, 1, 2),
        ("near_miss", 1, 1, 0),
        ("sample", 1, 0, 0),
    ]
    assert stale_labels(labels, replays) == ()
    # at threshold 3 the near miss escalates too; the trigger that moved is no longer judged
    at3 = {a.threshold: a for a in agreement_by_threshold(labels, sessions, [3, 4])}[3]
    assert (at3.escalated, at3.escalated_should, at3.recall) == (3, 2, 1.0)
    assert dict(at3.timing)["unjudged"] == 2
    # a detector change that moves a reviewed trigger makes its label stale
    moved = replay_all([session("loop", 5), session("alarm", 3)], 4)
    assert stale_labels(labels[:2], moved) == ("alarm",)


def test_review_strata_selection_rule() -> None:
    sessions = [session("esc", 4), session("near", 3), session("two", 2)]
    sessions += [session(f"quiet{i:02}", 1, other_failures=3) for i in range(30)]
    sessions += [session("few", 1, other_failures=2)]  # 3 failures: below the pool's minimum
    strata = review_strata(replay_all(sessions, 4), 4, sample_size=5, seed=7)
    assert list(strata.items())[:2] == [("esc", "escalated"), ("near", "near_miss")]
    drawn = [run for run, stratum in strata.items() if stratum == "sample"]
    assert len(drawn) == 5 and "few" not in drawn and "two" not in drawn
    # seeded: the same draw again, another seed another draw
    assert review_strata(replay_all(sessions, 4), 4, sample_size=5, seed=7) == strata
    assert review_strata(replay_all(sessions, 4), 4, sample_size=5, seed=8) != strata


def write_labels(path: Path, **changes: str) -> Path:
    row = dict(
        run_id="r",
        stratum="escalated",
        resolved="true",
        failures="4",
        max_streak="4",
        first_escalation_step="9",
        should_escalate="yes",
        trigger_timing="right",
        person_step="9",
        rationale="stuck",
    )
    row.update(changes)
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, COLUMNS)
        writer.writeheader()
        writer.writerow(row)
    return path


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"should_escalate": "maybe"}, r"line 2: field 'should_escalate' must be one of yes, no"),
        ({"stratum": "other"}, r"line 2: field 'stratum' must be one of"),
        ({"trigger_timing": "soon"}, r"line 2: field 'trigger_timing' must be one of"),
        ({"person_step": ""}, r"line 2: field 'person_step' must be set exactly"),
        ({"max_streak": "four"}, r"line 2: field 'max_streak' must be an integer"),
        ({"first_escalation_step": ""}, r"line 2: field 'first_escalation_step' must be set"),
        ({"rationale": " "}, r"line 2: field 'rationale' is empty"),
        (
            {"should_escalate": "no", "person_step": ""},
            r"line 2: field 'trigger_timing' is only for escalated runs that should escalate",
        ),
    ],
)
def test_bad_label_row_names_file_line_and_field(
    tmp_path: Path, changes: dict[str, str], message: str
) -> None:
    path = write_labels(tmp_path / "labels.csv", **changes)
    with pytest.raises(ReviewLabelError, match=message) as caught:
        read_review_labels(path)
    assert str(path) in str(caught.value)


def test_label_file_structure() -> None:
    labels = read_review_labels(LABELS)
    counts = {s: sum(1 for x in labels if x.stratum == s) for s in ("escalated", "near_miss")}
    assert counts == {"escalated": 21, "near_miss": 20}
    assert sum(1 for x in labels if x.stratum == "sample") == 20
    assert all(
        x.max_streak >= loop_detector.DEFAULT_THRESHOLD for x in labels if x.first_escalation_step
    )
    assert all(x.max_streak == 3 for x in labels if x.stratum == "near_miss")
    assert all(x.max_streak <= 2 for x in labels if x.stratum == "sample")


@pytest.mark.shared
@pytest.mark.skip(
    reason="the review read the command-and-exit-code detector's replay; the detector now reads "
    "the output text and is checked against tests/data/escalation_labels (retired next)"
)
def test_detector_against_the_reading_on_real_runs(shared_dir: Path) -> None:
    labels = read_review_labels(LABELS)
    threshold = loop_detector.DEFAULT_THRESHOLD
    sessions = read_agent_runs(shared_dir / "data" / "agent-runs")
    replays = replay_all(sessions, threshold)
    # the rows are exactly the selection rule's runs, and the replay is the one that was read:
    # a detector change that moves any of them fails here until the labels are read again
    assert list(review_strata(replays, threshold).items()) == [
        (x.run_id, x.stratum) for x in labels
    ]
    assert stale_labels(labels, replays) == ()
    result = agreement(labels, replays, threshold)
    assert result.unreviewed_escalations == ()
    # the figures docs/in-loop.md ("Checked by reading") reports
    assert (result.escalated, result.escalated_should) == (21, 11)
    assert (result.should, result.escalated_should) == (12, 11)
    assert round(result.precision or 0, 3) == 0.524 and round(result.recall or 0, 3) == 0.917
    assert dict(result.timing) == {"too_early": 1, "right": 7, "too_late": 3, "unjudged": 0}
    assert result.missed == ("sympy__sympy-15976",)
    # the sensitivity table: thresholds 3 to 6 flag only runs that were read
    by_k = {a.threshold: a for a in agreement_by_threshold(labels, sessions, range(3, 7))}
    assert all(a.unreviewed_escalations == () for a in by_k.values())
    assert [(by_k[k].escalated, by_k[k].escalated_should) for k in range(3, 7)] == [
        (41, 12),
        (21, 11),
        (10, 7),
        (8, 6),
    ]
