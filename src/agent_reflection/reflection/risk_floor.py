"""The review risk floor: a deterministic verdict from the change surface alone.

A *floor*, subordinate to CI: consumers treat CI and tests as authoritative above it
(precedence: CI/tests > human merge > reviewer verdict > self-reflection). It only says which
changes must at least get an independent review.

The surface table is data: the shipped ``data/risk_floor.toml`` (its comments are the
reference for the format; :func:`default_risk_table`), or a user's TOML of the same shape
merged onto it (``REFLECTION_RISK_TABLE``, ``reflect risk --table``; :func:`load_risk_table`).
The Stop hook reads either through :func:`read_risk_table` with a cache folder: ``tomllib``
costs about 10 ms of CPU per import, more than the hook may add to a stop, so the parsed table
is kept there as JSON until the TOML files or this module change.

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

The tokenizer is written out by hand (its camelCase rules are the docs' words); a glob's
components are matched by ``fnmatch.fnmatchcase``, ``**`` by :func:`glob_match`.
``insertions`` and ``deletions`` are accepted for interface parity with the design and are
deliberately ignored: the design gives them no role, and size alone says little about risk.

Import-light (no ``typing``, ``dataclasses`` or ``pathlib``; ``tomllib`` and the config helper
only when a TOML file is parsed): the Stop hook imports it on every stop.
"""

from __future__ import annotations

import contextlib
import json
import os
import zlib
from collections import namedtuple
from fnmatch import fnmatchcase
from functools import cache

from agent_reflection.errors import InvalidRiskTable
from agent_reflection.reflection.fields import SURFACE_VALUES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any

#: Surfaces reflection.v1 allows, besides ``none``.
SURFACES: tuple[str, ...] = tuple(s for s in SURFACE_VALUES if s != "none")
#: The shipped table (the documented template users copy for ``REFLECTION_RISK_TABLE``).
SHIPPED_TABLE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "risk_floor.toml"
)
#: The list keys of a ``[[surface]]`` entry, in table order.
PATTERN_KEYS = ("tokens", "globs", "exclude_tokens", "exclude_globs")
#: Keys of the substring tables this version no longer reads (see :func:`_parse_surface`).
SUBSTRING_KEYS = ("patterns", "exclude")
#: Characters that make a token pattern a glob (rejected in ``tokens`` with a hint).
GLOB_CHARACTERS = frozenset("*?/\\")
#: Files named in a reason before it says "and N more".
REASON_FILE_LIMIT = 5


# The three records are named tuples (frozen, compared by value; the matcher reads a surface's
# fields directly). collections.namedtuple, not typing.NamedTuple: importing typing would cost
# the Stop hook about 5 ms per stop. The annotations repeat the fields for the type checker.


class Surface(
    namedtuple(
        "Surface",
        ("name", "weight", "tokens", "globs", "exclude_tokens", "exclude_globs"),
        defaults=((), (), (), ()),
    )
):
    """One surface: a path falls on it when a token or glob matches and no exclude does.

    Token patterns are in matching form (lower-case words joined by one space, see
    :func:`parse_token`); globs are lower-case with "/" separators (:func:`parse_glob`).
    """

    __slots__ = ()
    name: str
    weight: float
    tokens: tuple[str, ...]
    globs: tuple[str, ...]
    exclude_tokens: tuple[str, ...]
    exclude_globs: tuple[str, ...]


class RiskTable(namedtuple("RiskTable", ("surfaces", "threshold"))):
    """Surfaces in match order (descending weight, ties in table order) and the threshold."""

    __slots__ = ()
    surfaces: tuple[Surface, ...]
    threshold: float


class RiskVerdict(namedtuple("RiskVerdict", ("needs_review", "score", "surface", "reason"))):
    """The floor of one change (its JSON is the sidecar's ``risk`` object)."""

    __slots__ = ()
    needs_review: bool
    score: float
    surface: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return self._asdict()


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
    surfaces = table.surfaces
    best: int | None = None
    hits: set[str] = set()
    seen = False
    for path in files_changed:
        seen = True
        index = _match_index(path, surfaces)
        if index is None:
            continue
        if best is None or index < best:
            best, hits = index, {path}
        elif index == best:
            hits.add(path)
    if best is None:
        # Nothing matched: no floor, whatever the threshold (even 0).
        reason = "no files changed" if not seen else "no changed file matched a risk surface"
        return RiskVerdict(False, 0.0, "none", reason)
    name, weight = surfaces[best].name, surfaces[best].weight
    files = sorted(hits)
    shown = ", ".join(files[:REASON_FILE_LIMIT])
    if len(files) > REASON_FILE_LIMIT:
        shown += f" and {len(files) - REASON_FILE_LIMIT} more"
    needs_review = weight >= limit
    verdict = "needs review" if needs_review else "below the review threshold"
    reason = f"{name} surface (score {weight:g}, {verdict} at {limit:g}): {shown}"
    return RiskVerdict(needs_review, weight, name, reason)


# --- matching a path -------------------------------------------------------------------------


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


def wildcard_match(pattern: str, name: str) -> bool:
    """One path component against one component of a glob: ``fnmatch``'s ``*`` and ``?``, with
    ``[`` taken literally (the table's globs have no character sets)."""
    return fnmatchcase(name, pattern.replace("[", "[[]"))


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
        return any(wildcard_match(glob, part) for part in path_parts)
    parts = glob.split("/")
    return _match_parts(parts[1:] if not parts[0] else parts, path_parts)  # "/x": x at the root


def _matches(
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


def _match_index(path: str, surfaces: Sequence[Surface]) -> int | None:
    """The index of the first surface ``path`` falls on (matched, not excluded), or None."""
    tokens_text = " " + " ".join(path_tokens(path.replace("\\", "/"))) + " "
    parts = normalise_path(path).split("/")
    for i, s in enumerate(surfaces):
        if _matches(tokens_text, parts, s.tokens, s.globs) and not (
            (s.exclude_tokens or s.exclude_globs)
            and _matches(tokens_text, parts, s.exclude_tokens, s.exclude_globs)
        ):
            return i
    return None


# --- reading a table -------------------------------------------------------------------------


@cache
def default_risk_table() -> RiskTable:
    """The shipped table, ``data/risk_floor.toml``."""
    return _read_toml(SHIPPED_TABLE, None)


def load_risk_table(path: str | os.PathLike[str]) -> RiskTable:
    """Read a user's TOML table. Raises :class:`InvalidRiskTable` naming the file and key.

    A user file may set only ``threshold``: surfaces then come from the shipped table. When it
    lists ``[[surface]]`` entries, an entry whose name is shipped replaces that surface's
    weight and any of its four pattern lists it gives (omitted keys keep the shipped values).
    """
    return _read_toml(os.fspath(path), default_risk_table())


def read_risk_table(path: str | None = None, *, cache_dir: str | None = None) -> RiskTable:
    """:func:`load_risk_table` of ``path``, or the shipped table when None; with ``cache_dir``,
    parsed once and kept there as JSON.

    The cached table is used while the TOML files it was read from and this module keep their
    size and modification time, so a changed table, an upgrade or an edit of the matching
    rules is read afresh. A folder that cannot be written to only costs the parse.
    """
    if cache_dir is None:
        return default_risk_table() if path is None else load_risk_table(path)
    sources = [os.path.abspath(__file__), SHIPPED_TABLE]
    if path is not None:
        sources.append(os.path.abspath(path))
    try:
        stats = [(source, os.stat(source)) for source in sources]
    except OSError:  # a missing file: let the reader word the error
        return default_risk_table() if path is None else load_risk_table(path)
    key = "\n".join(f"{source}\0{st.st_mtime_ns}\0{st.st_size}" for source, st in stats)
    name = os.path.join(cache_dir, f"risk-table-{zlib.crc32(key.encode()):08x}.json")
    table = _read_cached(name, key)
    if table is None:
        table = default_risk_table() if path is None else load_risk_table(path)
        _write_cached(name, key, table)
    return table


def _read_cached(name: str, key: str) -> RiskTable | None:
    try:
        with open(name, encoding="utf-8") as f:
            cached = json.load(f)
        if cached["key"] != key:
            return None
        surfaces = tuple(
            Surface(s[0], float(s[1]), *(tuple(v) for v in s[2:])) for s in cached["surfaces"]
        )
        return RiskTable(surfaces, float(cached["threshold"]))
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None


def _write_cached(name: str, key: str, table: RiskTable) -> None:
    text = json.dumps({"key": key, "surfaces": table.surfaces, "threshold": table.threshold})
    partial = f"{name}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(name), exist_ok=True)
        with open(partial, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(partial, name)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(partial)


def _read_toml(path: str, base: RiskTable | None) -> RiskTable:
    import tomllib  # here: a stop with a cached table never pays for it

    try:
        with open(path, encoding="utf-8") as f:
            data = tomllib.loads(f.read())
    except FileNotFoundError:
        raise InvalidRiskTable(f"{path}: no such risk table file") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InvalidRiskTable(f"{path}: not a readable TOML file ({exc})") from None
    return parse_risk_table(data, source=path, base=base)


def parse_risk_table(
    data: Mapping[str, Any], *, source: str, base: RiskTable | None = None
) -> RiskTable:
    """The table in ``data`` (a parsed TOML document), merged onto ``base``.

    Only unknown keys are checked by :func:`agent_reflection.config.check_keys`; the rest stays
    hand-written: a ``[[surface]]`` entry is merged onto the shipped surface of its name (any
    key may be left out) and its patterns are rewritten into matching form, which a typed
    dataclass build does not express. Without ``base`` the table must give its threshold.
    """
    from agent_reflection.config import check_keys

    check_keys(data, ("threshold", "surface"), source, error=InvalidRiskTable)
    if "threshold" in data:
        threshold = _check_threshold(data["threshold"], f"{source}: threshold")
    elif base is not None:
        threshold = base.threshold
    else:
        raise InvalidRiskTable(f"{source}: threshold is missing (a number in [0, 1])")
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
    pattern = " ".join(path_tokens(value))
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
    from agent_reflection.config import check_keys

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
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) and v for v in value):
        raise InvalidRiskTable(f"{where}: {key} must be a list of non-empty strings")
    return tuple(value)


def _check_threshold(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise InvalidRiskTable(f"{where} must be a number in [0, 1], got {value!r}")
    return float(value)
