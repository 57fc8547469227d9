"""P2's verdict statistic: the only-self-reflection share, corrected by gate labels or by
precision, its interval, the three-way decision on it, and the documents that show it.

The share statistics (``[p2] share_statistic``) and how each is decided are in the
pre-registration's comments and docs/experiments.md (P2, "Gate correction").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_reflection.experiments.p2.buckets import BUCKETS, ONLY_SELF
from agent_reflection.experiments.p2.gates import (
    NOT_A_FAILURE,
    TRANSPORTED,
    CountedSignal,
    GateCorrection,
    GateLabelSet,
    LabelChoice,
    choose_labels,
    gate_correction,
    widest_of_sources,
)
from agent_reflection.experiments.p2.precision import (
    Corrected,
    PrecisionRow,
)
from agent_reflection.experiments.registration import P2Params
from agent_reflection.experiments.results import Metric
from agent_reflection.experiments.verdict import INSUFFICIENT, decide
from agent_reflection.stats.interval import Interval
from agent_reflection.stats.wilson import wilson_interval

METRIC = "only_self_reflection_share"


#: what each ``[p2] share_statistic`` is, and its interval
STATISTICS = {
    "gate-corrected": ("gate-corrected (double sampling by gate labels)", "bootstrap"),
    "precision-corrected": ("precision-corrected (buckets trusted, times precision)", "wilson"),
    "raw": ("raw (P2's buckets as they are)", "wilson"),
}


def kill_condition(p: P2Params) -> str:
    level = f"{p.confidence_level:.0%}"
    method = STATISTICS[p.share_statistic][1]
    interval = "percentile bootstrap" if method == "bootstrap" else "Wilson"
    return (
        f"kill when the {level} {interval} interval of the {p.share_statistic} only-self-"
        f"reflection share lies wholly below {p.smallest_useful_share:g}; continue when its "
        "lower bound is "
        f"above 0 and the share reaches {p.smallest_useful_share:g}; otherwise inconclusive; "
        f"fewer than {p.min_signals} counted signals -> insufficient-data"
    )


def correct_by_gates(
    counted: Sequence[Mapping[str, Any]],
    raw_counts: Mapping[str, int],
    labels: GateLabelSet | None,
    p: P2Params,
) -> tuple[LabelChoice | None, GateCorrection | None]:
    """The labels chosen for the gate correction, and the correction (None without labels)."""
    if labels is None:
        return None, None
    choice = choose_labels(
        [CountedSignal(s["repo"], s["fixing_sha"], s["bucket"]) for s in counted],
        labels,
        p.gate_min_labelled,
    )
    if choice is None:
        return None, None
    gates = gate_correction(
        raw_counts,
        choice.observations,
        min_labelled=p.gate_min_labelled,
        labelled_are_counted=choice.labelled_are_counted,
        resamples=p.gate_bootstrap_resamples,
        seed=p.gate_bootstrap_seed,
        confidence_level=p.confidence_level,
    )
    if gates is not None and choice.labels == TRANSPORTED:
        # borrowed labels: the interval must also hold how much the source repositories differ
        gates = widest_of_sources(gates, raw_counts, choice.observations)
    return choice, gates


def _share_doc(statistic: str, share: Interval) -> dict[str, Any]:
    what, method = STATISTICS[statistic]
    return {**share.to_dict(4), "ci_method": method, "what": what}


def share_table(
    raw_counts: Mapping[str, int],
    corrected: Corrected | None,
    gates: GateCorrection | None,
    n: int,
    p: P2Params,
) -> tuple[dict[str, Any], dict[str, Interval | None]]:
    """The only-self-reflection share three ways, each labelled (``details.shares``, rounded)
    and exact by statistic; None where it cannot be computed. ``verdict_statistic`` is filled
    in by the verdict."""
    level = p.confidence_level
    exact: dict[str, Interval | None] = dict.fromkeys(STATISTICS)
    without_review = None
    if gates is not None and gates.share is not None:
        exact["gate-corrected"] = gates.share
        without_review = gates.share_without_review
    if corrected is not None and corrected.total > 0:
        share = corrected.counts[ONLY_SELF] / corrected.total
        exact["precision-corrected"] = wilson_interval(share, corrected.total, level)
    if n:
        exact["raw"] = wilson_interval(raw_counts[ONLY_SELF] / n, n, level)
    doc: dict[str, Any] = {"registered": p.share_statistic, "verdict_statistic": None}
    for name, interval in exact.items():
        doc[name] = None if interval is None else _share_doc(name, interval)
    doc["gate-corrected, if no reviewer caught any"] = (
        None if without_review is None else _share_doc("gate-corrected", without_review)
    )
    return doc, exact


def share_verdict(
    shares: dict[str, Any],
    exact: Mapping[str, Interval | None],
    corrected: Corrected | None,
    row_counted: PrecisionRow,
    choice: LabelChoice | None,
    gates: GateCorrection | None,
    n: int,
    p: P2Params,
    notes: list[str],
) -> tuple[str, Metric]:
    """The verdict on the registered only-self-reflection share (``share_statistic``; when it
    cannot be computed, the next of gate-corrected, precision-corrected, raw) and its
    interval; insufficient-data below ``min_signals``."""
    if corrected is None:
        notes.append(
            "precision not measured (fewer than "
            f"{max(p.min_labelled_for_precision, 1)} counted signals are labelled)"
        )
    else:
        notes.append(
            f"precision of counted signals {row_counted.failures}/{row_counted.labelled} "
            f"labelled = {row_counted.failures / row_counted.labelled:.2f}"
        )
    if choice is not None and gates is not None:
        pooled = [r.bucket for r in gates.rows if r.used == "pooled" and r.signals]
        pooled_text = (
            f"; pooled row (fewer than {gates.min_labelled} labelled) for {', '.join(pooled)}"
            if pooled
            else ""
        )
        notes.append(f"gate correction: {choice.note}{pooled_text}")
    order = list(STATISTICS)
    candidates = order[order.index(p.share_statistic) :]
    used = next((name for name in candidates if exact[name] is not None), "raw")
    shares["verdict_statistic"] = used
    method = STATISTICS[used][1]
    metric = Metric(METRIC, None, method, p.confidence_level)
    if used != p.share_statistic:
        missing = (
            "gate labels, or no failure among them"
            if p.share_statistic == "gate-corrected"
            else "precision"
        )
        notes.append(
            f"the registered {p.share_statistic} share cannot be computed here (no {missing}): "
            f"the verdict uses the {used} share"
        )
    chosen = exact[used]
    if n < p.min_signals or chosen is None:
        notes.append(f"{n} counted signal(s); {p.min_signals} needed for a verdict")
        return INSUFFICIENT, metric
    metric = Metric(METRIC, chosen, method, p.confidence_level)
    notes.append(_shares_note(shares))
    decision = decide(
        chosen,
        null_value=0.0,
        smallest_useful=p.smallest_useful_share,
        what=f"{used} only-self-reflection share",
    )
    notes.append(decision.reason)
    return decision.verdict, metric


def _shares_note(shares: Mapping[str, Any]) -> str:
    def text(name: str) -> str:
        d = shares[name]
        if d is None:
            return f"{name} n/a"
        return f"{name} {d['value']:.2f} ({d['ci_low']:.2f}-{d['ci_high']:.2f})"

    return (
        "only-self-reflection share: "
        + "; ".join(
            text(name)
            for name in (
                "gate-corrected",
                "precision-corrected",
                "raw",
                "gate-corrected, if no reviewer caught any",
            )
        )
        + f"; the verdict uses the {shares['verdict_statistic']} one"
    )


def gate_doc(
    choice: LabelChoice | None,
    gates: GateCorrection | None,
    labels: GateLabelSet | None,
    raw_counts: Mapping[str, int],
    p: P2Params,
) -> dict[str, Any] | None:
    """``details.gate_correction``: the matrix with its counts, the corrected counts per gate,
    the share with its interval, which labels were used and the transport note; ``by_gate``
    sets each gate's corrected share of the failures beside the share of P2's bucket of that
    name among the counted signals (raw, Wilson)."""
    if choice is None or gates is None:
        return None
    n = sum(raw_counts.values())
    by_gate = []
    for gate, share in gates.gate_shares.items():
        raw = (
            wilson_interval(raw_counts[gate] / n, n, p.confidence_level)
            if gate in raw_counts and n
            else None
        )
        by_gate.append(
            {
                "gate": gate,
                "corrected": round(gates.corrected[gate], 3),
                "gate_corrected": None if share is None else _share_doc("gate-corrected", share),
                "raw_bucket": None if raw is None else _share_doc("raw", raw),
            }
        )

    def interval(value: Interval | None) -> dict[str, float] | None:
        return None if value is None else _share_doc("gate-corrected", value)

    return {
        "labels": choice.labels,
        "sources": {} if labels is None else {k: list(v) for k, v in labels.sources.items()},
        "labelled_are_counted": choice.labelled_are_counted,
        "judged_labelled": choice.judged_labelled,
        "transport": choice.labels == "transported",
        "note": choice.note,
        "min_labelled": gates.min_labelled,
        "matrix": [
            {
                "bucket": r.bucket,
                "signals": r.signals,
                "labelled": r.labelled,
                "gates": dict(r.gates),
                "row": r.used,
                "p": {g: round(v, 4) for g, v in r.probabilities.items()},
            }
            for r in gates.rows
        ],
        "corrected": {g: round(v, 3) for g, v in gates.corrected.items()},
        "corrected_failures": round(gates.failures, 3),
        "by_gate": by_gate,
        "share": interval(gates.share),
        # transported from several repositories: the share's interval is widened to span the
        # share under each source repository's labels alone (widest-of-sources)
        "transport_interval": None
        if not gates.by_source
        else {
            "method": "widest-of-sources",
            "one_matrix": interval(gates.share_one_matrix),
            "by_source": {r: interval(i) for r, i in gates.by_source.items()},
        },
        "share_without_review": interval(gates.share_without_review),
        "bootstrap": {
            "method": "percentile",
            "resamples": gates.resamples,
            "resamples_used": gates.resamples_used,
            "seed": gates.seed,
            "confidence_level": gates.confidence_level,
        },
    }


def precision_used(corrected: Corrected | None) -> dict[str, Any] | None:
    if corrected is None:
        return None
    return {
        b: {
            "precision": round(corrected.precision_used[b], 4),
            "from": corrected.precision_source[b],
        }
        for b in BUCKETS
    }


@dataclass(frozen=True)
class RepoShare:
    """One repository's gate-corrected only-self-reflection share, alone: the stratum behind
    the pooled statistic, and the verdict its signals alone would give."""

    repo: str
    signals: int
    labels: str | None  # which gate labels corrected it (LabelChoice.labels); None: no labels
    share: Interval | None
    verdict: str


def shares_by_repo(
    counted: Sequence[Mapping[str, Any]],
    repos: Sequence[str],
    labels: GateLabelSet | None,
    p: P2Params,
) -> list[RepoShare]:
    """The gate-corrected share of each repository's counted signals, corrected and decided as
    the pooled one is (own matrix rows where its signals are labelled, else the transported
    matrix; insufficient-data below ``min_signals``)."""
    out = []
    for repo in repos:
        mine = [s for s in counted if s["repo"] == repo]
        raw = {b: sum(1 for s in mine if s["bucket"] == b) for b in BUCKETS}
        choice, gates = correct_by_gates(mine, raw, labels, p)
        share = None if gates is None else gates.share
        verdict = INSUFFICIENT
        if share is not None and len(mine) >= p.min_signals:
            verdict = decide(
                share,
                null_value=0.0,
                smallest_useful=p.smallest_useful_share,
                what=f"{repo}'s gate-corrected only-self-reflection share",
            ).verdict
        out.append(
            RepoShare(
                repo,
                len(mine),
                None if choice is None else choice.labels,
                share,
                verdict,
            )
        )
    return out


def repo_shares_note(shares: Sequence[RepoShare], verdict: str) -> str | None:
    """One line on the strata behind the pooled share (None with fewer than two repositories
    with signals): each repository's share and verdict alone, and whether they agree with the
    pooled verdict."""
    shown = [s for s in shares if s.signals]
    if len(shown) < 2 or all(s.share is None for s in shown):
        return None
    parts = [
        f"{s.repo} {s.share.value:.3f} ({s.share.ci_low:.3f}-{s.share.ci_high:.3f}, "
        f"{s.signals} signals) {s.verdict}"
        if s.share is not None
        else f"{s.repo} - ({s.signals} signals) {s.verdict}"
        for s in shown
    ]
    decided = [s.verdict for s in shown if s.verdict != INSUFFICIENT]
    if decided and all(v == verdict for v in decided):
        tail = f"every repository with enough signals gives the pooled verdict ({verdict})"
    elif not decided:
        tail = "no repository has enough signals for a verdict of its own"
    else:
        tail = "the repositories do NOT agree: the pooled verdict mixes strata that differ"
    return (
        "per repository, gate-corrected only-self-reflection share: "
        + "; ".join(parts)
        + f": {tail}"
    )


def knowable_shares(
    counted: Sequence[Mapping[str, Any]], labels: GateLabelSet | None, p: P2Params
) -> dict[str, Any] | None:
    """The only-self-reflection share of the team's labelled failures, as labelled and
    restricted to those the author could have known at the end of the introducing session
    (``knowable`` = yes): what is left over for self-reflection, and what it could reach.
    Over the counted signals with the team's own gate label; None without any."""
    if labels is None:
        return None
    own = [labels.own[s["fixing_sha"]] for s in counted if s["fixing_sha"] in labels.own]
    shas = [s["fixing_sha"] for s in counted if s["fixing_sha"] in labels.own]
    failures = sum(1 for g in own if g != NOT_A_FAILURE)
    if not failures:
        return None
    only = [sha for sha, g in zip(shas, own, strict=True) if g == ONLY_SELF]
    answers = Counter(labels.own_knowable.get(sha, "unanswered") for sha in only)
    level = p.confidence_level

    def share(k: int) -> dict[str, Any]:
        return {**wilson_interval(k / failures, failures, level).to_dict(4), "k": k}

    return {
        "labelled_failures": failures,
        "only_self_reflection": len(only),
        "knowable": dict(sorted(answers.items())),
        "as_labelled": share(len(only)),
        "knowable_only": share(answers.get("yes", 0)),
    }


def knowable_note(doc: Mapping[str, Any]) -> str:
    """One line: the two shares of :func:`knowable_shares`."""
    a, k = doc["as_labelled"], doc["knowable_only"]
    unanswered = doc["knowable"].get("unanswered", 0)
    return (
        f"only-self-reflection share of the team's {doc['labelled_failures']} labelled "
        f"failures: as labelled {a['value']:.2f} ({a['ci_low']:.2f}-{a['ci_high']:.2f}, "
        f"{a['k']}); restricted to what the author could have known at the end of the "
        f"introducing session {k['value']:.2f} ({k['ci_low']:.2f}-{k['ci_high']:.2f}, "
        f"{k['k']}): the first bounds what self-reflection could reach from above, the second "
        f"is what it could reach"
        + (
            f"; {unanswered} only-self-reflection label(s) do not say (unanswered)"
            if unanswered
            else ""
        )
    )
