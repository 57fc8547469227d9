"""The review risk floor: a deterministic verdict from the change surface alone.

A *floor*, subordinate to CI: consumers treat CI and tests as authoritative above it
(precedence: CI/tests > human merge > reviewer verdict > self-reflection). It only says which
changes must at least get an independent review.

Pure and stdlib-only (the Stop hook imports it). The surface table is data: the shipped
``data/risk_floor.toml``, or a user's TOML of the same shape (see :func:`load_risk_table`).
``insertions`` and ``deletions`` are accepted for interface parity with the design and are
deliberately ignored: the design gives them no role, and size alone says little about risk.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from agent_reflection.errors import InvalidRiskTable

#: Surfaces reflection.v1 allows, besides ``none``.
SURFACES: tuple[str, ...] = ("auth", "data", "infra", "ui", "build", "test", "docs")
DEFAULT_THRESHOLD = 0.5
#: Files named in a reason before it says "and N more".
REASON_FILE_LIMIT = 5


@dataclass(frozen=True)
class Surface:
    name: str
    weight: float
    patterns: tuple[str, ...]
    exclude: tuple[str, ...] = ()

    def matches(self, normalised_path: str) -> bool:
        if any(x in normalised_path for x in self.exclude):
            return False
        return any(p in normalised_path for p in self.patterns)


@dataclass(frozen=True)
class RiskTable:
    """Surfaces in match order (descending weight, ties in table order) and the threshold."""

    surfaces: tuple[Surface, ...]
    threshold: float = DEFAULT_THRESHOLD

    def with_threshold(self, threshold: float) -> RiskTable:
        return RiskTable(self.surfaces, _check_threshold(threshold, "threshold"))


@dataclass(frozen=True)
class RiskVerdict:
    needs_review: bool
    score: float
    surface: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "needs_review": self.needs_review,
            "score": self.score,
            "surface": self.surface,
            "reason": self.reason,
        }


def normalise_path(path: str) -> str:
    return path.replace("\\", "/").lower()


def classify_path(path: str, table: RiskTable | None = None) -> Surface | None:
    """The surface one file falls on, or None."""
    table = table or default_risk_table()
    normalised = normalise_path(path)
    for surface in table.surfaces:
        if surface.matches(normalised):
            return surface
    return None


def evaluate_risk_floor(
    files_changed: Iterable[str],
    insertions: int | None = None,
    deletions: int | None = None,
    threshold: float | None = None,
    *,
    table: RiskTable | None = None,
) -> RiskVerdict:
    """Score a change by its riskiest file; ``needs_review`` when ``score >= threshold``.

    The verdict does not depend on the order of ``files_changed``; the reason lists the files
    that set the surface, sorted. ``threshold`` (default: the table's, 0.5 shipped) overrides
    the table's.
    """
    del insertions, deletions  # pinned as ignored; see the module docstring
    table = table or default_risk_table()
    limit = table.threshold if threshold is None else _check_threshold(threshold, "threshold")
    rank = {s.name: i for i, s in enumerate(table.surfaces)}
    best: Surface | None = None
    hits: set[str] = set()
    seen = False
    for path in files_changed:
        seen = True
        surface = classify_path(path, table)
        if surface is None:
            continue
        if best is None or rank[surface.name] < rank[best.name]:
            best, hits = surface, {path}
        elif surface.name == best.name:
            hits.add(path)
    if best is None:
        # Nothing matched: no floor, whatever the threshold (even 0).
        reason = "no files changed" if not seen else "no changed file matched a risk surface"
        return RiskVerdict(needs_review=False, score=0.0, surface="none", reason=reason)
    files = sorted(hits)
    shown = ", ".join(files[:REASON_FILE_LIMIT])
    if len(files) > REASON_FILE_LIMIT:
        shown += f" and {len(files) - REASON_FILE_LIMIT} more"
    needs_review = best.weight >= limit
    verdict = "needs review" if needs_review else "below the review threshold"
    return RiskVerdict(
        needs_review=needs_review,
        score=best.weight,
        surface=best.name,
        reason=f"{best.name} surface (score {best.weight:g}, {verdict} at {limit:g}): {shown}",
    )


@cache
def default_risk_table() -> RiskTable:
    """The shipped table (``agent_reflection/data/risk_floor.toml``)."""
    # A plain file read: importlib.resources costs the Stop hook ~10 ms of imports per stop.
    text = (Path(__file__).parent / "data" / "risk_floor.toml").read_text("utf-8")
    return parse_risk_table(tomllib.loads(text), source="<shipped risk_floor.toml>")


def load_risk_table(path: str | Path) -> RiskTable:
    """Read a user's TOML table. Raises :class:`InvalidRiskTable` naming the file and key.

    A user file may set only ``threshold``: surfaces then come from the shipped table. When it
    lists ``[[surface]]`` entries, an entry whose name is shipped replaces that surface's
    weight/patterns/exclude (omitted keys keep the shipped values); the others are kept.
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise InvalidRiskTable(f"{path}: no such risk table file") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InvalidRiskTable(f"{path}: not a readable TOML file ({exc})") from None
    return parse_risk_table(data, source=str(path), base=default_risk_table())


def parse_risk_table(
    data: Mapping[str, Any], *, source: str, base: RiskTable | None = None
) -> RiskTable:
    unknown = set(data) - {"threshold", "surface"}
    if unknown:
        raise InvalidRiskTable(
            f"{source}: unknown key(s) {sorted(unknown)}; a risk table has `threshold` and "
            "`[[surface]]` entries only"
        )
    threshold = _check_threshold(
        data.get("threshold", base.threshold if base else DEFAULT_THRESHOLD), f"{source}: threshold"
    )
    merged: dict[str, Surface] = {s.name: s for s in base.surfaces} if base else {}
    entries = data.get("surface", [])
    if not isinstance(entries, list):
        raise InvalidRiskTable(f"{source}: `surface` must be an array of tables ([[surface]])")
    for i, entry in enumerate(entries):
        merged[entry.get("name", "") if isinstance(entry, dict) else ""] = _parse_surface(
            entry, f"{source}: surface[{i}]", merged
        )
    ordered = sorted(merged.values(), key=lambda s: (-s.weight, list(merged).index(s.name)))
    return RiskTable(tuple(ordered), threshold)


def _parse_surface(entry: Any, where: str, known: Mapping[str, Surface]) -> Surface:
    if not isinstance(entry, dict):
        raise InvalidRiskTable(f"{where}: must be a table with name, weight and patterns")
    unknown = set(entry) - {"name", "weight", "patterns", "exclude"}
    if unknown:
        raise InvalidRiskTable(f"{where}: unknown key(s) {sorted(unknown)}")
    name = entry.get("name")
    if name not in SURFACES:
        raise InvalidRiskTable(
            f"{where}: name {name!r} is not a reflection.v1 surface; use one of {list(SURFACES)}"
        )
    shipped = known.get(name)
    weight = entry.get("weight", shipped.weight if shipped else None)
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 <= weight <= 1:
        raise InvalidRiskTable(
            f"{where} ({name}): weight must be a number in [0, 1], got {weight!r}"
        )
    patterns = _strings(
        entry.get("patterns", shipped.patterns if shipped else None), where, "patterns"
    )
    exclude = _strings(entry.get("exclude", shipped.exclude if shipped else ()), where, "exclude")
    return Surface(name, float(weight), patterns, exclude)


def _strings(value: Any, where: str, key: str) -> tuple[str, ...]:
    if (
        not isinstance(value, Sequence)
        or isinstance(value, str)
        or not all(isinstance(v, str) and v for v in value)
    ):
        raise InvalidRiskTable(f"{where}: {key} must be a list of non-empty strings")
    return tuple(v.lower() for v in value)


def _check_threshold(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise InvalidRiskTable(f"{where} must be a number in [0, 1], got {value!r}")
    return float(value)
