"""A reader's escalation labels on real agent runs: which runs were read, the labels, the split.

The reader reads each run's steps *with the text the agent saw after each one* and says whether
a careful reviewer would have stepped in (``escalate``: the agent was stuck repeating a failing
approach without learning anything) and at which step; the rule of thumb, written before any
run was read, is ``tests/data/escalation_labels/RULE.md``.

- :func:`label_selection` is the selection rule as code: every run with a long failure streak,
  plus a seeded random sample of the rest. It looks only at the raw record (return code,
  timeout, a Python traceback in the text), never at the detector, so the labels do not depend
  on what they are used to judge.
- :func:`second_selection` is the second draw's rule, written down after the first held-out
  half proved too small and before its runs were read: runs where one command or one ``.py``
  file fails 3+ times anywhere (edit-rerun loops the streak rule misses), plus a seeded sample
  of the rest, never a run labelled before; every run of it is held out as ``held_out_2``.
- :func:`third_selection` is the third draw's rule: every unlabelled run with a repeated
  failure plus a seeded sample of the rest, read blind by six readers, 30 runs twice
  (:func:`second_read_agreement`); every run of it is held out as ``held_out_3``.
- :func:`fourth_selection` is the fourth draw's rule: every run not labelled by then, read
  blind after the detector was changed against all earlier labels and committed; every run
  of it is held out as ``held_out_4``.
- :func:`split_halves` splits the labelled runs into a tuning half and a held-out half, seeded
  and stratified by label (both halves get their share of the rare ``escalate`` runs). The
  split was committed with the labels, before the detector was changed against them.
- :func:`agreement` compares the detector's replay with the labels of one half: precision and
  recall (Wilson intervals) and, where both escalate, the offset of the detector's first
  escalation from the reader's step; :func:`agreement_by_threshold` does it at each threshold.
- :func:`read_labels` and :func:`read_split` read the files (a bad row names file, line and
  field).
"""

from __future__ import annotations

import csv
import random
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent_reflection.errors import ReflectionError
from agent_reflection.in_loop.loop_replay import Session, SessionReplay, ToolCall, replay_all
from agent_reflection.stats.wilson import wilson_ci

#: Seed of the random sample of the other runs (the date the labels were made).
LABEL_SEED = 20261206
#: Runs drawn at random from those without a long failure streak.
SAMPLE_SIZE = 40
#: A long failure streak: this many failed steps in a row ...
STREAK_STEPS = 3
#: ... or this many failed steps within any window of ``WINDOW_STEPS`` consecutive steps.
WINDOW_FAILURES = 5
WINDOW_STEPS = 8
#: Seed of the tuning / held-out split.
SPLIT_SEED = 35
#: What marks a failed step in the raw text for the selection: a Python traceback.
TRACEBACK = "Traceback (most recent call last)"
#: The second draw (held-out-2), added after the first held-out figures were too weak to judge:
#: its seed, how many of the runs with a repeated failure and how many of the rest it reads.
SECOND_SEED = 352
REPEAT_SAMPLE_SIZE = 30
SAMPLE_2_SIZE = 10
#: A repeated failure: this many raw-failed steps on one command or one ``.py`` file.
REPEAT_FAILURES = 3
#: The third draw (held-out-3): its seed and how many of the runs without a repeated failure.
THIRD_SEED = 354
SAMPLE_3_SIZE = 30
#: The fourth draw (held-out-4): every run still unlabelled, read in this seed's order, and
#: how many of them a second reader reads (``random.Random(FOURTH_SEED + 1).sample``).
FOURTH_SEED = 356
SECOND_READ_4_SIZE = 40
STRATA = (
    "long_streak",
    "sample",
    "repeat_failure",
    "sample_2",
    "repeat_failure_3",
    "sample_3",
    "rest_4",
)
HALVES = ("tuning", "held_out")
#: Every run of the second draw is held out apart from the first split; so is the third draw.
HELD_OUT_2 = "held_out_2"
HELD_OUT_3 = "held_out_3"
HELD_OUT_4 = "held_out_4"
SPLIT_VALUES = (*HALVES, HELD_OUT_2, HELD_OUT_3, HELD_OUT_4)
#: Both held-out sets together: a ``half`` naming several split values joined by ``+``.
HELD_OUT_BOTH = f"held_out+{HELD_OUT_2}"
#: Every held-out set: the detector was not changed after any of them was labelled.
HELD_OUT_ALL = f"held_out+{HELD_OUT_2}+{HELD_OUT_3}+{HELD_OUT_4}"
#: The sets the detector is reported on, results first (the tuning half last).
REPORTED_SETS = (HELD_OUT_4, HELD_OUT_3, "held_out", HELD_OUT_2, HELD_OUT_ALL, "tuning")
#: Independent second reads of some labelled runs (same columns as the labels), beside them.
SECOND_READS_FILE = "second_reads.csv"
LABEL_COLUMNS = ("run_id", "stratum", "label", "step", "reason", "labeller", "saw_detector")
SPLIT_COLUMNS = ("run_id", "half")
#: "Fires where the reader would": the first escalation within this many steps of the reader's.
WITHIN_STEPS = 3


class LabelFileError(ReflectionError, ValueError):
    """A label or split file row cannot be used; the message names the file, line and field."""


@dataclass(frozen=True)
class EscalationLabel:
    """One labelled run."""

    run_id: str
    stratum: str
    escalate: bool
    #: The step at which the reader would intervene (only for ``escalate``).
    step: int | None
    reason: str
    #: Who made the label, e.g. ``reader-1 (LLM-assisted reading)``.
    labeller: str
    #: Whether the labeller had seen the detector's rule or outputs on these runs.
    saw_detector: bool


def raw_failed(call: ToolCall) -> bool:
    """The selection's notion of a failed step: non-zero exit, timeout, or a traceback shown."""
    return call.failed or TRACEBACK in call.output


def has_long_failure_streak(calls: Sequence[ToolCall]) -> bool:
    """``STREAK_STEPS`` raw failures in a row, or ``WINDOW_FAILURES`` within any
    ``WINDOW_STEPS`` consecutive calls (a shorter run is one window)."""
    failed = [raw_failed(c) for c in calls]
    streak = longest = 0
    for f in failed:
        streak = streak + 1 if f else 0
        longest = max(longest, streak)
    starts = range(max(1, len(failed) - WINDOW_STEPS + 1))
    window = max(sum(failed[i : i + WINDOW_STEPS]) for i in starts) if failed else 0
    return longest >= STREAK_STEPS or window >= WINDOW_FAILURES


def label_selection(
    sessions: Sequence[Session], *, sample_size: int = SAMPLE_SIZE, seed: int = LABEL_SEED
) -> dict[str, str]:
    """Run id -> stratum of the runs to label, in reading order (pure).

    ``long_streak``: every run with a long failure streak, by id. ``sample``:
    ``random.Random(seed).sample`` of the other runs (sorted by id first), in the order drawn.
    """
    long = sorted(s.session_id for s in sessions if has_long_failure_streak(s.calls))
    taken = set(long)
    rest = sorted(s.session_id for s in sessions if s.session_id not in taken)
    sample = random.Random(seed).sample(rest, min(sample_size, len(rest)))
    return {**{run: "long_streak" for run in long}, **{run: "sample" for run in sample}}


_PY_FILE = re.compile(r"[\w./-]+\.py\b")


def repeat_keys(command: str) -> frozenset[str]:
    """What a command is "the same" as for the second selection (pure): its normalised text
    (leading ``cd DIR &&`` dropped, cut at the first `` | ``, ``2>&1`` dropped, whitespace
    collapsed) as ``cmd:...``, and the first ``.py`` path in it (``/testbed/`` and ``./``
    dropped) as ``file:...``."""
    parts = [p.strip() for p in command.split("&&")]
    while len(parts) > 1 and parts[0].startswith("cd "):
        parts.pop(0)
    text = " ".join(" && ".join(parts).split(" | ")[0].replace("2>&1", "").split())
    keys = {f"cmd:{text}"}
    found = _PY_FILE.search(text)
    if found:
        keys.add("file:" + found.group(0).removeprefix("/testbed/").removeprefix("./"))
    return frozenset(keys)


def has_repeated_failure(calls: Sequence[ToolCall]) -> bool:
    """``REPEAT_FAILURES`` raw-failed steps share one :func:`repeat_keys` key, wherever they are
    in the run (other steps may lie between them)."""
    counts: Counter[str] = Counter()
    for call in calls:
        if raw_failed(call):
            counts.update(repeat_keys(str(call.tool_input.get("command", ""))))
    return bool(counts) and max(counts.values()) >= REPEAT_FAILURES


def second_selection(
    sessions: Sequence[Session],
    labelled: Sequence[str],
    *,
    repeat_size: int = REPEAT_SAMPLE_SIZE,
    sample_size: int = SAMPLE_2_SIZE,
    seed: int = SECOND_SEED,
    strata: tuple[str, str] = ("repeat_failure", "sample_2"),
) -> dict[str, str]:
    """Run id -> stratum of the second draw (pure), never a run in ``labelled``.

    ``repeat_failure``: ``random.Random(seed).sample`` of the unlabelled runs with
    :func:`has_repeated_failure` (sorted by id first); ``sample_2``:
    ``random.Random(seed + 1).sample`` of the other unlabelled runs; each in the order drawn.
    ``strata`` names the two (the third draw reuses the rule under its own names).
    """
    done = set(labelled)
    pool = sorted(s.session_id for s in sessions if s.session_id not in done)
    repeated = {s.session_id for s in sessions if has_repeated_failure(s.calls)}
    repeat_pool = [run for run in pool if run in repeated]
    rest = [run for run in pool if run not in repeated]
    first = random.Random(seed).sample(repeat_pool, min(repeat_size, len(repeat_pool)))
    second = random.Random(seed + 1).sample(rest, min(sample_size, len(rest)))
    return {**{run: strata[0] for run in first}, **{run: strata[1] for run in second}}


def third_selection(sessions: Sequence[Session], labelled: Sequence[str]) -> dict[str, str]:
    """Run id -> stratum of the third draw (pure): the second draw's rule again over the runs
    not labelled by then, taking *every* run with a repeated failure (``repeat_failure_3``, in
    ``random.Random(THIRD_SEED)`` order) and ``SAMPLE_3_SIZE`` of the rest (``sample_3``)."""
    return second_selection(
        sessions,
        labelled,
        repeat_size=len(sessions),
        sample_size=SAMPLE_3_SIZE,
        seed=THIRD_SEED,
        strata=("repeat_failure_3", "sample_3"),
    )


def fourth_selection(sessions: Sequence[Session], labelled: Sequence[str]) -> dict[str, str]:
    """Run id -> stratum of the fourth draw (pure): *every* run not in ``labelled``
    (``rest_4``), sorted by id and shuffled by ``random.Random(FOURTH_SEED)``."""
    done = set(labelled)
    rest = sorted(s.session_id for s in sessions if s.session_id not in done)
    random.Random(FOURTH_SEED).shuffle(rest)
    return {run: "rest_4" for run in rest}


def fourth_second_reads(selection: Sequence[str]) -> list[str]:
    """The fourth draw's runs a second reader reads (pure): ``SECOND_READ_4_SIZE`` of them by
    ``random.Random(FOURTH_SEED + 1).sample`` over the ids sorted."""
    pool = sorted(selection)
    return random.Random(FOURTH_SEED + 1).sample(pool, min(SECOND_READ_4_SIZE, len(pool)))


def split_halves(labels: Sequence[EscalationLabel], seed: int = SPLIT_SEED) -> dict[str, str]:
    """Run id -> ``tuning`` / ``held_out`` (pure): within each label value the runs, sorted by
    id and shuffled by ``random.Random(seed)``, alternate between the halves, tuning first."""
    rng = random.Random(seed)
    halves: dict[str, str] = {}
    for value in (True, False):
        runs = sorted(label.run_id for label in labels if label.escalate is value)
        rng.shuffle(runs)
        halves.update({run: HALVES[i % 2] for i, run in enumerate(runs)})
    return dict(sorted(halves.items()))


@dataclass(frozen=True)
class LabelAgreement:
    """The detector at one threshold against the labels of one half."""

    threshold: int
    half: str
    runs: int
    #: Runs the reader labelled ``escalate``, runs the detector escalates, and both.
    labelled: int
    fired: int
    both: int
    precision: float | None
    precision_low: float | None
    precision_high: float | None
    recall: float | None
    recall_low: float | None
    recall_high: float | None
    #: Where both escalate: (run, detector's first escalation step - reader's step).
    offsets: tuple[tuple[str, int], ...]
    #: Of ``both``, how many fire within :data:`WITHIN_STEPS` steps of the reader's step.
    within: int
    false_alarms: tuple[str, ...]
    missed: tuple[str, ...]


def agreement(
    labels: Sequence[EscalationLabel],
    replays: Sequence[SessionReplay],
    halves: Mapping[str, str],
    half: str,
    threshold: int,
) -> LabelAgreement:
    """The replays (made at ``threshold``) against the labels of ``half`` (pure); a ``half``
    like ``held_out+held_out_2`` takes the runs of every split value it names."""
    members = set(half.split("+"))
    chosen = [x for x in labels if halves.get(x.run_id) in members]
    first = {r.session_id: r.escalations[0].step for r in replays if r.escalations}
    fired = [x for x in chosen if x.run_id in first]
    labelled = [x for x in chosen if x.escalate]
    both = [x for x in fired if x.escalate]
    precision = wilson_ci(len(both), len(fired)) if fired else None
    recall = wilson_ci(len(both), len(labelled)) if labelled else None
    offsets = tuple((x.run_id, first[x.run_id] - (x.step or 0)) for x in both)
    return LabelAgreement(
        threshold=threshold,
        half=half,
        runs=len(chosen),
        labelled=len(labelled),
        fired=len(fired),
        both=len(both),
        precision=precision.proportion if precision else None,
        precision_low=precision.ci_low if precision else None,
        precision_high=precision.ci_high if precision else None,
        recall=recall.proportion if recall else None,
        recall_low=recall.ci_low if recall else None,
        recall_high=recall.ci_high if recall else None,
        offsets=offsets,
        within=sum(1 for _, offset in offsets if abs(offset) <= WITHIN_STEPS),
        false_alarms=tuple(x.run_id for x in fired if not x.escalate),
        missed=tuple(x.run_id for x in labelled if x.run_id not in first),
    )


@dataclass(frozen=True)
class SecondReadAgreement:
    """Two readers on the same runs: the primary labels against independent second reads."""

    runs: int
    #: Runs where both say the same (``escalate`` / ``no``), and where both say ``escalate``.
    agree: int
    both_escalate: int
    #: Runs where they differ, and for runs both escalate: (run, second step - primary step).
    disagreements: tuple[str, ...]
    step_differences: tuple[tuple[str, int], ...]


def second_read_agreement(
    labels: Sequence[EscalationLabel], second: Sequence[EscalationLabel]
) -> SecondReadAgreement:
    """How far a second reader agrees with the labels on the runs it read again (pure); a run
    it read that has no label, or that the same labeller labelled, is an error."""
    primary = {x.run_id: x for x in labels}
    pairs = []
    for read in second:
        first = primary.get(read.run_id)
        if first is None:
            raise LabelFileError(f"second read of {read.run_id!r}: the run has no label")
        if first.labeller == read.labeller:
            raise LabelFileError(
                f"second read of {read.run_id!r}: made by its first reader, {read.labeller!r}"
            )
        pairs.append((first, read))
    both = [(a, b) for a, b in pairs if a.escalate and b.escalate]
    return SecondReadAgreement(
        runs=len(pairs),
        agree=sum(1 for a, b in pairs if a.escalate == b.escalate),
        both_escalate=len(both),
        disagreements=tuple(a.run_id for a, b in pairs if a.escalate != b.escalate),
        step_differences=tuple((a.run_id, (b.step or 0) - (a.step or 0)) for a, b in both),
    )


def agreement_by_threshold(
    labels: Sequence[EscalationLabel],
    sessions: Sequence[Session],
    halves: Mapping[str, str],
    sets: Sequence[str],
    thresholds: Sequence[int],
) -> tuple[LabelAgreement, ...]:
    """:func:`agreement` for each of ``sets`` at each threshold (set by set, thresholds in
    order), replaying each labelled run of any of the sets once per threshold."""
    members = {value for half in sets for value in half.split("+")}
    wanted = {x.run_id for x in labels if halves.get(x.run_id) in members}
    chosen = [s for s in sessions if s.session_id in wanted]
    replays = {k: replay_all(chosen, k) for k in thresholds}
    return tuple(
        agreement(labels, replays[k], halves, half, k) for half in sets for k in thresholds
    )


# --- readers (I/O) ---------------------------------------------------------------------------


def _rows(path: Path, columns: Sequence[str]) -> list[tuple[str, dict[str, str]]]:
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in columns if c not in (reader.fieldnames or ())]
        if missing:
            raise LabelFileError(f"{path}: missing column(s) {', '.join(missing)}")
        return [(f"{path} line {n}", row) for n, row in enumerate(reader, 2)]


def _text(row: Mapping[str, str | None], name: str, where: str) -> str:
    value = (row.get(name) or "").strip()
    if not value:
        raise LabelFileError(f"{where}: field {name!r} is empty")
    return value


def _choice(row: Mapping[str, str | None], name: str, allowed: Sequence[str], where: str) -> str:
    value = (row.get(name) or "").strip()
    if value not in allowed:
        raise LabelFileError(
            f"{where}: field {name!r} must be one of {', '.join(allowed)}, got {value!r}"
        )
    return value


def read_labels(path: str | Path) -> tuple[EscalationLabel, ...]:
    """The rows of a label file (see ``tests/data/escalation_labels/README.md``)."""
    labels: dict[str, EscalationLabel] = {}
    for where, row in _rows(Path(path), LABEL_COLUMNS):
        run_id = _text(row, "run_id", where)
        if run_id in labels:
            raise LabelFileError(f"{where}: run {run_id!r} is labelled twice")
        escalate = _choice(row, "label", ("escalate", "no"), where) == "escalate"
        step_text = (row.get("step") or "").strip()
        if escalate != bool(step_text):
            raise LabelFileError(f"{where}: field 'step' must be set exactly for 'escalate'")
        if step_text and not step_text.isdigit():
            raise LabelFileError(f"{where}: field 'step' must be a step number, got {step_text!r}")
        labels[run_id] = EscalationLabel(
            run_id=run_id,
            stratum=_choice(row, "stratum", STRATA, where),
            escalate=escalate,
            step=int(step_text) if step_text else None,
            reason=_text(row, "reason", where),
            labeller=_text(row, "labeller", where),
            saw_detector=_choice(row, "saw_detector", ("yes", "no"), where) == "yes",
        )
    return tuple(labels.values())


def read_split(path: str | Path) -> dict[str, str]:
    """Run id -> half, from a split file (``run_id,half``)."""
    halves: dict[str, str] = {}
    for where, row in _rows(Path(path), SPLIT_COLUMNS):
        run_id = _text(row, "run_id", where)
        if run_id in halves:
            raise LabelFileError(f"{where}: run {run_id!r} is listed twice")
        halves[run_id] = _choice(row, "half", SPLIT_VALUES, where)
    return halves
