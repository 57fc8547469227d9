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
    """``name``'s text for a record (unchanged when it is UTF-8 through and through)."""
    raw = name if isinstance(name, bytes) else os.fsencode(name)
    return raw.decode("utf-8", "replace")


def lone_surrogate(value: object) -> str | None:
    """Where a parsed JSON document holds a lone surrogate (``"\\udce9"`` is valid JSON, yet
    no text: JSON, DuckDB and Arrow refuse to store it), as a JSON pointer; None when none."""
    stack: list[tuple[str, object]] = [("", value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return where or "/"
        elif isinstance(item, dict):
            for key, child in item.items():
                stack.append((f"{where}/{key}", key))  # a key is text too
                stack.append((f"{where}/{key}", child))
        elif isinstance(item, list):
            stack.extend((f"{where}/{i}", child) for i, child in enumerate(item))
    return None
