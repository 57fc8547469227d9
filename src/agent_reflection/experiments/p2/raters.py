"""Two raters of P2's counted signals: agreement, consensus precision and bucket precision.

The *first rater* is the label files of ``[p2] labels_paths`` (``is_failure`` per fixing
commit). The *second rater* judged the same signals independently, and also named the gate
that would realistically have caught each failure (``gate_label``: ci, human-review,
only-self-reflection, unclear). Where the two disagree on ``is_failure`` a third reading
decides (the adjudication files: one row per disagreement, with why); the *consensus* is the
agreed value or the adjudicated one.

Reported: agreement on ``is_failure`` (share and Cohen's kappa with its large-sample interval,
Fleiss, Cohen & Everitt 1969), precision of the counted signals by rater and by consensus (all
of them, and the held-out ones), and **bucket precision**: of the signals P2 puts in a bucket,
how many are consensus failures whose gate is that bucket (with Wilson intervals), beside the
same share among the failures alone and the whole bucket-by-gate table.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from agent_reflection.experiments.p2.buckets import BUCKETS, HUMAN_REVIEW, ONLY_SELF
from agent_reflection.experiments.p2.precision import (
    InvalidLabels,
    Label,
    SignalView,
    check_category,
    check_once,
    corrected_counts,
    csv_rows,
    fixing_sha,
    label_files,
    precision_row,
    row_doc,
    yes_no,
)
from agent_reflection.stats._common import two_sided_z
from agent_reflection.stats.interval import Interval
from agent_reflection.stats.wilson import wilson_interval

#: The gates a rater can name: P2's buckets, and ``unclear`` (a failure whose gate cannot be told).
GATES = (*BUCKETS, "unclear")
INTRODUCING_OK = ("yes", "partly", "no")
#: "could the author have known at the end of the introducing session?" (optional column
#: ``knowable``; the rubric: docs/labelling.md)
KNOWABLE = ("yes", "no", "unclear")
GATE_COLUMNS = ("repo", "fixing_sha", "is_failure", "introducing_ok", "gate_label", "rationale")
ADJUDICATION_COLUMNS = (
    "fixing_sha",
    "first_is_failure",
    "second_is_failure",
    "consensus_is_failure",
    "consensus_gate",
    "adjudication",
)
RATERS = ("first", "second", "consensus")


@dataclass(frozen=True)
class GateLabel:
    """The second rater's judgement of one signal."""

    repo: str
    fixing_sha: str
    is_failure: bool
    introducing_ok: str
    # None when the commit is not a failure
    gate: str | None
    rationale: str
    # the commits the rater names as introducing (optional column ``introducing_shas``)
    introducing_shas: tuple[str, ...] = ()
    # who judged it (optional column ``rater``; "" when the file does not say): a team's two
    # raters of the same signals, and ``adjudicated`` for the reading that settles a disagreement
    rater: str = ""
    # could the author have known at the end of the introducing session (:data:`KNOWABLE`);
    # None: not answered (a file without the column, or a blank cell)
    knowable: str | None = None


@dataclass(frozen=True)
class Adjudication:
    """A third reading of one disagreement on ``is_failure``."""

    fixing_sha: str
    first_is_failure: bool
    second_is_failure: bool
    consensus_is_failure: bool
    # the gate of a consensus failure the second rater called no failure (so named no gate)
    consensus_gate: str | None
    reason: str


@dataclass(frozen=True)
class Kappa(Interval):
    """Cohen's kappa (``value``) of two raters over ``n`` items, with its normal-theory
    interval."""

    n: int
    observed: float
    expected: float


@dataclass(frozen=True)
class SecondRater:
    """What the pre-registration's second-rater keys name: the labels, the adjudications and
    the files they came from (relative to the pre-registration's folder)."""

    labels: tuple[GateLabel, ...] = ()
    adjudications: tuple[Adjudication, ...] = ()
    sources: Mapping[str, Sequence[str]] = field(default_factory=dict)


def read_second_rater(
    base: Path, labels_paths: Iterable[str], adjudication_paths: Iterable[str]
) -> SecondRater:
    """The files of ``[p2] second_rater_labels_paths`` and ``adjudication_paths`` (files or
    folders of ``*.csv`` under ``base``; missing ones give none)."""
    labels = label_files(base, labels_paths)
    adjudications = label_files(base, adjudication_paths)
    return SecondRater(
        read_gate_labels(labels),
        read_adjudications(adjudications),
        {
            "second": [p.relative_to(base).as_posix() for p in labels],
            "adjudication": [p.relative_to(base).as_posix() for p in adjudications],
        },
    )


def _gate(row: Mapping[str, str], name: str, where: str) -> str | None:
    value = row.get(name, "")
    if value and value not in GATES:
        raise InvalidLabels(f"{where}: {name} must be one of {list(GATES)} or empty, got {value!r}")
    return value or None


def read_gate_labels(paths: Iterable[Path]) -> tuple[GateLabel, ...]:
    """The second rater's files; a bad row raises :class:`InvalidLabels` naming file, line and
    field. A failure must name its gate; a non-failure must not; a category must be known and
    agree with is_failure; a sha may be labelled once."""
    out: list[GateLabel] = []
    seen: dict[str, str] = {}
    for path in paths:
        for where, row in csv_rows(path, GATE_COLUMNS):
            is_failure = yes_no(row, "is_failure", where)
            check_category(row.get("category", ""), is_failure, where)
            sha = fixing_sha(row, where)
            rater = row.get("rater", "")
            check_once(seen, f"{sha} (rater {rater})" if rater else sha, where)
            gate = _gate(row, "gate_label", where)
            if is_failure and gate is None:
                raise InvalidLabels(f"{where}: gate_label is empty for a failure")
            if not is_failure and gate is not None:
                raise InvalidLabels(f"{where}: gate_label must be empty when is_failure = no")
            if row.get("introducing_ok") not in INTRODUCING_OK:
                raise InvalidLabels(
                    f"{where}: introducing_ok must be one of {list(INTRODUCING_OK)}, "
                    f"got {row.get('introducing_ok')!r}"
                )
            if not row.get("repo"):
                raise InvalidLabels(f"{where}: repo is empty")
            knowable = row.get("knowable", "") or None
            if knowable is not None and knowable not in KNOWABLE:
                raise InvalidLabels(
                    f"{where}: knowable must be one of {list(KNOWABLE)} or empty, got {knowable!r}"
                )
            out.append(
                GateLabel(
                    row["repo"],
                    sha,
                    is_failure,
                    row["introducing_ok"],
                    gate,
                    row.get("rationale", ""),
                    tuple(x.lower() for x in row.get("introducing_shas", "").split()),
                    rater,
                    knowable,
                )
            )
    return tuple(out)


def read_adjudications(paths: Iterable[Path]) -> tuple[Adjudication, ...]:
    """The adjudication files; a bad row raises :class:`InvalidLabels` naming file and line."""
    out: list[Adjudication] = []
    for path in paths:
        for where, row in csv_rows(path, ADJUDICATION_COLUMNS):
            first = yes_no(row, "first_is_failure", where)
            second = yes_no(row, "second_is_failure", where)
            if first == second:
                raise InvalidLabels(f"{where}: the raters agree; there is nothing to adjudicate")
            consensus = yes_no(row, "consensus_is_failure", where)
            gate = _gate(row, "consensus_gate", where)
            if gate is not None and not consensus:
                raise InvalidLabels(f"{where}: consensus_gate given for a consensus non-failure")
            if not row.get("adjudication"):
                raise InvalidLabels(f"{where}: adjudication (the reason) is empty")
            out.append(
                Adjudication(
                    fixing_sha(row, where), first, second, consensus, gate, row["adjudication"]
                )
            )
    return tuple(out)


def cohens_kappa(
    pairs: Sequence[tuple[Hashable, Hashable]], confidence_level: float = 0.95
) -> Kappa | None:
    """Cohen's kappa of paired ratings (any categories). The interval is kappa ± z·SE with the
    large-sample SE of Fleiss, Cohen & Everitt (1969), clipped to [-1, 1]; None without pairs.
    When chance agreement is 1 (both raters always give one and the same category) kappa is
    undefined and reported as None too."""
    n = len(pairs)
    if n == 0:
        return None
    cells = Counter(pairs)
    rows = Counter(a for a, _ in pairs)
    cols = Counter(b for _, b in pairs)
    cats = sorted(set(rows) | set(cols), key=repr)
    p = {(a, b): cells[(a, b)] / n for a in cats for b in cats}
    pr = {c: rows[c] / n for c in cats}
    pc = {c: cols[c] / n for c in cats}
    po = sum(p[(c, c)] for c in cats)
    pe = sum(pr[c] * pc[c] for c in cats)
    if pe >= 1:
        return None
    k = (po - pe) / (1 - pe)
    diagonal = sum(p[(i, i)] * (1 - (pr[i] + pc[i]) * (1 - k)) ** 2 for i in cats)
    off = (1 - k) ** 2 * sum(p[(i, j)] * (pc[i] + pr[j]) ** 2 for i in cats for j in cats if i != j)
    variance = max(diagonal + off - (k - pe * (1 - k)) ** 2, 0.0) / (n * (1 - pe) ** 2)
    half = two_sided_z(confidence_level) * math.sqrt(variance)
    return Kappa(
        value=k,
        ci_low=max(-1.0, k - half),
        ci_high=min(1.0, k + half),
        n=n,
        observed=po,
        expected=pe,
    )


def consensus_labels(
    first: Mapping[str, Label],
    second: Mapping[str, GateLabel],
    adjudications: Mapping[str, Adjudication],
) -> tuple[dict[str, bool], list[str]]:
    """The consensus ``is_failure`` of every commit both raters labelled, and the shas of the
    disagreements no adjudication decides (left out of the consensus). An adjudication whose
    recorded ratings are not the files' any more (a label edited after it) is an error."""
    consensus: dict[str, bool] = {}
    open_: list[str] = []
    for sha, second_label in second.items():
        first_label = first.get(sha)
        if first_label is None:
            continue
        a, b = first_label.is_failure, second_label.is_failure
        if a == b:
            consensus[sha] = a
            continue
        adj = adjudications.get(sha)
        if adj is None:
            open_.append(sha)
            continue
        if (adj.first_is_failure, adj.second_is_failure) != (a, b):
            raise InvalidLabels(
                f"adjudication of {sha}: it records first={_yn(adj.first_is_failure)}, "
                f"second={_yn(adj.second_is_failure)} but the label files now say "
                f"first={_yn(a)}, second={_yn(b)}: re-adjudicate"
            )
        consensus[sha] = adj.consensus_is_failure
    return consensus, open_


def _yn(value: bool) -> str:
    return "yes" if value else "no"


def consensus_gate(
    sha: str, second: Mapping[str, GateLabel], adjudications: Mapping[str, Adjudication]
) -> str | None:
    """The gate of a consensus failure: the adjudication's when it names one, else the second
    rater's (None when neither names one)."""
    adj = adjudications.get(sha)
    if adj is not None and adj.consensus_gate is not None:
        return adj.consensus_gate
    label = second.get(sha)
    return None if label is None else label.gate


@dataclass(frozen=True)
class BucketPrecision:
    """Of P2's signals in ``bucket`` that the raters judged: how many are consensus failures,
    how many of those the second rater gives that same gate, and the gates they give."""

    bucket: str
    judged: int
    failures: int
    gate_agrees: int
    # gate_agrees / judged: the signal is a real failure AND P2's bucket is its gate
    precision: Interval | None
    # gate_agrees / failures: P2's bucket is right given that the signal is a real failure
    gate_agreement: Interval | None
    gates: Mapping[str, int]


def bucket_precision(
    signals: Sequence[SignalView],
    consensus: Mapping[str, bool],
    gates: Mapping[str, str | None],
    buckets: Sequence[str],
    confidence_level: float,
) -> tuple[BucketPrecision, ...]:
    """Per bucket (see :class:`BucketPrecision`); ``gates`` maps a sha to its consensus gate."""
    out = []
    for bucket in buckets:
        judged = [s for s in signals if s.bucket == bucket and s.fixing_sha in consensus]
        failures = [s for s in judged if consensus[s.fixing_sha]]
        agrees = sum(1 for s in failures if gates.get(s.fixing_sha) == bucket)
        table = Counter(
            (gates.get(s.fixing_sha) or "none") if consensus[s.fixing_sha] else "not a failure"
            for s in judged
        )
        out.append(
            BucketPrecision(
                bucket,
                len(judged),
                len(failures),
                agrees,
                _share(agrees, len(judged), confidence_level),
                _share(agrees, len(failures), confidence_level),
                dict(sorted(table.items())),
            )
        )
    return tuple(out)


def _share(k: int, n: int, level: float) -> Interval | None:
    return wilson_interval(k / n, n, level) if n else None


def compare_raters(
    counted: Sequence[SignalView],
    first: Sequence[Label],
    second: Sequence[GateLabel],
    adjudications: Sequence[Adjudication],
    *,
    holdout: Iterable[str],
    raw_counts: Mapping[str, int],
    min_labelled: int,
    confidence_level: float,
    sources: Mapping[str, Sequence[str]],
) -> dict[str, Any]:
    """The raters section of P2's ``details.precision`` (see the module docstring), as JSON.
    ``raw_counts``: P2's counted signals per bucket (its keys are the buckets); with
    ``min_labelled`` they give the only-self-reflection share corrected by the consensus
    precision, the way P2 corrects it by the first rater's (a sensitivity figure)."""
    buckets = list(raw_counts)
    first_map = {lab.fixing_sha: lab for lab in first}
    second_map = {lab.fixing_sha: lab for lab in second}
    adj_map = {a.fixing_sha: a for a in adjudications}
    counted_shas = {s.fixing_sha for s in counted}
    consensus, open_ = consensus_labels(
        {k: v for k, v in first_map.items() if k in counted_shas}, second_map, adj_map
    )
    both = [s for s in counted if s.fixing_sha in first_map and s.fixing_sha in second_map]
    pairs = [
        (first_map[s.fixing_sha].is_failure, second_map[s.fixing_sha].is_failure) for s in both
    ]
    agree = sum(1 for a, b in pairs if a == b)
    kappa = cohens_kappa(pairs, confidence_level)
    second_as_labels = {
        sha: Label(g.repo, sha, "", g.is_failure, "", g.introducing_shas, g.rationale)
        for sha, g in second_map.items()
    }
    consensus_as_labels = {
        sha: replace(first_map[sha], is_failure=value) for sha, value in consensus.items()
    }
    by_rater = {"first": first_map, "second": second_as_labels, "consensus": consensus_as_labels}
    held = set(holdout)
    held_counted = [s for s in counted if s.fixing_sha in held]
    gates = {sha: consensus_gate(sha, second_map, adj_map) for sha in consensus}
    failures = [sha for sha, value in consensus.items() if value]
    gate_counts = Counter(gates[sha] or "none" for sha in failures)
    bucket_rows = bucket_precision(counted, consensus, gates, buckets, confidence_level)
    gate_pairs = [(s.bucket, gates[s.fixing_sha]) for s in counted if consensus.get(s.fixing_sha)]
    gate_kappa = cohens_kappa(gate_pairs, confidence_level)
    return {
        "sources": {k: list(v) for k, v in sources.items()},
        "compared": len(pairs),
        "agreement": _interval_doc(agree, len(pairs), confidence_level),
        "kappa": _kappa_doc(kappa),
        "table": {
            f"first {_yn(a)}, second {_yn(b)}": sum(1 for p in pairs if p == (a, b))
            for a in (True, False)
            for b in (True, False)
        },
        "disagreements": [
            {
                "repo": s.repo,
                "fixing_sha": s.fixing_sha,
                "bucket": s.bucket,
                "first": _yn(first_map[s.fixing_sha].is_failure),
                "first_rationale": first_map[s.fixing_sha].rationale,
                "second": _yn(second_map[s.fixing_sha].is_failure),
                "second_rationale": second_map[s.fixing_sha].rationale,
                "consensus": consensus.get(s.fixing_sha),
                "adjudication": getattr(adj_map.get(s.fixing_sha), "reason", None),
            }
            for s in both
            if first_map[s.fixing_sha].is_failure != second_map[s.fixing_sha].is_failure
        ],
        "unadjudicated": open_,
        "precision": {
            subset: [
                row_doc(precision_row(rater, rows, by_rater[rater], confidence_level))
                for rater in RATERS
            ]
            for subset, rows in (("counted", counted), ("held-out", held_counted))
        },
        "introducing_ok": dict(
            sorted(Counter(second_map[sha].introducing_ok for sha in failures).items())
        ),
        "gates": dict(sorted(gate_counts.items())),
        "only_self_reflection_share_by_gate": _interval_doc(
            gate_counts.get(ONLY_SELF, 0), len(failures), confidence_level
        ),
        # the same share if no human review had caught the failures labelled human-review:
        # the bound for a reader who finds that label too generous
        "only_self_reflection_share_without_review": _interval_doc(
            gate_counts.get(ONLY_SELF, 0) + gate_counts.get(HUMAN_REVIEW, 0),
            len(failures),
            confidence_level,
        ),
        "bucket_gate_kappa": _kappa_doc(gate_kappa),
        "buckets": [_bucket_doc(row) for row in bucket_rows],
        "consensus_corrected_share": _corrected_share(
            counted, consensus_as_labels, raw_counts, min_labelled, confidence_level
        ),
    }


def _corrected_share(
    counted: Sequence[SignalView],
    labels: Mapping[str, Label],
    raw_counts: Mapping[str, int],
    min_labelled: int,
    level: float,
) -> dict[str, Any] | None:
    """P2's precision-corrected only-self-reflection share, corrected by ``labels``."""
    by_bucket = {
        b: precision_row(b, [s for s in counted if s.bucket == b], labels, level)
        for b in raw_counts
    }
    pooled = precision_row("all counted", counted, labels, level)
    corrected = corrected_counts(raw_counts, by_bucket, pooled, min_labelled)
    if corrected is None or corrected.total <= 0:
        return None
    only = corrected.counts.get(ONLY_SELF, 0.0)
    share = wilson_interval(only / corrected.total, corrected.total, level)
    return {**share.to_dict(4), "counts": {b: round(v, 3) for b, v in corrected.counts.items()}}


def _interval_doc(k: int, n: int, level: float) -> dict[str, Any]:
    interval = _share(k, n, level)
    empty = dict.fromkeys(("value", "ci_low", "ci_high"))
    return {"k": k, "n": n, **(empty if interval is None else interval.to_dict(4))}


def _kappa_doc(kappa: Kappa | None) -> dict[str, Any] | None:
    if kappa is None:
        return None
    counts = {
        "n": kappa.n,
        "observed": round(kappa.observed, 4),
        "expected": round(kappa.expected, 4),
    }
    return counts | kappa.to_dict(4)


def _bucket_doc(row: BucketPrecision) -> dict[str, Any]:
    return {
        **asdict(row),
        "precision": None if row.precision is None else row.precision.to_dict(4),
        "gate_agreement": None if row.gate_agreement is None else row.gate_agreement.to_dict(4),
    }


def raters_note(doc: Mapping[str, Any]) -> str:
    """One line for P2's notes: agreement, kappa, consensus precision, bucket precision."""

    def pct(d: Mapping[str, Any] | None) -> str:
        if not d or d.get("value") is None:
            return "n/a"
        k = f"{d['k']}/{d['n']} = " if "k" in d else ""
        return f"{k}{d['value']:.2f} ({d['ci_low']:.2f}-{d['ci_high']:.2f})"

    def consensus(subset: str) -> str:
        row = next(r for r in doc["precision"][subset] if r["group"] == "consensus")
        if row["precision"] is None:
            return "n/a"
        return (
            f"{row['failures']}/{row['labelled']} = {row['precision']:.2f} "
            f"({row['ci_low']:.2f}-{row['ci_high']:.2f})"
        )

    kappa = doc["kappa"]
    kappa_text = (
        "n/a"
        if kappa is None
        else f"{kappa['value']:.2f} ({kappa['ci_low']:.2f}-{kappa['ci_high']:.2f})"
    )
    buckets = "; ".join(
        f"{b['bucket']} {b['gate_agrees']}/{b['judged']}" for b in doc["buckets"] if b["judged"]
    )
    open_ = (
        f"; {len(doc['unadjudicated'])} disagreement(s) not adjudicated"
        if doc["unadjudicated"]
        else ""
    )
    return (
        f"second rater on {doc['compared']} counted signals: agreement on is_failure "
        f"{pct(doc['agreement'])}, Cohen's kappa {kappa_text}; consensus precision "
        f"{consensus('counted')}, held-out {consensus('held-out')}{open_}. Bucket precision (a "
        f"consensus failure whose gate, by the second rater, is P2's bucket): {buckets}; "
        f"only-self-reflection share of consensus failures by their gate "
        f"{pct(doc['only_self_reflection_share_by_gate'])}, "
        f"{pct(doc['only_self_reflection_share_without_review'])} if human review caught none"
    )
