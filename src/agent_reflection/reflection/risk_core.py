"""The risk floor's computation on plain tuples, and the shipped surface table as a constant.

Import-free on purpose: the Stop hook scores every stop with it, and ``typing``,
``dataclasses``, ``tomllib`` (which pulls in ``re``) and ``pathlib`` together cost several
times the hook's own work. So the path tokenizer and the glob matcher below are written out
by hand rather than with ``re`` or ``fnmatch`` (which imports ``re``).
:mod:`agent_reflection.reflection.risk_floor` is the typed public face (``evaluate_risk_floor``,
``RiskTable``, ``load_risk_table``); both call :func:`score_files`.

How a path meets a surface (docs/capture.md, "The risk floor", says it for analysts):

- **tokens** are whole words of the path. The path is cut at every character that is not a
  letter or digit (``/ . _ -`` and the rest) and at camelCase boundaries (``LoginForm`` ->
  ``login form``, ``HTTPServer`` -> ``http server``), then lower-cased; letters and digits
  stay together (``k8s``, ``oauth2``). A token pattern matches when its own tokens appear
  consecutively among the path's: ``auth`` matches ``src/auth/jwt.ts`` but not ``author.py``;
  ``api key`` matches ``apiKey.ts`` and ``api_key.py``.
- **globs** are file patterns, lower-case. ``*`` is any run of characters within one folder
  or file name, ``?`` one character, ``**`` any number of folders (none included). A glob
  without ``/`` matches any one component of the path (``*.sql``, ``vite.config.*``); a glob
  with ``/`` matches the whole path from the repository root (``**/migrations/**``,
  ``/Justfile``).

``SHIPPED_SURFACES`` *is* the shipped table. ``data/risk_floor.toml`` is the same table as the
documented template users copy for ``REFLECTION_RISK_TABLE``; a test asserts that it parses to
exactly this constant, so the two cannot drift. Only a user's table pays for ``tomllib``.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not imported from typing: the hook must not pay for typing at start
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    #: ``(name, weight, tokens, globs, exclude_tokens, exclude_globs)``. Token patterns are
    #: normalised (lower-case tokens joined by one space, see :func:`token_pattern`); globs
    #: are lower-case with "/" separators (see ``risk_floor.parse_glob``).
    SurfaceRow = tuple[
        str, float, tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]
    ]

SHIPPED_THRESHOLD = 0.5
#: The shipped surfaces in match order (descending weight, ties in table order). The design's
#: words and weights; where its substring also caught another form of the same word
#: (``migrations``, ``secrets``, ``oauth``, ``Dockerfile``) that form is listed. ``sessions``
#: and ``tokens`` are deliberately not: they mostly name HTTP/ORM sessions and lexer or design
#: tokens (``requests/sessions.py``, ``design-tokens/tokens.json``), see docs/capture.md.
SHIPPED_SURFACES: tuple[SurfaceRow, ...] = (
    (
        "auth",
        1.0,
        (
            "auth",
            "authn",
            "authz",
            "oauth",
            "oauth2",
            "authenticate",
            "authentication",
            "authorize",
            "authorization",
            "login",
            "session",
            "token",
            "permission",
            "permissions",
            "rbac",
            "credential",
            "credentials",
            "secret",
            "secrets",
        ),
        (),
        (),
        (),
    ),
    (
        "data",
        0.9,
        (
            "migration",
            "migrations",
            "prisma",
            "schema",
            "schemas",
            "entity",
            "entities",
            "repository",
            "repositories",
            "seed",
            "seeds",
        ),
        ("*.sql",),
        (),
        (),
    ),
    (
        "infra",
        0.85,
        (
            "docker",
            "dockerfile",
            "dockerignore",
            "woodpecker",
            "compose",
            "traefik",
            "deploy",
            "deployment",
            "deployments",
            "helm",
            "k8s",
            "terraform",
        ),
        (),
        (),
        (),
    ),
    (
        "build",
        0.6,
        ("tsconfig", "pnpm", "eslint", "eslintrc", "eslintignore"),
        ("package.json", "turbo.json", "*.config.*", "vite.config.*"),
        (),
        (),
    ),
    ("ui", 0.4, (), ("*.tsx", "*.css", "**/components/**", "**/apps/web/**"), (), ()),
    ("test", 0.2, (), ("*.spec.*", "*.test.*", "**/__tests__/**"), (), ()),
    ("docs", 0.1, (), ("*.md", "**/docs/**"), (), ()),
)
#: Files named in a reason before it says "and N more".
REASON_FILE_LIMIT = 5


def normalise_path(path: str) -> str:
    """The path globs see: backslashes as "/", lower-case."""
    return path.replace("\\", "/").lower()


def path_tokens(path: str) -> list[str]:
    """The lower-case words of ``path`` (see the module docstring)."""
    tokens: list[str] = []
    start = -1  # start of the current word, -1 between words
    last = len(path) - 1
    for i, ch in enumerate(path):
        if not ch.isalnum():
            if start >= 0:
                tokens.append(path[start:i].lower())
                start = -1
            continue
        if start < 0:
            start = i
        elif ch.isupper():
            before = path[i - 1]
            # "loginForm" / "v2Auth": lower or digit then upper. "HTTPServer": the last
            # capital of a run starts the next word when a lower-case letter follows it.
            if (
                before.islower()
                or before.isdigit()
                or (before.isupper() and i < last and path[i + 1].islower())
            ):
                tokens.append(path[start:i].lower())
                start = i
    if start >= 0:
        tokens.append(path[start:].lower())
    return tokens


def token_pattern(text: str) -> str:
    """A token pattern in matching form: its own tokens joined by one space ("" if none)."""
    return " ".join(path_tokens(text))


def wildcard_match(pattern: str, name: str) -> bool:
    """``fnmatch`` for one component, with only ``*`` and ``?`` special (no ``re``)."""
    if "*" not in pattern and "?" not in pattern:
        return pattern == name
    if "?" in pattern:
        return _wildcard_backtracking(pattern, name)
    # "*" only (every shipped glob): the literal pieces in order; the first and last pinned to
    # the ends. Leftmost placement of the middle pieces is enough, so no backtracking.
    pieces = pattern.split("*")
    first, last = pieces[0], pieces[-1]
    if len(first) + len(last) > len(name) or not (name.startswith(first) and name.endswith(last)):
        return False
    position, end = len(first), len(name) - len(last)
    for piece in pieces[1:-1]:
        found = name.find(piece, position, end)
        if found < 0:
            return False
        position = found + len(piece)
    return True


def _wildcard_backtracking(pattern: str, name: str) -> bool:
    p = i = 0
    star = -1  # position of the last "*" in pattern, -1 before any
    resume = 0  # where in name that "*" is to swallow one more character from
    while i < len(name):
        if p < len(pattern) and (pattern[p] == "?" or pattern[p] == name[i]):
            p += 1
            i += 1
        elif p < len(pattern) and pattern[p] == "*":
            star, resume = p, i
            p += 1
        elif star >= 0:
            p = star + 1
            resume += 1
            i = resume
        else:
            return False
    while p < len(pattern) and pattern[p] == "*":
        p += 1
    return p == len(pattern)


def _match_parts(glob_parts: Sequence[str], path_parts: Sequence[str]) -> bool:
    if not glob_parts:
        return not path_parts
    head = glob_parts[0]
    if head == "**":
        rest = glob_parts[1:]
        return any(_match_parts(rest, path_parts[k:]) for k in range(len(path_parts) + 1))
    return (
        bool(path_parts)
        and wildcard_match(head, path_parts[0])
        and _match_parts(glob_parts[1:], path_parts[1:])
    )


def glob_match(glob: str, path_parts: Sequence[str]) -> bool:
    """True when ``glob`` matches the path split into its (normalised) components."""
    if "/" not in glob:
        return _any_part(glob, path_parts)
    if glob.startswith("**/") and glob.endswith("/**") and "/" not in glob[3:-3]:
        return _any_part(glob[3:-3], path_parts)  # "**/dir/**", the common form: same result
    parts = glob.split("/")
    return _match_parts(parts[1:] if not parts[0] else parts, path_parts)  # "/x": x at the root


def _any_part(pattern: str, path_parts: Sequence[str]) -> bool:
    return any(wildcard_match(pattern, part) for part in path_parts)


def matches(
    tokens_text: str,
    path_parts: Sequence[str],
    token_patterns: Sequence[str],
    globs: Sequence[str],
) -> bool:
    """True when a token pattern or a glob matches.

    ``tokens_text`` is the path's tokens joined and surrounded by single spaces, so a
    (normalised) token pattern matches exactly when `` pattern `` is a substring of it.
    """
    for pattern in token_patterns:
        if f" {pattern} " in tokens_text:
            return True
    return any(glob_match(glob, path_parts) for glob in globs)


def match_index(path: str, surfaces: Sequence[SurfaceRow]) -> int | None:
    """The index of the first surface ``path`` falls on (matched, not excluded), or None."""
    tokens_text = " " + " ".join(path_tokens(path.replace("\\", "/"))) + " "
    parts = normalise_path(path).split("/")
    for i, (_name, _weight, tokens, globs, exclude_tokens, exclude_globs) in enumerate(surfaces):
        if matches(tokens_text, parts, tokens, globs) and not (
            (exclude_tokens or exclude_globs)
            and matches(tokens_text, parts, exclude_tokens, exclude_globs)
        ):
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
