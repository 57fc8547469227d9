"""P2's only-self-reflection share corrected by gate labels: double sampling (Tenenbein 1970).

P2's bucket rules are a *fallible classifier* applied to every counted signal; gate labels
(which gate would realistically have caught the failure, or that it is no failure) are the
*true classifier*, known on a labelled subset. Per bucket ``b`` the labelled signals in ``b``
estimate ``P(gate g | bucket b)`` for g in :data:`GATE_CLASSES`; the corrected count of gate g
is ``sum_b n_b * P^(g | b)`` (``n_b``: P2's counted signals in ``b``), and the share is the
corrected only-self-reflection count over the corrected failures (every gate but
``not-a-failure``). When every signal is labelled this is the plain share of the labels.

Pooling: a bucket with unlabelled signals and fewer than ``min_labelled`` labelled ones takes
the gate distribution of all labelled signals (its own row would be mostly noise). A bucket
whose signals are all labelled keeps its own row: nothing is estimated there.

Interval: a seeded percentile bootstrap over both sources of error: the bucket counts are
redrawn as a multinomial of the counted signals, and each bucket's labelled signals are
redrawn with replacement (their number fixed, as the labelling design fixed it); the pooling
choice is kept as in the estimate. Both redraws are multinomials, so they are drawn as such.

Where the labelled signals come from is the caller's (:mod:`.analysis`): the team's own labels of
the judged signals, the shipped labels of the same signals, or (*transport*) the shipped
labels of other repositories' signals, whose matrix is then assumed to hold for the judged
repository; the bucket counts are then redrawn from the judged signals and the matrix from
the shipped ones.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from agent_reflection.experiments.p2.buckets import HUMAN_REVIEW, ONLY_SELF
from agent_reflection.experiments.p2.precision import (
    InvalidLabels,
    csv_rows,
    fixing_sha,
    label_files,
)
from agent_reflection.experiments.p2.raters import (
    GATES,
    Adjudication,
    GateLabel,
    SecondRater,
    read_gate_labels,
)
from agent_reflection.stats.interval import Interval

NOT_A_FAILURE = "not-a-failure"
#: the true classes: the gates of a failure (``unclear``: a failure whose gate the rater could
#: not name; it counts as a failure, never as only-self-reflection) and, last, no failure at all
#: (the failures are the classes before it)
GATE_CLASSES = (*GATES, NOT_A_FAILURE)
BUCKET_FILE_COLUMNS = ("repo", "fixing_sha", "bucket")

#: where a bucket's row of the matrix comes from
OWN_ROW = "own row"
ALL_LABELLED = "own row (every signal labelled)"
POOLED = "pooled"


@dataclass(frozen=True)
class GateObservation:
    """One labelled signal: P2's bucket and its true class."""

    repo: str
    fixing_sha: str
    bucket: str
    gate: str


@dataclass(frozen=True)
class MatrixRow:
    """One bucket: its counted signals, the labelled ones by gate, and the P(g | b) used."""

    bucket: str
    signals: int
    labelled: int
    gates: Mapping[str, int]
    used: str
    probabilities: Mapping[str, float]


@dataclass(frozen=True)
class GateCorrection:
    """The gate-corrected counts and only-self-reflection share (see the module docstring)."""

    rows: tuple[MatrixRow, ...]
    corrected: Mapping[str, float]
    failures: float
    share: Interval | None
    # the same share if no reviewer had caught the human-review ones: (osr + hr) / failures
    share_without_review: Interval | None
    # every failure gate's share of the corrected failures, with its interval
    gate_shares: Mapping[str, Interval | None]
    resamples: int
    # resamples with corrected failures > 0 (the share is undefined in the others)
    resamples_used: int
    seed: int
    confidence_level: float
    min_labelled: int
    # True: the labelled signals are among the counted ones (double sampling proper)
    labelled_are_counted: bool
    # transported from several repositories: the share with each one's labels alone, and the
    # share's interval before it was widened to span them (:func:`widest_of_sources`)
    by_source: Mapping[str, Interval | None] = field(default_factory=dict)
    share_one_matrix: Interval | None = None


def widest_of_sources(
    pooled: GateCorrection,
    counts: Mapping[str, int],
    labelled: Sequence[GateObservation],
) -> GateCorrection:
    """A transported correction whose share interval also holds the variation between the
    repositories the labels come from: the share is corrected once with each source
    repository's labels alone, and the interval widened to the lowest and highest bound
    among the pooled one and theirs (widest-of-sources). With two or three sources a
    variance component between them cannot be estimated, the widest interval can. One
    source: nothing to widen."""
    sources = sorted({o.repo for o in labelled})
    if len(sources) < 2 or pooled.share is None:
        return pooled
    by_source: dict[str, Interval | None] = {}
    for repo in sources:
        alone = gate_correction(
            counts,
            [o for o in labelled if o.repo == repo],
            min_labelled=pooled.min_labelled,
            labelled_are_counted=False,
            resamples=pooled.resamples,
            seed=pooled.seed,
            confidence_level=pooled.confidence_level,
        )
        by_source[repo] = None if alone is None else alone.share
    bounds = [pooled.share, *(i for i in by_source.values() if i is not None)]
    widened = Interval(
        pooled.share.value, min(i.ci_low for i in bounds), max(i.ci_high for i in bounds)
    )
    return replace(pooled, share=widened, by_source=by_source, share_one_matrix=pooled.share)


def gate_of(is_failure: bool, gate: str | None) -> str:
    """The class of a label: its gate, ``unclear`` for a failure without one, or no failure."""
    if not is_failure:
        return NOT_A_FAILURE
    return gate or "unclear"


def shipped_gates(
    labels: Iterable[GateLabel], adjudications: Iterable[Adjudication]
) -> dict[str, str]:
    """The class of each signal the shipped rater judged: the rater's ``is_failure`` and
    ``gate_label``, except where an adjudication decided ``is_failure`` (its gate, else the
    rater's, else ``unclear``)."""
    adj = {a.fixing_sha: a for a in adjudications}
    out: dict[str, str] = {}
    for lab in labels:
        a = adj.get(lab.fixing_sha)
        if a is None:
            out[lab.fixing_sha] = gate_of(lab.is_failure, lab.gate)
        else:
            out[lab.fixing_sha] = gate_of(a.consensus_is_failure, a.consensus_gate or lab.gate)
    return out


#: the ``rater`` of the reading that settles the team's raters' disagreement on a signal
ADJUDICATED = "adjudicated"


@dataclass(frozen=True)
class OwnLabels:
    """The team's own gate labels: each signal's class by rater, and the class used."""

    # sha -> rater -> class; the rater is the row's ``rater`` column, else its file
    ratings: Mapping[str, Mapping[str, str]]
    # sha -> class: the raters' common class, or the adjudicated one
    consensus: Mapping[str, str]
    # the signals the raters disagree on with no ``adjudicated`` row: left out of the consensus
    open: tuple[str, ...]
    # sha -> could the author have known (yes / no / unclear): the raters' common answer, the
    # adjudicated one, else unclear; signals nobody answered for are absent
    knowable: Mapping[str, str] = field(default_factory=dict)


def own_gates(labels: Iterable[GateLabel], default_rater: str = "") -> OwnLabels:
    """The team's own gate labels by rater (a row without ``rater`` is ``default_rater``'s)
    and their consensus: what the raters agree on, else what an ``adjudicated`` row says;
    a disagreement without one is open (not used, so it cannot be settled by dropping it)."""
    ratings: dict[str, dict[str, str]] = {}
    answers: dict[str, dict[str, str]] = {}
    for lab in labels:
        rater = lab.rater or default_rater
        ratings.setdefault(lab.fixing_sha, {})[rater] = gate_of(lab.is_failure, lab.gate)
        if lab.knowable is not None:
            answers.setdefault(lab.fixing_sha, {})[rater] = lab.knowable
    knowable = {sha: _one_answer(by) for sha, by in answers.items()}
    consensus: dict[str, str] = {}
    open_: list[str] = []
    for sha, by_rater in ratings.items():
        if ADJUDICATED in by_rater:
            consensus[sha] = by_rater[ADJUDICATED]
        elif len(set(by_rater.values())) == 1:
            consensus[sha] = next(iter(by_rater.values()))
        else:
            open_.append(sha)
    return OwnLabels(ratings, consensus, tuple(sorted(open_)), knowable)


def _one_answer(by_rater: Mapping[str, str]) -> str:
    """The adjudicated answer, else the raters' common one, else ``unclear``."""
    if ADJUDICATED in by_rater:
        return by_rater[ADJUDICATED]
    values = set(by_rater.values())
    return values.pop() if len(values) == 1 else "unclear"


def read_own_labels(files: Sequence[Path], name: Callable[[Path], str] = str) -> OwnLabels:
    """The team's own gate-label files, each row's rater its ``rater`` column, else its file
    (``name(file)``): two raters' copies of one sheet are two files."""
    return own_gates(
        replace(lab, rater=lab.rater or name(f)) for f in files for lab in read_gate_labels([f])
    )


def read_bucket_files(paths: Iterable[Path], buckets: Sequence[str]) -> dict[str, tuple[str, str]]:
    """``fixing_sha -> (repo, bucket)`` from CSV files of P2's bucket per labelled signal; a bad
    row raises :class:`InvalidLabels` naming file, line and field."""
    out: dict[str, tuple[str, str]] = {}
    for path in paths:
        for where, row in csv_rows(path, BUCKET_FILE_COLUMNS):
            sha = fixing_sha(row, where)
            if row["bucket"] not in buckets:
                raise InvalidLabels(
                    f"{where}: bucket must be one of {list(buckets)}, got {row['bucket']!r}"
                )
            out[sha] = (row["repo"], row["bucket"])
    return out


def matrix_rows(
    counts: Mapping[str, int],
    labelled: Sequence[GateObservation],
    *,
    min_labelled: int,
    labelled_are_counted: bool,
) -> tuple[MatrixRow, ...] | None:
    """Each bucket's row of P(g | b) and where it comes from; None when nothing is labelled."""
    buckets = list(counts)
    table = np.zeros((len(buckets), len(GATE_CLASSES)), dtype=np.int64)
    for obs in labelled:
        if obs.bucket not in counts:
            raise ValueError(f"{obs.fixing_sha}: bucket {obs.bucket!r} is not one of {buckets}")
        if obs.gate not in GATE_CLASSES:
            raise ValueError(f"{obs.fixing_sha}: gate {obs.gate!r} is not one of {GATE_CLASSES}")
        table[buckets.index(obs.bucket), GATE_CLASSES.index(obs.gate)] += 1
    total = table.sum(axis=0)
    if total.sum() == 0:
        return None
    pooled = total / total.sum()
    rows = []
    for i, (bucket, n) in enumerate(counts.items()):
        m = int(table[i].sum())
        if labelled_are_counted and m > 0 and m >= n:
            used = ALL_LABELLED
        elif m > 0 and m >= max(min_labelled, 1):
            used = OWN_ROW
        else:
            used = POOLED
        probabilities = pooled if used == POOLED else table[i] / m
        rows.append(
            MatrixRow(
                bucket,
                n,
                m,
                {g: int(table[i, j]) for j, g in enumerate(GATE_CLASSES)},
                used,
                {g: float(probabilities[j]) for j, g in enumerate(GATE_CLASSES)},
            )
        )
    return tuple(rows)


def _shares(corrected: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(failures, only-self share, share without review) of corrected counts ``(..., gates)``;
    the shares are NaN where there are no failures."""
    failures = corrected[..., : GATE_CLASSES.index(NOT_A_FAILURE)].sum(axis=-1)
    only = corrected[..., GATE_CLASSES.index(ONLY_SELF)]
    review = corrected[..., GATE_CLASSES.index(HUMAN_REVIEW)]
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(failures > 0, only / failures, np.nan)
        without = np.where(failures > 0, (only + review) / failures, np.nan)
    return failures, share, without


def gate_correction(
    counts: Mapping[str, int],
    labelled: Sequence[GateObservation],
    *,
    min_labelled: int,
    labelled_are_counted: bool,
    resamples: int,
    seed: int,
    confidence_level: float,
) -> GateCorrection | None:
    """The double-sampling estimate and its bootstrap interval (module docstring); None when
    no signal is labelled. ``counts``: counted signals per bucket (its keys are the buckets)."""
    rows = matrix_rows(
        counts, labelled, min_labelled=min_labelled, labelled_are_counted=labelled_are_counted
    )
    if rows is None:
        return None
    n = np.array([r.signals for r in rows], dtype=float)
    p = np.array([[r.probabilities[g] for g in GATE_CLASSES] for r in rows])
    corrected = n @ p
    failures, share, without = _shares(corrected)
    boot = _bootstrap(rows, resamples=resamples, seed=seed)
    boot_failures, boot_share, boot_without = _shares(boot)
    used = int(np.isfinite(boot_share).sum())
    alpha = 1 - confidence_level
    with np.errstate(divide="ignore", invalid="ignore"):
        gate_shares = {
            g: _interval(
                float(corrected[j] / failures) if failures > 0 else math.nan,
                np.where(boot_failures > 0, boot[:, j] / boot_failures, np.nan),
                alpha,
            )
            for j, g in enumerate(GATE_CLASSES)
            if g != NOT_A_FAILURE
        }
    return GateCorrection(
        rows=rows,
        corrected={g: float(corrected[j]) for j, g in enumerate(GATE_CLASSES)},
        failures=float(failures),
        share=_interval(float(share), boot_share, alpha),
        share_without_review=_interval(float(without), boot_without, alpha),
        gate_shares=gate_shares,
        resamples=resamples,
        resamples_used=used,
        seed=seed,
        confidence_level=confidence_level,
        min_labelled=min_labelled,
        labelled_are_counted=labelled_are_counted,
    )


def _interval(value: float, boot: np.ndarray, alpha: float) -> Interval | None:
    if not np.isfinite(value):
        return None
    finite = boot[np.isfinite(boot)]
    if finite.size == 0:
        return Interval(value, value, value)
    low, high = np.quantile(finite, [alpha / 2, 1 - alpha / 2])
    return Interval(value, float(low), float(high))


def _bootstrap(rows: Sequence[MatrixRow], *, resamples: int, seed: int) -> np.ndarray:
    """``resamples`` draws of the corrected counts, shape (resamples, gates)."""
    rng = np.random.default_rng(seed)
    n = np.array([r.signals for r in rows], dtype=np.int64)
    table = np.array([[r.gates[g] for g in GATE_CLASSES] for r in rows], dtype=np.int64)
    m = table.sum(axis=1)
    total = int(n.sum())
    counts = (
        rng.multinomial(total, n / total, size=resamples).astype(float)
        if total > 0
        else np.zeros((resamples, len(rows)))
    )
    # each bucket's labelled signals redrawn with replacement: a multinomial of its own row
    drawn = np.zeros((resamples, len(rows), len(GATE_CLASSES)))
    for i in range(len(rows)):
        if m[i] > 0:
            drawn[:, i, :] = rng.multinomial(int(m[i]), table[i] / m[i], size=resamples)
    pooled = drawn.sum(axis=1) / m.sum()
    probabilities = np.empty_like(drawn)
    for i, row in enumerate(rows):
        probabilities[:, i, :] = pooled if row.used == POOLED else drawn[:, i, :] / m[i]
    corrected: np.ndarray = np.einsum("rb,rbg->rg", counts, probabilities)
    return corrected


# --- which labels correct the share ----------------------------------------------------------

OWN = "own"
SHIPPED = "shipped"
OWN_AND_SHIPPED = "own+shipped"
TRANSPORTED = "transported"


@dataclass(frozen=True)
class GateLabelSet:
    """The gate labels a run can use: the team's own and the shipped ones (class by sha), and
    P2's bucket of each shipped signal (for the transported matrix), with their files."""

    own: Mapping[str, str]
    shipped: Mapping[str, str]
    shipped_buckets: Mapping[str, tuple[str, str]]
    sources: Mapping[str, Sequence[str]]
    # the team's labels by rater (sha -> rater -> class), and its open disagreements
    own_ratings: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    own_open: tuple[str, ...] = ()
    # the team's answers to "could the author have known?" (sha -> yes / no / unclear)
    own_knowable: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CountedSignal:
    """What the correction needs of a counted signal."""

    repo: str
    fixing_sha: str
    bucket: str


@dataclass(frozen=True)
class LabelChoice:
    """The labelled signals that estimate the matrix, and what they are."""

    # own | shipped | own+shipped | transported
    labels: str
    observations: tuple[GateObservation, ...]
    labelled_are_counted: bool
    # counted signals that carry a label (0 when transported)
    judged_labelled: int
    # why these labels, in words (the transport assumption when transported)
    note: str


def choose_labels(
    counted: Sequence[CountedSignal], labels: GateLabelSet, min_labelled: int
) -> LabelChoice | None:
    """The labels of the judged signals (own, else shipped) when at least ``min_labelled``
    counted signals carry one; else the transported shipped matrix; None without either."""
    observations = []
    kinds = set()
    judged = {s.fixing_sha for s in counted}
    stray = sum(1 for sha in labels.own if sha not in judged)
    # a sheet filled for another run, or a signal the rules no longer count
    stray_note = (
        f"; {stray} of the team's gate labels name no counted signal (ignored)" if stray else ""
    )
    for s in counted:
        if s.fixing_sha in labels.own:
            observations.append(
                GateObservation(s.repo, s.fixing_sha, s.bucket, labels.own[s.fixing_sha])
            )
            kinds.add(OWN)
        elif s.fixing_sha in labels.shipped:
            observations.append(
                GateObservation(s.repo, s.fixing_sha, s.bucket, labels.shipped[s.fixing_sha])
            )
            kinds.add(SHIPPED)
    if observations and len(observations) >= max(min_labelled, 1):
        kind = OWN_AND_SHIPPED if len(kinds) == 2 else kinds.pop()
        unlabelled = len(counted) - len(observations)
        rest = (
            "every counted signal is labelled, so nothing is estimated"
            if unlabelled == 0
            else f"the other {unlabelled} are corrected by their bucket's labelled ones, "
            "assumed to be like them"
        )
        return LabelChoice(
            kind,
            tuple(observations),
            True,
            len(observations),
            f"gate labels ({kind}) of {len(observations)} of the {len(counted)} counted "
            f"signals; {rest}{stray_note}",
        )
    transported = tuple(
        GateObservation(repo, sha, bucket, labels.shipped[sha])
        for sha, (repo, bucket) in sorted(labels.shipped_buckets.items())
        if sha in labels.shipped
    )
    if not transported:
        return None
    repos = ", ".join(sorted({o.repo for o in transported}))
    judged_repos = ", ".join(sorted({s.repo for s in counted})) or "the judged repositories"
    few = (
        f"only {len(observations)} counted signal(s) carry a gate label (fewer than "
        f"{min_labelled}), so "
        if observations
        else "no counted signal carries a gate label, so "
    )
    return LabelChoice(
        TRANSPORTED,
        transported,
        False,
        0,
        f"{few}the gate matrix is TRANSPORTED from the shipped labels of {repos} "
        f"({len(transported)} signals): it assumes that P2's buckets mean the same on "
        f"{judged_repos} as there (the same share of each bucket is a real failure, and of "
        "the same gate). "
        f"Label some of {judged_repos}'s own signals (`[p2] gate_labels_paths`) to replace it"
        f"{stray_note}",
    )


def read_gate_label_set(
    base: Path,
    own_paths: Iterable[str],
    shipped: SecondRater,
    bucket_paths: Iterable[str],
    buckets: Sequence[str],
    *,
    extra_own: Sequence[Path] = (),
) -> GateLabelSet:
    """The files of ``[p2] gate_labels_paths`` and ``gate_label_buckets_paths`` (under
    ``base``; missing ones give none), the shipped second rater already read, and
    ``extra_own``: more own label files (each must exist), read after the registered ones."""
    missing = [str(path) for path in extra_own if not path.is_file()]
    if missing:
        raise InvalidLabels(f"gate label file(s) not found: {', '.join(missing)}")
    own_files = [*label_files(base, own_paths), *extra_own]
    bucket_files = label_files(base, bucket_paths)

    def name(p: Path) -> str:  # relative to base when under it, else as given (an extra file)
        return p.relative_to(base).as_posix() if p.is_relative_to(base) else str(p)

    own = read_own_labels(own_files, name)
    return GateLabelSet(
        own=own.consensus,
        own_ratings=own.ratings,
        own_open=own.open,
        own_knowable=own.knowable,
        shipped=shipped_gates(shipped.labels, shipped.adjudications),
        shipped_buckets=read_bucket_files(bucket_files, buckets),
        sources={
            "own": [name(p) for p in own_files],
            "shipped": [
                *shipped.sources.get("second", ()),
                *shipped.sources.get("adjudication", ()),
            ],
            "shipped_buckets": [p.relative_to(base).as_posix() for p in bucket_files],
        },
    )
