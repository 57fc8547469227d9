"""Which files a ``reflect load sidecars PATH…`` call reads.

Each PATH is a file (read whatever its name), a folder (walked recursively for files whose
name matches ``pattern``, ``*.reflection.json`` by default — the name the Stop hook writes), or
a glob (``**`` recursive; matching files are read whatever their name, matching folders are
walked). Files are yielded lazily, in sorted order within each folder, so a million files
never sit in memory at once. Inside a folder, a symlink is followed only when it points inside
that folder (:func:`agent_reflection.load.files.refusal`); the others become
:attr:`SidecarFiles.refused`, which the loader keeps in ``rejected``. A folder reached twice (a
symlink loop, or the same folder given twice) is walked once. Paths that cannot be used become
:attr:`SidecarFiles.problems` (messages naming the path) and the other paths still load;
:func:`missing_paths` names the ones that do not exist at all, which the loader refuses
before it starts.
"""

from __future__ import annotations

import fnmatch
import glob
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from agent_reflection.load.files import refusal

DEFAULT_PATTERN = "*.reflection.json"
_GLOB_CHARS = frozenset("*?[")


class SidecarFiles:
    """An iterable over the files to read; iterate once (``problems`` fill as it goes)."""

    def __init__(self, paths: Iterable[str | os.PathLike[str]], pattern: str = DEFAULT_PATTERN):
        self.paths = [os.fspath(p) for p in paths]
        self.pattern = pattern
        #: Messages about paths that were missing, empty or unreadable (no record was read).
        self.problems: list[str] = []
        #: Folders skipped because they were already walked (symlink loops, repeats).
        self.folders_skipped = 0
        #: (path, reason) of each link inside a folder that is not followed (it leads out of
        #: the folder, or nowhere).
        self.refused: list[tuple[str, str]] = []
        self._seen_dirs: set[tuple[int, int]] = set()

    def __iter__(self) -> Iterator[str]:
        for arg in self.paths:
            yield from self._expand(arg)

    def count(self) -> int:
        """How many files a fresh iteration would yield (a separate, quick walk)."""
        return sum(1 for _ in SidecarFiles(self.paths, self.pattern))

    def _expand(self, arg: str) -> Iterator[str]:
        if os.path.isdir(arg):
            yield from self._walk_top(arg)
        elif os.path.lexists(arg):
            yield arg  # a file (or a dangling link / special file: rejected, with the reason)
        elif _GLOB_CHARS & set(arg):
            matches = sorted(glob.iglob(arg, recursive=True))
            if not matches:
                self.problems.append(f"{arg}: no file or folder matches this glob")
            for match in matches:
                if os.path.isdir(match):
                    yield from self._walk_top(match)
                else:
                    yield match
        else:
            self.problems.append(
                f"{arg}: no such file or folder — check the path (the other paths still load)"
            )

    def _walk_top(self, top: str) -> Iterator[str]:
        """Walk one given folder; say so when it holds no matching file at all."""
        found, problems, skipped = 0, len(self.problems), self.folders_skipped
        for path in self._walk(top, top):
            found += 1
            yield path
        if found == 0 and len(self.problems) == problems and self.folders_skipped == skipped:
            self.problems.append(
                f"{top}: no {self.pattern} files in this folder or below (0 read) — "
                f"is it the right folder? --pattern '*.json' reads other names"
            )

    def _walk(self, top: str, start: str) -> Iterator[str]:
        stack = [start]
        while stack:
            folder = stack.pop()
            try:
                info = os.stat(folder)
                key = (info.st_dev, info.st_ino)
                if key in self._seen_dirs:
                    self.folders_skipped += 1
                    continue
                self._seen_dirs.add(key)
                with os.scandir(folder) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError as exc:
                self.problems.append(
                    f"{folder}: cannot list this folder ({exc.strerror or exc}); its sidecars "
                    "were not read — fix its permissions and load again"
                )
                continue
            subfolders = []
            for entry in entries:
                if entry.is_symlink():
                    reason = refusal(top, entry.path)
                    if reason is not None:
                        if fnmatch.fnmatchcase(entry.name, self.pattern) or _is_dir(entry):
                            self.refused.append((entry.path, reason))
                        continue
                try:
                    is_dir = entry.is_dir()
                except OSError:  # e.g. a symlink loop: treat as a file, rejected if it matches
                    is_dir = False
                if is_dir:
                    subfolders.append(entry.path)
                elif fnmatch.fnmatchcase(entry.name, self.pattern):
                    yield entry.path
            stack.extend(reversed(subfolders))


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def missing_paths(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """The paths that are neither a file, a folder nor a glob: nothing by that name exists."""
    return [
        os.fspath(p)
        for p in paths
        if not os.path.lexists(p) and not _GLOB_CHARS & set(os.fspath(p))
    ]


def describe(paths: Iterable[str | os.PathLike[str]]) -> str:
    """The ``origin`` recorded in ``loads`` for a list of paths."""
    return " ".join(str(Path(p)) for p in paths)
