"""Precision of P2's signals, measured on a hand-labelled validation set, and corrected counts.

The validation set (CSV; columns below) judges candidate fixing commits by reading them. A P2
signal is *labelled* when its fixing_sha is in the set (by sha alone: the repo name of a clone
need not be the labels' name); it is a true failure when the
label says ``is_failure = yes``. Precision = true failures / labelled, per signal kind and per
bucket, with Wilson intervals.

**Precision-corrected** counts: each bucket's signal count times that bucket's precision (when
at least ``min_labelled`` of its signals are labelled, else the precision of all labelled
counted signals). The corrected only-self-reflection share is its corrected count over the sum
of corrected counts, and its Wilson interval uses that sum as the sample size. The uncertainty
of the precisions themselves is not propagated into that interval (a stated limit).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent_reflection.errors import ReflectionError
from agent_reflection.stats.interval import Interval
from agent_reflection.stats.wilson import wilson_bounds

LABEL_COLUMNS = ("repo", "fixing_sha", "kind", "is_failure", "introducing_shas", "rationale")
LABEL_KINDS = ("revert", "fix")
#: A label's ``category`` (tests/data/p2_validation/README.md, "Judging") and the
#: ``is_failure`` it implies: True or False, or None when either holds.
LABEL_CATEGORIES: dict[str, bool | None] = {
    "functional-bug": True,
    "regression": True,
    "revert-of-failure": True,
    "cancelled-revert": False,
    "cosmetic": False,
    "docs": False,
    "lint-or-ci": None,
    "refactor": False,
    "feature": False,
    "not-a-fix": False,
    "other": None,
}


class InvalidLabels(ReflectionError, ValueError):
    """The P2 validation set is unreadable or has a wrong field."""


@dataclass(frozen=True)
class Label:
    repo: str
    fixing_sha: str
    kind: str
    is_failure: bool
    category: str
    introducing_shas: tuple[str, ...]
    rationale: str


@dataclass(frozen=True)
class PrecisionRow:
    """Precision of one group of counted signals on the labelled ones."""

    group: str
    signals: int
    labelled: int
    failures: int
    precision: Interval | None
    # of the labelled true failures, how many name P2's introducing commit among theirs
    introducer_agrees: int


def wilson_interval(share: float, n: float, confidence_level: float) -> Interval:
    """The Wilson score interval of ``share`` over ``n`` trials (``n`` may be fractional)."""
    return Interval(share, *wilson_bounds(share, n, confidence_level))


def label_files(base: Path, labels_paths: Iterable[str]) -> list[Path]:
    """The CSV files named by the pre-registration's ``labels_paths`` (files or folders of
    ``*.csv``, relative to ``base``); paths that do not exist give none."""
    out: list[Path] = []
    for labels_path in labels_paths:
        target = base / labels_path
        if target.is_dir():
            out.extend(sorted(target.glob("*.csv")))
        elif target.is_file():
            out.append(target)
    return out


def read_labels(paths: Iterable[Path]) -> tuple[Label, ...]:
    """Labels from CSV files; a bad row raises :class:`InvalidLabels` naming file, row, field
    (a sha labelled twice names both places)."""
    out: list[Label] = []
    seen: dict[str, str] = {}
    for path in paths:
        try:
            with path.open(newline="", encoding="utf-8") as handle:
                reader = csv.DictReader(handle)
                missing = set(LABEL_COLUMNS) - set(reader.fieldnames or ())
                if missing:
                    raise InvalidLabels(f"{path}: missing column(s) {sorted(missing)}")
                for number, row in enumerate(reader, start=2):
                    where = f"{path}, line {number}"
                    label = _label(row, where)
                    check_once(seen, label.fixing_sha, where)
                    out.append(label)
        except OSError as exc:
            raise InvalidLabels(f"{path}: cannot read the labels ({exc})") from None
    return tuple(out)


def check_once(seen: dict[str, str], sha: str, where: str) -> None:
    """Raise :class:`InvalidLabels` when ``sha`` was labelled before (``seen``: sha -> where)."""
    if sha in seen:
        raise InvalidLabels(
            f"{where}: fixing_sha {sha} is labelled twice (first at {seen[sha]}); keep one row"
        )
    seen[sha] = where


def check_category(category: str, is_failure: bool, where: str) -> None:
    """Raise :class:`InvalidLabels` for an unknown ``category`` or one that contradicts
    ``is_failure`` (empty: not judged, allowed)."""
    if not category:
        return
    if category not in LABEL_CATEGORIES:
        raise InvalidLabels(
            f"{where}: category must be one of {list(LABEL_CATEGORIES)} or empty, got {category!r}"
        )
    implied = LABEL_CATEGORIES[category]
    if implied is not None and implied != is_failure:
        raise InvalidLabels(
            f"{where}: category {category!r} means is_failure = {'yes' if implied else 'no'}, "
            f"got {'yes' if is_failure else 'no'}"
        )


def _label(row: Mapping[str, str | None], where: str) -> Label:
    def field(name: str) -> str:
        return (row.get(name) or "").strip()

    sha = field("fixing_sha").lower()
    if len(sha) != 40 or any(ch not in "0123456789abcdef" for ch in sha):
        raise InvalidLabels(f"{where}: fixing_sha must be 40 hex digits, got {sha!r}")
    if field("kind") not in LABEL_KINDS:
        raise InvalidLabels(f"{where}: kind must be one of {list(LABEL_KINDS)}")
    if field("is_failure") not in ("yes", "no"):
        raise InvalidLabels(f"{where}: is_failure must be yes or no, got {field('is_failure')!r}")
    if not field("repo"):
        raise InvalidLabels(f"{where}: repo is empty")
    check_category(field("category"), field("is_failure") == "yes", where)
    return Label(
        repo=field("repo"),
        fixing_sha=sha,
        kind=field("kind"),
        is_failure=field("is_failure") == "yes",
        category=field("category"),
        introducing_shas=tuple(s.lower() for s in field("introducing_shas").split()),
        rationale=field("rationale"),
    )


@dataclass(frozen=True)
class SignalView:
    """What precision needs of a signal."""

    repo: str
    fixing_sha: str
    category: str
    bucket: str | None
    introducing_sha: str | None


def precision_row(
    group: str,
    signals: Sequence[SignalView],
    labels: Mapping[str, Label],
    confidence_level: float,
) -> PrecisionRow:
    labelled = [(s, labels[s.fixing_sha]) for s in signals if s.fixing_sha in labels]
    failures = [(s, lab) for s, lab in labelled if lab.is_failure]
    agrees = sum(1 for s, lab in failures if s.introducing_sha in lab.introducing_shas)
    interval = (
        wilson_interval(len(failures) / len(labelled), len(labelled), confidence_level)
        if labelled
        else None
    )
    return PrecisionRow(group, len(signals), len(labelled), len(failures), interval, agrees)


@dataclass(frozen=True)
class Corrected:
    """Precision-corrected bucket counts and the only-self-reflection share."""

    counts: Mapping[str, float]
    precision_used: Mapping[str, float]
    precision_source: Mapping[str, str]
    total: float


def corrected_counts(
    raw: Mapping[str, int],
    by_bucket: Mapping[str, PrecisionRow],
    pooled: PrecisionRow,
    min_labelled: int,
) -> Corrected | None:
    """Counts times precision (see the module docstring); None when precision is not measured."""
    if pooled.labelled < max(min_labelled, 1):
        return None
    pooled_precision = pooled.failures / pooled.labelled
    counts: dict[str, float] = {}
    used: dict[str, float] = {}
    source: dict[str, str] = {}
    for bucket, n in raw.items():
        row = by_bucket.get(bucket)
        if row is not None and row.labelled >= max(min_labelled, 1):
            used[bucket] = row.failures / row.labelled
            source[bucket] = f"bucket ({row.failures}/{row.labelled} labelled)"
        else:
            used[bucket] = pooled_precision
            labelled = row.labelled if row is not None else 0
            source[bucket] = (
                f"all counted ({pooled.failures}/{pooled.labelled}); bucket has {labelled} labelled"
            )
        counts[bucket] = n * used[bucket]
    return Corrected(counts, used, source, sum(counts.values()))
