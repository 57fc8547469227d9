"""The risk floor's computation on plain tuples, and the shipped surface table as a constant.

Import-free on purpose: the Stop hook scores every stop with it, and ``typing``,
``dataclasses``, ``tomllib`` (which pulls in ``re``) and ``pathlib`` together cost several
times the hook's own work. :mod:`agent_reflection.risk_floor` is the typed public face
(``evaluate_risk_floor``, ``RiskTable``, ``load_risk_table``); both call :func:`score_files`.

``SHIPPED_SURFACES`` *is* the shipped table. ``data/risk_floor.toml`` is the same table as the
documented template users copy for ``REFLECTION_RISK_TABLE``; a test asserts that it parses to
exactly this constant, so the two cannot drift. Only a user's table pays for ``tomllib``.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not imported from typing: the hook must not pay for typing at start
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    #: ``(name, weight, patterns, exclude)``; patterns and excludes are lower-case substrings.
    SurfaceRow = tuple[str, float, tuple[str, ...], tuple[str, ...]]

SHIPPED_THRESHOLD = 0.5
#: The shipped surfaces in match order (descending weight, ties in table order).
SHIPPED_SURFACES: tuple[SurfaceRow, ...] = (
    ("auth", 1.0,
     ("auth", "login", "session", "token", "permission", "rbac", "credential", "secret"), ()),
    ("data", 0.9, ("migration", "prisma", "schema", ".sql", "entity", "repository", "seed"), ()),
    ("infra", 0.85,
     ("docker", ".woodpecker", "compose", "traefik", "deploy", "helm", "k8s", "terraform"), ()),
    ("build", 0.6,
     ("package.json", "tsconfig", "turbo.json", "pnpm-", ".config.", "eslint", "vite"), ()),
    ("ui", 0.4, (".tsx", ".css", "components/", "apps/web/"), ()),
    ("test", 0.2, (".spec.", ".test.", "__tests__/"), ()),
    ("docs", 0.1, (".md", "docs/"), ()),
)  # fmt: skip
#: Files named in a reason before it says "and N more".
REASON_FILE_LIMIT = 5


def normalise_path(path: str) -> str:
    return path.replace("\\", "/").lower()


def matches(normalised_path: str, patterns: Sequence[str], exclude: Sequence[str]) -> bool:
    """True when the path contains a pattern and no exclude (all literal substrings)."""
    if any(x in normalised_path for x in exclude):
        return False
    return any(p in normalised_path for p in patterns)


def match_index(path: str, surfaces: Sequence[SurfaceRow]) -> int | None:
    """The index of the first surface ``path`` falls on, or None."""
    normalised = normalise_path(path)
    for i, (_name, _weight, patterns, exclude) in enumerate(surfaces):
        if matches(normalised, patterns, exclude):
            return i
    return None


def score_files(
    files_changed: Iterable[str], surfaces: Sequence[SurfaceRow], threshold: float
) -> tuple[bool, float, str, str]:
    """``(needs_review, score, surface, reason)`` for a change, scored by its riskiest file.

    ``surfaces`` are in match order; ``needs_review`` when ``score >= threshold``. The result
    does not depend on the order of ``files_changed``; the reason lists the files that set
    the surface, sorted.
    """
    best: int | None = None
    hits: set[str] = set()
    seen = False
    for path in files_changed:
        seen = True
        index = match_index(path, surfaces)
        if index is None:
            continue
        if best is None or index < best:
            best, hits = index, {path}
        elif index == best:
            hits.add(path)
    if best is None:
        # Nothing matched: no floor, whatever the threshold (even 0).
        reason = "no files changed" if not seen else "no changed file matched a risk surface"
        return False, 0.0, "none", reason
    name, weight = surfaces[best][0], surfaces[best][1]
    files = sorted(hits)
    shown = ", ".join(files[:REASON_FILE_LIMIT])
    if len(files) > REASON_FILE_LIMIT:
        shown += f" and {len(files) - REASON_FILE_LIMIT} more"
    needs_review = weight >= threshold
    verdict = "needs review" if needs_review else "below the review threshold"
    return (
        needs_review,
        weight,
        name,
        f"{name} surface (score {weight:g}, {verdict} at {threshold:g}): {shown}",
    )
