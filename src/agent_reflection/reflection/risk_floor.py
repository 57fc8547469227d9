"""The review risk floor: a deterministic verdict from the change surface alone.

A *floor*, subordinate to CI: consumers treat CI and tests as authoritative above it
(precedence: CI/tests > human merge > reviewer verdict > self-reflection). It only says which
changes must at least get an independent review.

Pure and stdlib-only. The computation itself lives in :mod:`agent_reflection.reflection.risk_core`
(plain tuples, no imports), which the Stop hook calls directly; this module is its typed face.
A surface matches a path by whole path words (``tokens``) or file patterns (``globs``), never
by substring: ``auth`` matches ``src/auth/jwt.ts`` and not ``src/author.py`` (the rules are in
the ``_risk_core`` docstring and docs/capture.md). The surface table is data: the shipped table
(``_risk_core.SHIPPED_SURFACES``, the same table as the documented template
``data/risk_floor.toml``; a test keeps the two identical), or a user's TOML of the same shape
(see :func:`load_risk_table`; only that path imports ``tomllib``).
``insertions`` and ``deletions`` are accepted for interface parity with the design and are
deliberately ignored: the design gives them no role, and size alone says little about risk.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_reflection.config import check_keys
from agent_reflection.errors import InvalidRiskTable
from agent_reflection.reflection.risk_core import (
    REASON_FILE_LIMIT,
    SHIPPED_SURFACES,
    SHIPPED_THRESHOLD,
    match_index,
    normalise_path,
    path_tokens,
    score_files,
    token_pattern,
)

if TYPE_CHECKING:
    from agent_reflection.reflection.risk_core import SurfaceRow

__all__ = [
    "DEFAULT_THRESHOLD", "REASON_FILE_LIMIT", "SURFACES", "RiskTable", "RiskVerdict", "Surface",
    "classify_path", "default_risk_table", "evaluate_risk_floor", "load_risk_table",
    "normalise_path", "parse_glob", "parse_risk_table", "parse_token", "path_tokens",
]  # fmt: skip

#: Surfaces reflection.v1 allows, besides ``none``.
SURFACES: tuple[str, ...] = ("auth", "data", "infra", "ui", "build", "test", "docs")
DEFAULT_THRESHOLD = SHIPPED_THRESHOLD
#: The list keys of a ``[[surface]]`` entry, in table order.
PATTERN_KEYS = ("tokens", "globs", "exclude_tokens", "exclude_globs")
#: Keys of the substring tables this version no longer reads (see :func:`_parse_surface`).
SUBSTRING_KEYS = ("patterns", "exclude")
#: Characters that make a token pattern a glob (rejected in ``tokens`` with a hint).
GLOB_CHARACTERS = frozenset("*?/\\")


@dataclass(frozen=True)
class Surface:
    """One surface: a path falls on it when a token or glob matches and no exclude does."""

    name: str
    weight: float
    tokens: tuple[str, ...] = ()
    globs: tuple[str, ...] = ()
    exclude_tokens: tuple[str, ...] = ()
    exclude_globs: tuple[str, ...] = ()

    def matches(self, path: str) -> bool:
        return match_index(path, (self.row(),)) == 0

    def row(self) -> SurfaceRow:
        """This surface as the plain tuple :mod:`agent_reflection.reflection.risk_core` works on."""
        return (
            self.name,
            self.weight,
            self.tokens,
            self.globs,
            self.exclude_tokens,
            self.exclude_globs,
        )


@dataclass(frozen=True)
class RiskTable:
    """Surfaces in match order (descending weight, ties in table order) and the threshold."""

    surfaces: tuple[Surface, ...]
    threshold: float = DEFAULT_THRESHOLD

    def with_threshold(self, threshold: float) -> RiskTable:
        return RiskTable(self.surfaces, _check_threshold(threshold, "threshold"))

    def rows(self) -> tuple[SurfaceRow, ...]:
        return tuple(s.row() for s in self.surfaces)


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


def classify_path(path: str, table: RiskTable | None = None) -> Surface | None:
    """The surface one file falls on, or None."""
    table = table or default_risk_table()
    index = match_index(path, table.rows())
    return None if index is None else table.surfaces[index]


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
    needs_review, score, surface, reason = score_files(files_changed, table.rows(), limit)
    return RiskVerdict(needs_review=needs_review, score=score, surface=surface, reason=reason)


@cache
def default_risk_table() -> RiskTable:
    """The shipped table (the constant ``_risk_core.SHIPPED_SURFACES``; its documented
    template ``data/risk_floor.toml`` parses to exactly this table)."""
    surfaces = tuple(Surface(*row) for row in SHIPPED_SURFACES)
    return RiskTable(surfaces, SHIPPED_THRESHOLD)


def load_risk_table(path: str | Path) -> RiskTable:
    """Read a user's TOML table. Raises :class:`InvalidRiskTable` naming the file and key.

    A user file may set only ``threshold``: surfaces then come from the shipped table. When it
    lists ``[[surface]]`` entries, an entry whose name is shipped replaces that surface's
    weight and any of its four pattern lists it gives (omitted keys keep the shipped values).
    """
    import tomllib  # here: only a user's table pays for tomllib (and the re it imports)

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
    """The table in ``data`` (a parsed TOML document), merged onto ``base``.

    Only unknown keys are checked by :func:`agent_reflection.config.check_keys`; the rest stays
    hand-written: a ``[[surface]]`` entry is merged onto the shipped surface of its name (any
    key may be left out) and its patterns are rewritten into matching form, which a typed
    dataclass build does not express.
    """
    check_keys(data, ("threshold", "surface"), source, error=InvalidRiskTable)
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


def parse_token(value: str, where: str) -> str:
    """A ``tokens`` entry in matching form (``"LoginForm"`` -> ``"login form"``)."""
    if GLOB_CHARACTERS & set(value):
        raise InvalidRiskTable(
            f"{where}: {value!r} has a wildcard or a path separator; tokens are whole path "
            "words, so put it in `globs` instead"
        )
    pattern = token_pattern(value)
    if not pattern:
        raise InvalidRiskTable(f"{where}: {value!r} has no letters or digits to match")
    return pattern


def parse_glob(value: str, where: str) -> str:
    """A ``globs`` entry in matching form: lower-case with "/" separators."""
    glob = normalise_path(value)
    if glob in ("", "/") or glob.endswith("/") or "" in glob.split("/")[1:]:
        raise InvalidRiskTable(
            f"{where}: {value!r} is not a glob this table understands: write `name` for a "
            "folder or file of that name anywhere, `/name` for one at the root, `dir/**` for "
            "everything under a root folder, `**/dir/**` for such a folder anywhere (no empty "
            "parts, no trailing /)"
        )
    return glob


def _parse_surface(entry: Any, where: str, known: Mapping[str, Surface]) -> Surface:
    if not isinstance(entry, dict):
        raise InvalidRiskTable(f"{where}: must be a table with a name, a weight, tokens and globs")
    name = entry.get("name")
    old = [key for key in SUBSTRING_KEYS if key in entry]
    if old:
        raise InvalidRiskTable(
            f"{where} ({name}): {' and '.join(f'`{k}`' for k in old)} held substrings, which "
            'matched inside words ("auth" in "author.py"), and are no longer read. '
            'Write whole path words in `tokens` (e.g. tokens = ["auth", "login"]) and '
            'file patterns in `globs` (e.g. globs = ["*.vue", "**/migrations/**"]); '
            "excludes likewise in `exclude_tokens` / `exclude_globs`. Old values: "
            + "; ".join(f"{k} = {entry[k]!r}" for k in old)
        )
    check_keys(entry, ("name", "weight", *PATTERN_KEYS), where, error=InvalidRiskTable)
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
    lists: dict[str, tuple[str, ...]] = {}
    for key in PATTERN_KEYS:
        if key in entry:
            parse = parse_glob if key.endswith("globs") else parse_token
            values = _strings(entry[key], f"{where} ({name})", key)
            lists[key] = tuple(parse(v, f"{where} ({name}): {key}") for v in values)
        else:
            lists[key] = getattr(shipped, key) if shipped else ()
    return Surface(name, float(weight), **lists)


def _strings(value: Any, where: str, key: str) -> tuple[str, ...]:
    if (
        not isinstance(value, Sequence)
        or isinstance(value, str)
        or not all(isinstance(v, str) and v for v in value)
    ):
        raise InvalidRiskTable(f"{where}: {key} must be a list of non-empty strings")
    return tuple(value)


def _check_threshold(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise InvalidRiskTable(f"{where} must be a number in [0, 1], got {value!r}")
    return float(value)
