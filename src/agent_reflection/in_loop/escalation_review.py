"""The anti-loop detector checked by a person reading the steps: which runs, the labels, agreement.

A reviewer reads the steps of three strata of replayed runs and says, for each, whether the
agent was stuck repeating one failure so that a clean hand-off would help (``should_escalate``),
and for escalated runs whether the trigger came at a sensible point. :func:`review_strata` is
the selection rule as code, :func:`read_review_labels` reads the label file
(``tests/data/escalation_review/labels.csv``), :func:`agreement` compares the labels with the
detector's replay (precision and recall with Wilson intervals) and :func:`stale_labels` names
labelled runs whose replay no longer matches what the reviewer saw.
"""

from __future__ import annotations

import csv
import random
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent_reflection.errors import ReflectionError
from agent_reflection.in_loop.loop_replay import Session, SessionReplay, replay_all
from agent_reflection.stats.wilson import wilson_ci

#: Seed of the random sample of quiet runs (the date the labels were made).
REVIEW_SEED = 20261123
#: Quiet runs drawn for the sample stratum.
SAMPLE_SIZE = 20
#: A quiet run enters the sample pool only with this many failed calls: enough failures that a
#: loop could have hidden among them.
SAMPLE_MIN_FAILURES = 4
STRATA = ("escalated", "near_miss", "sample")
TIMINGS = ("too_early", "right", "too_late")
COLUMNS = (
    "run_id",
    "stratum",
    "resolved",
    "failures",
    "max_streak",
    "first_escalation_step",
    "should_escalate",
    "trigger_timing",
    "person_step",
    "rationale",
)


class ReviewLabelError(ReflectionError, ValueError):
    """A label file row cannot be used; the message names the file, line and field."""


@dataclass(frozen=True)
class ReviewLabel:
    """One reviewed run, with the detector's replay as the reviewer saw it."""

    run_id: str
    stratum: str
    #: Replay at labelling time: the run's longest same-signature streak and the step of its
    #: first escalation (None: it did not escalate).
    max_streak: int
    first_escalation_step: int | None
    should_escalate: bool
    #: For escalated runs that should escalate: was the first trigger too early, right, late.
    trigger_timing: str | None
    #: For runs that should escalate: the step at which the reviewer would have handed off.
    person_step: int | None
    rationale: str


def review_strata(
    replays: Sequence[SessionReplay],
    threshold: int,
    *,
    sample_size: int = SAMPLE_SIZE,
    seed: int = REVIEW_SEED,
    min_failures: int = SAMPLE_MIN_FAILURES,
) -> dict[str, str]:
    """Run id -> stratum of the runs to review, in review order (pure).

    ``escalated``: every run the detector escalates, by id. ``near_miss``: every run whose
    longest streak is ``threshold - 1``, by id. ``sample``: ``random.Random(seed).sample`` of
    the remaining runs with at least ``min_failures`` failed calls (sorted by id first), in
    the order drawn.
    """
    escalated = sorted(r.session_id for r in replays if r.escalations)
    near = sorted(
        r.session_id for r in replays if not r.escalations and r.max_streak == threshold - 1
    )
    taken = set(escalated) | set(near)
    pool = sorted(
        r.session_id for r in replays if r.session_id not in taken and r.failures >= min_failures
    )
    sample = random.Random(seed).sample(pool, min(sample_size, len(pool)))
    strata = {run: "escalated" for run in escalated}
    strata.update({run: "near_miss" for run in near})
    strata.update({run: "sample" for run in sample})
    return strata


@dataclass(frozen=True)
class StratumAgreement:
    stratum: str
    runs: int
    should_escalate: int
    escalated: int


@dataclass(frozen=True)
class ReviewAgreement:
    """The detector's escalations against the reviewer's labels, over the reviewed runs."""

    threshold: int
    reviewed: int
    #: Reviewed runs the detector escalates, and how many of them the reviewer would (the
    #: true positives, also the hits of recall).
    escalated: int
    escalated_should: int
    precision: float | None
    precision_low: float | None
    precision_high: float | None
    #: Reviewed runs the reviewer would escalate.
    should: int
    recall: float | None
    recall_low: float | None
    recall_high: float | None
    #: Escalated runs that should escalate, by the reviewer's timing of the first trigger
    #: (``too_early``, ``right``, ``too_late``, then ``unjudged``: the replay's first trigger is
    #: not the one the reviewer saw, e.g. at another threshold).
    timing: tuple[tuple[str, int], ...]
    #: Median of (first escalation step - the reviewer's hand-off step) over escalated runs
    #: that should escalate: positive means the detector comes late.
    median_lag_steps: float | None
    missed: tuple[str, ...]
    false_alarms: tuple[str, ...]
    #: Runs the detector escalates that nobody reviewed: the labels need revisiting.
    unreviewed_escalations: tuple[str, ...]
    strata: tuple[StratumAgreement, ...]


def agreement(
    labels: Sequence[ReviewLabel], replays: Sequence[SessionReplay], threshold: int
) -> ReviewAgreement:
    """Precision and recall of ``replays`` (made at ``threshold``) against ``labels`` (pure)."""
    by_run = {r.session_id: r for r in replays}
    first_step = {run: r.escalations[0].step for run, r in by_run.items() if r.escalations}
    labelled = {label.run_id: label for label in labels}
    escalated = [label for label in labels if label.run_id in first_step]
    should = [label for label in labels if label.should_escalate]
    hits = [label for label in escalated if label.should_escalate]
    precision = wilson_ci(len(hits), len(escalated)) if escalated else None
    recall = wilson_ci(len(hits), len(should)) if should else None
    timing_counts = {t: 0 for t in (*TIMINGS, "unjudged")}
    for label in hits:
        # the reviewer judged one trigger: a replay that fires elsewhere is not judged
        same = label.first_escalation_step == first_step[label.run_id]
        timing_counts[(label.trigger_timing if same else None) or "unjudged"] += 1
    lags = [
        first_step[label.run_id] - label.person_step
        for label in hits
        if label.person_step is not None
    ]
    strata = tuple(
        StratumAgreement(
            stratum,
            sum(1 for label in labels if label.stratum == stratum),
            sum(1 for label in labels if label.stratum == stratum and label.should_escalate),
            sum(1 for label in escalated if label.stratum == stratum),
        )
        for stratum in STRATA
    )
    return ReviewAgreement(
        threshold=threshold,
        reviewed=len(labels),
        escalated=len(escalated),
        escalated_should=len(hits),
        precision=precision.proportion if precision else None,
        precision_low=precision.ci_low if precision else None,
        precision_high=precision.ci_high if precision else None,
        should=len(should),
        recall=recall.proportion if recall else None,
        recall_low=recall.ci_low if recall else None,
        recall_high=recall.ci_high if recall else None,
        timing=tuple(timing_counts.items()),
        median_lag_steps=float(statistics.median(lags)) if lags else None,
        missed=tuple(label.run_id for label in should if label.run_id not in first_step),
        false_alarms=tuple(label.run_id for label in escalated if not label.should_escalate),
        unreviewed_escalations=tuple(sorted(set(first_step) - set(labelled))),
        strata=strata,
    )


def agreement_by_threshold(
    labels: Sequence[ReviewLabel], sessions: Sequence[Session], thresholds: Iterable[int]
) -> tuple[ReviewAgreement, ...]:
    """:func:`agreement` at each threshold (pure). Valid where ``unreviewed_escalations`` is
    empty: every run flagged there was read."""
    return tuple(agreement(labels, replay_all(sessions, k), k) for k in thresholds)


def stale_labels(
    labels: Sequence[ReviewLabel], replays: Sequence[SessionReplay]
) -> tuple[str, ...]:
    """Labelled runs whose replay differs from the one reviewed (streak or first escalation).

    ``replays`` must be made at the threshold the labels were made at; a run missing from
    ``replays`` is stale too.
    """
    by_run = {r.session_id: r for r in replays}
    stale = []
    for label in labels:
        replay = by_run.get(label.run_id)
        first = replay.escalations[0].step if replay and replay.escalations else None
        if replay is None or (replay.max_streak, first) != (
            label.max_streak,
            label.first_escalation_step,
        ):
            stale.append(label.run_id)
    return tuple(stale)


# --- reader (I/O) ----------------------------------------------------------------------------


def _int(row: Mapping[str, str], name: str, where: str) -> int | None:
    value = (row.get(name) or "").strip()
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        raise ReviewLabelError(
            f"{where}: field {name!r} must be an integer, got {value!r}"
        ) from None


def _choice(row: Mapping[str, str], name: str, allowed: Sequence[str], where: str) -> str:
    value = (row.get(name) or "").strip()
    if value not in allowed:
        raise ReviewLabelError(
            f"{where}: field {name!r} must be one of {', '.join(allowed)}, got {value!r}"
        )
    return value


def read_review_labels(path: str | Path) -> tuple[ReviewLabel, ...]:
    """The rows of a label file (see ``tests/data/escalation_review/README.md``)."""
    file = Path(path)
    labels: dict[str, ReviewLabel] = {}
    with file.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            raise ReviewLabelError(f"{file}: missing column(s) {', '.join(missing)}")
        for n, row in enumerate(reader, 2):
            where = f"{file} line {n}"
            run_id = (row.get("run_id") or "").strip()
            if not run_id:
                raise ReviewLabelError(f"{where}: field 'run_id' is empty")
            if run_id in labels:
                raise ReviewLabelError(f"{where}: run {run_id!r} is labelled twice")
            stratum = _choice(row, "stratum", STRATA, where)
            should = _choice(row, "should_escalate", ("yes", "no"), where) == "yes"
            first = _int(row, "first_escalation_step", where)
            timing = (row.get("trigger_timing") or "").strip() or None
            person = _int(row, "person_step", where)
            if (stratum == "escalated") != (first is not None):
                raise ReviewLabelError(
                    f"{where}: field 'first_escalation_step' must be set exactly for the "
                    "escalated stratum"
                )
            if should and first is not None:
                timing = _choice(row, "trigger_timing", TIMINGS, where)
            elif timing is not None:
                raise ReviewLabelError(
                    f"{where}: field 'trigger_timing' is only for escalated runs that should "
                    f"escalate, got {timing!r}"
                )
            if should != (person is not None):
                raise ReviewLabelError(
                    f"{where}: field 'person_step' must be set exactly when should_escalate is yes"
                )
            rationale = (row.get("rationale") or "").strip()
            if not rationale:
                raise ReviewLabelError(f"{where}: field 'rationale' is empty")
            max_streak = _int(row, "max_streak", where)
            if max_streak is None:
                raise ReviewLabelError(f"{where}: field 'max_streak' is empty")
            labels[run_id] = ReviewLabel(
                run_id=run_id,
                stratum=stratum,
                max_streak=max_streak,
                first_escalation_step=first,
                should_escalate=should,
                trigger_timing=timing,
                person_step=person,
                rationale=rationale,
            )
    return tuple(labels.values())
