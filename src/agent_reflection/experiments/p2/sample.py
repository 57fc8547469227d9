"""P2's seeded, stratified sampler of counted signals for gate labelling: what ``reflect p2
sheet`` draws, and what a verdict replays to check that its labels are of the sample
(:mod:`.standing`). Pure."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_reflection.experiments.p2.buckets import BUCKETS


@dataclass(frozen=True)
class SheetSignal:
    """One counted P2 signal, as the sheet needs it. ``bucket`` serves the draw only: no
    renderer writes it."""

    repo: str
    fixing_sha: str
    kind: str
    subject: str
    introducing_sha: str | None
    blamed_lines: int | None
    gap_days: float | None
    bucket: str

    @classmethod
    def of(cls, signal: Mapping[str, Any]) -> SheetSignal:
        """The sheet's view of one counted signal of a P2 result's ``details["signals"]``."""
        return cls(
            signal["repo"],
            signal["fixing_sha"],
            signal["kind"],
            signal["subject"],
            signal["introducing_sha"],
            signal["blamed_lines"],
            signal["gap_days"],
            signal["bucket"],
        )


@dataclass(frozen=True)
class Draw:
    """A stratified sample of counted signals, in the sheet's (shuffled) order."""

    signals: tuple[SheetSignal, ...]
    per_bucket: int
    seed: int
    # per bucket: the counted signals that could be drawn (not labelled, in the repo asked)
    available: Mapping[str, int]
    drawn: Mapping[str, int]
    # counted signals skipped because a given label file already has their fixing sha
    excluded: int
    repo: str | None


def draw_sample(
    signals: Iterable[SheetSignal],
    *,
    per_bucket: int,
    seed: int,
    exclude: Iterable[str] = (),
    repo: str | None = None,
    buckets: Sequence[str] = BUCKETS,
) -> Draw:
    """``per_bucket`` signals drawn at random from each bucket (all of a bucket with fewer),
    skipping fixing shas in ``exclude`` and, with ``repo``, other repositories; then shuffled
    together. The same signals, seed and exclusions give the same draw, whatever their order."""
    if per_bucket < 1:
        raise ValueError(f"per_bucket must be >= 1, got {per_bucket}")
    skip = {sha.lower() for sha in exclude}
    in_repo = [s for s in signals if repo is None or s.repo == repo]
    pool = sorted(
        (s for s in in_repo if s.fixing_sha.lower() not in skip),
        key=lambda s: (s.repo, s.fixing_sha),
    )
    rng = random.Random(seed)
    drawn: list[SheetSignal] = []
    available: dict[str, int] = {}
    for bucket in buckets:
        candidates = [s for s in pool if s.bucket == bucket]
        available[bucket] = len(candidates)
        drawn.extend(rng.sample(candidates, min(per_bucket, len(candidates))))
    rng.shuffle(drawn)
    counts = Counter(s.bucket for s in drawn)
    return Draw(
        signals=tuple(drawn),
        per_bucket=per_bucket,
        seed=seed,
        available=available,
        drawn={b: counts.get(b, 0) for b in buckets},
        excluded=len(in_repo) - len(pool),
        repo=repo,
    )
