"""Path globs of the P2 pre-registration, matched on path components, not substrings.

A glob containing ``/`` is matched against the whole path (``.github/workflows/*``); any other
glob is matched against each component (``docs`` matches ``docs/api.rst``; ``test_*.py``
matches ``src/tests/test_app.py``), so ``docs/testing.rst`` is docs, not a test. Matching is
case-insensitive (``fnmatch`` rules; ``*`` inside a ``/`` glob may span folders).
"""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase


def normalise(path: str) -> str:
    return path.replace("\\", "/").strip("/").lower()


def matching_glob(path: str, globs: Iterable[str]) -> str | None:
    """The first glob that matches ``path``, or None."""
    p = normalise(path)
    parts = p.split("/")
    for glob in globs:
        g = glob.lower()
        if "/" in g:
            if fnmatchcase(p, g):
                return glob
        elif any(fnmatchcase(part, g) for part in parts):
            return glob
    return None


def matches(path: str, globs: Iterable[str]) -> bool:
    return matching_glob(path, globs) is not None
