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
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agent_reflection.errors import ReflectionError
from agent_reflection.stats.interval import Interval
from agent_reflection.stats.wilson import wilson_interval

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


def csv_rows(path: Path, required: Sequence[str]) -> Iterator[tuple[str, dict[str, str]]]:
    """The rows of a label file (every P2 label, gate-label, adjudication and bucket file),
    each with where it is ("FILE, line N") and its fields stripped (a missing one is "");
    :class:`InvalidLabels` names a missing column or a file that cannot be read."""
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            missing = set(required) - set(reader.fieldnames or ())
            if missing:
                raise InvalidLabels(f"{path}: missing column(s) {sorted(missing)}")
            for number, row in enumerate(reader, start=2):
                clean = {k: (v or "").strip() for k, v in row.items() if k is not None}
                yield f"{path}, line {number}", clean
    except OSError as exc:
        raise InvalidLabels(f"{path}: cannot read the labels ({exc})") from None


def fixing_sha(row: Mapping[str, str], where: str) -> str:
    """The row's ``fixing_sha``, lower-case; :class:`InvalidLabels` unless 40 hex digits."""
    sha = row.get("fixing_sha", "").lower()
    if not re.fullmatch(r"[0-9a-f]{40}", sha):
        raise InvalidLabels(f"{where}: fixing_sha must be 40 hex digits, got {sha!r}")
    return sha


def yes_no(row: Mapping[str, str], name: str, where: str) -> bool:
    value = row.get(name, "")
    if value not in ("yes", "no"):
        raise InvalidLabels(f"{where}: {name} must be yes or no, got {value!r}")
    return value == "yes"


def read_labels(paths: Iterable[Path]) -> tuple[Label, ...]:
    """Labels from CSV files; a bad row raises :class:`InvalidLabels` naming file, row, field
    (a sha labelled twice names both places)."""
    out: list[Label] = []
    seen: dict[str, str] = {}
    for path in paths:
        for where, row in csv_rows(path, LABEL_COLUMNS):
            label = _label(row, where)
            check_once(seen, label.fixing_sha, where)
            out.append(label)
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


def _label(row: Mapping[str, str], where: str) -> Label:
    sha = fixing_sha(row, where)
    if row["kind"] not in LABEL_KINDS:
        raise InvalidLabels(f"{where}: kind must be one of {list(LABEL_KINDS)}")
    is_failure = yes_no(row, "is_failure", where)
    if not row["repo"]:
        raise InvalidLabels(f"{where}: repo is empty")
    check_category(row.get("category", ""), is_failure, where)
    return Label(
        repo=row["repo"],
        fixing_sha=sha,
        kind=row["kind"],
        is_failure=is_failure,
        category=row.get("category", ""),
        introducing_shas=tuple(s.lower() for s in row["introducing_shas"].split()),
        rationale=row["rationale"],
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


def row_doc(row: PrecisionRow) -> dict[str, Any]:
    """A precision row as results.json writes it: the counts, then the precision and its
    interval, rounded (None when nothing is labelled)."""
    doc = {k: v for k, v in asdict(row).items() if k != "precision"}
    bounds = (None,) * 3 if row.precision is None else row.precision.to_dict(4).values()
    return doc | dict(zip(("precision", "ci_low", "ci_high"), bounds, strict=True))


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
