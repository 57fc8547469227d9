"""The text of a name from the file system or git, and of any text, for a record.

A path, a branch or a work tree may be named with bytes that are not UTF-8. Python's
``os.fsdecode`` (``os.listdir``, ``sys.argv``, ``Path``) keeps each such byte as a lone
surrogate, which is right for handing the name back to the file system or git and wrong for a
record: JSON, DuckDB and Arrow refuse it. The rule for records: each byte that is not UTF-8
reads U+FFFD, as ``reflect load git`` reads git's names. :func:`name_text` applies it to a
name (its bytes are ``os.fsencode``'s, in any locale); :func:`record_text` to text that may
quote names (a message, a whole JSON document). Import-light (``os`` only): the hooks use it.
"""

from __future__ import annotations

import os


def name_text(name: str | bytes | os.PathLike[str]) -> str:
    """The text of a name the file system or git gave (``bytes``, or ``os.fsdecode``'s
    ``str``): its bytes read as UTF-8, each byte that is not UTF-8 as U+FFFD."""
    if isinstance(name, bytes):
        return name.decode("utf-8", "replace")
    try:
        return os.fsencode(name).decode("utf-8", "replace")
    except UnicodeEncodeError:  # not a name the file system gave: text
        return record_text(os.fspath(name))


def by_text(names: list[str]) -> dict[str, str]:
    """Each of ``names`` (``os.fsdecode``'s ``str``, as git or the file system gave them) by its
    text (:func:`name_text`), in order: a record holds the text, git wants the name back. Of
    names alike as text (bytes that are not UTF-8 read U+FFFD), the first, as the git loader
    keeps it."""
    found: dict[str, str] = {}
    for name in names:
        found.setdefault(name_text(name), name)
    return found


def record_text(text: str) -> str:
    """``text`` as a record may hold it, whatever the locale: a byte ``os.fsdecode`` escaped
    (a lone surrogate U+DC80-U+DCFF) is that byte again, read as UTF-8 (U+FFFD when it is
    not); any other lone surrogate (``"\\ud800"`` parsed from JSON) reads U+FFFD."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:
        return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)


def lone_surrogate(value: object, path: str = "") -> str | None:
    """Where a parsed JSON document first holds a lone surrogate (``"\\\\udce9"`` is valid JSON,
    yet no text: JSON, DuckDB and Arrow refuse to store it), as a JSON pointer below ``path``
    (a key that holds one is shown with a backslash escape); None when it holds none. Walks
    with a stack: a document nested deeper than Python's recursion limit is read too."""
    stack: list[tuple[str, object]] = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            if not _is_text(item):
                return where or "/"
            continue
        if isinstance(item, dict):
            children: list[tuple[str, object]] = []
            for key, child in item.items():
                if isinstance(key, str) and not _is_text(key):
                    escaped = key.encode("utf-8", "backslashreplace").decode()
                    children.append((f"{where}/{escaped}", _BAD_KEY))
                    break  # the bad key is found where the walk reaches it
                children.append((f"{where}/{key}", child))
            stack.extend(reversed(children))  # the first child is looked at first
        elif isinstance(item, list):
            stack.extend(reversed([(f"{where}/{i}", child) for i, child in enumerate(item)]))
        elif item is _BAD_KEY:
            return where
    return None


#: Marks a key that holds a lone surrogate on the walk's stack.
_BAD_KEY = object()


def _is_text(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
