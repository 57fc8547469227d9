"""Which files a loader reads inside a folder it was given: what is in that folder, nothing else.

A file named on the command line is read as given (a link to it too: the user chose it), if
it is a regular file. Inside a folder given,
a symbolic link is followed only when what it points at is inside that folder too (a
``leak.jsonl -> /etc/shadow`` is not read), and only regular files are read: a FIFO would make
the load wait forever, a device or socket holds no records. :func:`refusal` says why a path is
not read; the loaders keep each refused path in ``rejected`` with that reason (see
docs/loading.md, "What a load reads").
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path


def refusal(top: str | os.PathLike[str], path: str | os.PathLike[str]) -> str | None:
    """Why ``path``, found inside the folder ``top``, is not read (None: read it): a link out
    of ``top``, a link that leads nowhere, or not a regular file or folder."""
    real_top = os.path.realpath(top)
    try:
        real = os.path.realpath(path, strict=True)
        mode = os.stat(real).st_mode
    except OSError as exc:  # dangling, looping or unreadable
        return _nowhere(exc)
    if os.path.commonpath([real_top, real]) != real_top:
        return (
            f"a link to {real}, outside the folder given ({top}): not followed (loaders read "
            "only what they are pointed at; name the file itself to load it)"
        )
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return "not a regular file (a pipe, device or socket): not read"
    return None


def _not_regular(path: Path) -> str | None:
    """Why a file named as it is (a link is followed: the user chose it) is not read."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        return _nowhere(exc)
    if stat.S_ISREG(mode):
        return None
    return "not a regular file (a pipe, device or socket): not read"


def _nowhere(exc: OSError) -> str:
    return f"a link that leads nowhere ({exc.strerror or exc}): not read"


@dataclass(frozen=True)
class FoundFiles:
    """The files to read, sorted, and the paths refused with the reason."""

    files: list[Path] = field(default_factory=list)
    refused: list[tuple[Path, str]] = field(default_factory=list)


def find_files(
    paths: Sequence[str | os.PathLike[str]],
    wanted: Callable[[Path, Path], bool],
    missing: Callable[[Path], Exception],
) -> FoundFiles:
    """``paths``: files as given, folders searched recursively for the files ``wanted(top,
    path)`` selects by name (sorted), each checked by :func:`refusal`; a path that does not
    exist raises ``missing(path)``."""
    found = FoundFiles()
    for path in map(Path, paths):
        if path.is_dir():
            for candidate in sorted(path.rglob("*")):  # rglob does not enter linked folders
                if not wanted(path, candidate) or (
                    candidate.is_dir() and not candidate.is_symlink()
                ):
                    continue
                reason = refusal(path, candidate)
                if reason is None and candidate.is_dir():
                    continue  # a link to a folder inside: its files are found there
                if reason is None:
                    found.files.append(candidate)
                else:
                    found.refused.append((candidate, reason))
        elif os.path.lexists(path):
            reason = _not_regular(path)
            if reason is None:
                found.files.append(path)
            else:
                found.refused.append((path, reason))
        else:
            raise missing(path)
    return found
