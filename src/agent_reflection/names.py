"""The text of a name from the file system or git, for a record.

A path, a branch or a work tree may be named with bytes that are not UTF-8. Python's
``os.fsdecode`` (``os.listdir``, ``sys.argv``, ``Path``) keeps each such byte as a lone
surrogate, which is right for handing the name back to the file system or git and wrong for a
record: JSON, DuckDB and Arrow refuse it. :func:`name_text` is the one rule for records: each
byte that is not UTF-8 reads U+FFFD, as ``reflect load git`` reads git's names. Import-light
(``os`` only): the hooks use it on every stop.
"""

from __future__ import annotations

import os


def name_text(name: str | bytes | os.PathLike[str]) -> str:
    """``name``'s text for a record: each lone surrogate (``os.fsdecode``'s escape of a byte)
    is that byte again, and each byte that is not UTF-8 reads U+FFFD; any other text is
    returned as it is, whatever the locale (a message quoting the name may pass through)."""
    raw = name if isinstance(name, bytes) else os.fspath(name).encode("utf-8", "surrogateescape")
    return raw.decode("utf-8", "replace")


def lone_surrogate(value: object, path: str = "") -> str | None:
    """Where a parsed JSON document first holds a lone surrogate (``"\\udce9"`` is valid JSON,
    yet no text: JSON, DuckDB and Arrow refuse to store it), as a JSON pointer below ``path``
    (a key that holds one is shown with a backslash escape); None when it holds none."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path or "/"
        return None
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, child in items:
        if isinstance(key, str) and lone_surrogate(key) is not None:
            return f"{path}/{key.encode('utf-8', 'backslashreplace').decode()}"
        found = lone_surrogate(child, f"{path}/{key}")
        if found is not None:
            return found
    return None
