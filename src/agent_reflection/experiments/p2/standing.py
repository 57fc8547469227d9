"""On whose gate labels a P2 verdict rests, and whether they are enough for it to confirm.

A P2 verdict measures a repository only through gate labels of that repository's own
signals. It is **confirmatory** when, for every repository with counted signals, the team's
own gate labels (``[p2] gate_labels_paths`` or the run's ``gate_labels``):

- label signals that P2's seeded sampler drew (``reflect p2 sheet`` with the registered
  ``gate_sample_per_bucket`` and ``gate_sample_seed``; a later round, drawn once every signal
  of the earlier ones is labelled, excludes them): a hand-picked signal is not a sample and
  does not count;
- were each given by at least ``own_labels_min_raters`` raters, who agree or whose
  disagreement an ``adjudicated`` row settles; their agreement (Cohen's kappa on the gate) is
  reported;
- number at least ``own_labels_min_signals`` (all the repository's counted signals when it has
  fewer), and at least ``own_labels_min_per_bucket`` in every bucket that holds signals (all
  of a bucket's signals when it holds fewer).

Otherwise the run is EXPLORATORY, and the reason (the first line of the summary) says on
whose labels the verdict rests: borrowed from other repositories (transported), too few of
its own, or none. Pure: the caller passes the counted signals and the labels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_reflection.experiments.p2.buckets import BUCKETS
from agent_reflection.experiments.p2.gates import (
    ADJUDICATED,
    OWN,
    TRANSPORTED,
    GateLabelSet,
    LabelChoice,
)
from agent_reflection.experiments.p2.raters import Kappa, cohens_kappa
from agent_reflection.experiments.p2.sample import SheetSignal, draw_sample
from agent_reflection.experiments.registration import P2Params

#: at most this many labelling rounds are replayed (``reflect p2 sheet --exclude-labelled``)
MAX_ROUNDS = 50


@dataclass(frozen=True)
class RepoStanding:
    """One repository's own gate labels, counted against the registered minimum."""

    repo: str
    signals: int
    # counted signals with a team label (agreed or adjudicated)
    labelled: int
    # of those, drawn by the seeded sampler
    drawn: int
    # of those, by enough raters: the labels that count
    qualifying: int
    # bucket -> (counted signals, qualifying labels)
    by_bucket: Mapping[str, tuple[int, int]]
    # what is short of the registered minimum, in words (empty: nothing)
    short: tuple[str, ...]


@dataclass(frozen=True)
class LabelStanding:
    """Whether the verdict is confirmatory on its labels, and the line that says so."""

    confirmatory: bool
    # the summary's first line: on whose labels the verdict rests
    rests_on: str
    # why the run is exploratory (None when it is confirmatory)
    reason: str | None
    repos: tuple[RepoStanding, ...]
    raters: tuple[str, ...]
    # the team's raters' agreement on the gate (the first two raters, signals both rated)
    kappa: Kappa | None
    # counted signals the raters disagree on, not adjudicated (not used)
    open: int


def sampled_shas(signals: Sequence[SheetSignal], labelled: set[str], p: P2Params) -> set[str]:
    """The labelled signals P2's seeded sampler drew: the registered draw over all
    repositories and over each one (``reflect p2 sheet`` with and without ``--repo``), round
    after round with the signals labelled in earlier rounds excluded, as the sheet does. A
    next round counts only when every signal of the one before is labelled: skipping drawn
    signals and drawing again would pick the sample."""
    found: set[str] = set()
    for repo in [None, *sorted({s.repo for s in signals})]:
        sampled: set[str] = set()
        for _ in range(MAX_ROUNDS):
            draw = draw_sample(
                signals,
                per_bucket=p.gate_sample_per_bucket,
                seed=p.gate_sample_seed,
                exclude=sampled,
                repo=repo,
            )
            shas = {s.fixing_sha for s in draw.signals}
            sampled |= shas & labelled
            if not shas or not shas <= labelled:
                break  # a round with drawn signals left unlabelled ends the sample
        found |= sampled
    return found


def _agreement(ratings: Mapping[str, Mapping[str, str]], shas: set[str]) -> Kappa | None:
    raters = sorted({r for sha in shas for r in ratings.get(sha, {}) if r != ADJUDICATED})
    if len(raters) < 2:
        return None
    first, second = raters[:2]
    pairs = [
        (ratings[sha][first], ratings[sha][second])
        for sha in sorted(shas)
        if first in ratings.get(sha, {}) and second in ratings.get(sha, {})
    ]
    return cohens_kappa(pairs)


def label_standing(
    counted: Sequence[Mapping[str, Any]],
    labels: GateLabelSet | None,
    choice: LabelChoice | None,
    p: P2Params,
) -> LabelStanding:
    """The standing of the labels behind a P2 verdict (module docstring). ``counted``: the
    counted signals (``repo``, ``fixing_sha``, ``bucket``, ...); ``choice``: the labels the
    gate correction used (None: no correction)."""
    own = dict(labels.own) if labels is not None else {}
    ratings = dict(labels.own_ratings) if labels is not None else {}
    counted_shas = {s["fixing_sha"] for s in counted}
    open_ = sum(1 for sha in (labels.own_open if labels else ()) if sha in counted_shas)
    sheet = [SheetSignal.of(s) for s in counted]
    labelled = {sha for sha in counted_shas if sha in own}
    drawn = sampled_shas(sheet, labelled, p)

    def raters_of(sha: str) -> int:
        return sum(1 for r in ratings.get(sha, {}) if r != ADJUDICATED)

    qualifying = {sha for sha in drawn if raters_of(sha) >= p.own_labels_min_raters}
    repos = []
    for repo in sorted({s["repo"] for s in counted}):
        mine = [s for s in counted if s["repo"] == repo]
        by_bucket = {
            b: (
                sum(1 for s in mine if s["bucket"] == b),
                sum(1 for s in mine if s["bucket"] == b and s["fixing_sha"] in qualifying),
            )
            for b in BUCKETS
        }
        total = sum(q for _, q in by_bucket.values())
        need = min(p.own_labels_min_signals, len(mine))  # a smaller repository: all its signals
        short = []
        if total < need:
            short.append(f"{total} qualifying labels, {need} needed")
        short += [
            f"{b} {q} of {min(n, p.own_labels_min_per_bucket)}"
            for b, (n, q) in by_bucket.items()
            if n and q < min(n, p.own_labels_min_per_bucket)
        ]
        repos.append(
            RepoStanding(
                repo,
                len(mine),
                sum(1 for s in mine if s["fixing_sha"] in labelled),
                sum(1 for s in mine if s["fixing_sha"] in drawn),
                total,
                by_bucket,
                tuple(short),
            )
        )
    kappa = _agreement(ratings, qualifying)
    raters = tuple(sorted({r for sha in labelled for r in ratings.get(sha, {})}))
    judged = ", ".join(r.repo for r in repos) or "the judged repositories"
    enough = bool(repos) and all(not r.short for r in repos)
    confirmatory = enough and choice is not None and choice.labels == OWN
    agreement = (
        "agreement not measurable"
        if kappa is None
        else f"agreement kappa {kappa.value:.2f} ({kappa.ci_low:.2f}-{kappa.ci_high:.2f}, "
        f"{kappa.n} signals)"
    )
    minimum = (
        f"registered minimum: {p.own_labels_min_signals} labels drawn by P2's seeded sampler "
        f"(seed {p.gate_sample_seed}), >= {p.own_labels_min_per_bucket} in each bucket that "
        f"holds signals, each by {p.own_labels_min_raters} raters"
    )
    if confirmatory:
        counts = "; ".join(f"{r.repo} {r.qualifying} of {r.signals} signals" for r in repos)
        rests_on = (
            f"Verdict rests on {judged}'s OWN gate labels: {counts}, drawn by P2's seeded "
            f"sampler and rated by {p.own_labels_min_raters} raters ({agreement}); {minimum}"
        )
        return LabelStanding(True, rests_on, None, tuple(repos), raters, kappa, open_)
    if choice is None:
        basis = f"NO gate labels of {judged}: P2's buckets as they are, unverified"
    elif choice.labels == TRANSPORTED:
        sources = ", ".join(sorted({o.repo for o in choice.observations}))
        basis = (
            f"gate labels BORROWED from {sources} ({len(choice.observations)} signals, "
            f"transported), not {judged}'s own"
        )
    else:
        shortfall = "; ".join(f"{r.repo}: {', '.join(r.short)}" for r in repos if r.short)
        kind = {OWN: "the team's own"}.get(choice.labels, f"{choice.labels}")
        basis = (
            f"{choice.judged_labelled} gate labels ({kind}) of {judged}'s signals, short of "
            f"what confirms: {shortfall or 'labels not from the team alone'}"
        )
    opened = f"; {open_} disagreement(s) not adjudicated" if open_ else ""
    rests_on = f"EXPLORATORY: verdict rests on {basis} ({minimum}{opened})"
    reason = f"P2's verdict rests on {basis}: {minimum}"
    return LabelStanding(False, rests_on, reason, tuple(repos), raters, kappa, open_)


def standing_doc(standing: LabelStanding) -> dict[str, Any]:
    """``details.label_standing`` of results.json."""
    kappa = standing.kappa
    return {
        "confirmatory": standing.confirmatory,
        "rests_on": standing.rests_on,
        "raters": list(standing.raters),
        "kappa": None
        if kappa is None
        else {
            "value": round(kappa.value, 4),
            "ci_low": round(kappa.ci_low, 4),
            "ci_high": round(kappa.ci_high, 4),
            "n": kappa.n,
        },
        "open_disagreements": standing.open,
        "repos": [
            {
                "repo": r.repo,
                "signals": r.signals,
                "labelled": r.labelled,
                "drawn_by_sampler": r.drawn,
                "qualifying": r.qualifying,
                "by_bucket": {
                    b: {"signals": n, "qualifying": q} for b, (n, q) in r.by_bucket.items()
                },
                "short": list(r.short),
            }
            for r in standing.repos
        ],
    }
