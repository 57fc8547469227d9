"""Walk a history with one ``git log`` process, resumed past missing or corrupt objects.

git stops at the first object it cannot read. :class:`GitWalk` then finds the commit git was
on (``git rev-list --skip=N -n1``), loads it by itself — with its files when git can list them,
else with ``files_available = false`` — and resumes the same walk with ``--skip``. An unreadable
*commit* object is recorded in :attr:`GitWalk.unreadable`; the walk continues past it through a
temporary graft file (``GIT_GRAFT_FILE``) that drops it from its children's parents.
"""

from __future__ import annotations

import dataclasses
import io
import re
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, cast

from agent_reflection.load.git.log import LOG_FLAGS, LOG_FORMAT, LogParser, ParsedCommit
from agent_reflection.load.git.repo import (
    GitLogFailed,
    GitNotInstalled,
    GitSource,
    ResolvedRevs,
    check_since,
    filters,
    git,
    git_argv,
    git_env,
    said,
)

#: Bytes read from git's pipe at a time.
READ_CHUNK = 1 << 20
#: After this many commits lost their file list to missing objects, the rest of the walk is
#: read without ``--numstat`` (one recovery per commit would be quadratic in a partial clone).
MAX_FILE_RECOVERIES = 25
#: ``git log`` flags without the diff: headers only.
HEADER_FLAGS = tuple(f for f in LOG_FLAGS if f not in ("--numstat", "-M"))

_TRAVERSE = re.compile(rb"Failed to traverse parents of commit ([0-9a-f]{40,64})")
_UNREADABLE = re.compile(
    rb"(?:Could not read|unable to read|bad object|loose object|unable to unpack) "
    rb"([0-9a-f]{40,64})"
)


def _stop(proc: subprocess.Popen[bytes]) -> int:
    """Kill ``proc`` if it still runs, close its pipe, reap it; its exit code."""
    if proc.poll() is None:
        proc.kill()
    if proc.stdout is not None:
        proc.stdout.close()
    return proc.wait()


@dataclass(frozen=True)
class WalkedCommit:
    commit: ParsedCommit
    files_available: bool


class GitWalk:
    """``git log`` over ``revs``, resumed past missing objects (see the module docstring).

    Iterating yields every commit once. Commit objects that cannot be read end up in
    :attr:`unreadable`, commits whose file list could not be computed come with
    ``files_available = False`` and a line in :attr:`warnings`.
    """

    def __init__(self, source: GitSource, revs: list[str], since: str | None) -> None:
        if since:
            check_since(source, since)
        self.source = source
        self.revs = revs
        self.since = since
        self.unreadable: dict[str, str] = {}  # sha -> git's message
        self.warnings: list[str] = []
        self._grafts: dict[str, tuple[str, ...]] = {}  # commit -> its real parents
        self._graft_file: Path | None = None
        # Parents seen but not (yet) emitted: where the walk continues, so where a commit
        # with an unreadable parent is found after git stopped.
        self._frontier: set[str] = set()
        self.files_lost = 0  # commits whose file list could not be computed
        self.numstat = True  # False once MAX_FILE_RECOVERIES were needed (see _command)

    def _env(self) -> dict[str, str] | None:
        return {"GIT_GRAFT_FILE": str(self._graft_file)} if self._graft_file else None

    @staticmethod
    def _base() -> list[str]:
        return ["-c", "advice.graftFileDeprecated=false", "-c", "core.quotePath=false"]

    def _emit(self, commit: ParsedCommit, files_available: bool = True) -> WalkedCommit:
        # Merges never have file rows (no numstat for merges), so nothing is hidden for them.
        files_available = files_available or len(commit.parents) > 1
        real = self._grafts.get(commit.sha)
        if real is not None:
            commit = dataclasses.replace(commit, parents=real)
        self._frontier.discard(commit.sha)
        self._frontier.update(commit.parents)
        return WalkedCommit(commit, files_available)

    def _command(self, emitted: int) -> list[str]:
        """The ``git log`` arguments of a pass that skips the ``emitted`` commits read before."""
        if self.numstat and self.files_lost >= MAX_FILE_RECOVERIES:
            # A partial clone (blob:none) misses the blobs of most commits: one recovery per
            # commit would be quadratic. Read the rest without files.
            self.numstat = False
            self.warnings.append(
                f"{self.source.name}: {self.files_lost} commits needed objects that are missing "
                "(a partial clone?); the remaining commits were loaded without file lists "
                "(files_available = false). Fetch the objects (`git fetch --refetch` or a full "
                "clone), delete this repo's rows and load again to get them"
            )
        return [
            *self._base(),
            "log",
            *(LOG_FLAGS if self.numstat else HEADER_FLAGS),
            f"--format={LOG_FORMAT}",
            *([f"--skip={emitted}"] if emitted else []),
            *filters(self.since),
            *self.revs,
            "--",
        ]

    def __iter__(self) -> Iterator[WalkedCommit]:
        with tempfile.TemporaryDirectory(prefix="reflect-git-") as tmp_dir:  # stderr, grafts
            yield from self._passes(Path(tmp_dir))

    def _passes(self, tmp: Path) -> Iterator[WalkedCommit]:
        """``git log`` passes until one ends cleanly, each resumed past what stopped the last."""
        emitted = 0
        while True:
            parser = LogParser()
            with open(tmp / "stderr", "w+b") as err:
                proc = self._spawn(self._command(emitted), err)
                pipe = cast(io.BufferedReader, proc.stdout)
                try:
                    while chunk := pipe.read1(READ_CHUNK):
                        for commit in parser.feed(chunk):
                            emitted += 1
                            yield self._emit(commit, self.numstat)
                finally:
                    rc = _stop(proc)
                err.seek(0)
                stderr = err.read()
            if rc == 0:
                for commit in parser.finish():
                    emitted += 1
                    yield self._emit(commit, self.numstat)
                return
            # git stopped: the commit it was on is the one after the `emitted` complete
            # ones (a commit is complete only once the next one starts).
            state = (emitted, len(self._grafts))
            recovered = self._recover(emitted, tmp)
            if recovered is not None:
                emitted += 1
                yield recovered
            if (emitted, len(self._grafts)) == state:
                raise GitLogFailed(
                    f"git log stopped in {self.source.origin} after {emitted:,} commits "
                    f"and could not be resumed: {said(stderr)}. Run `git fsck` there."
                )

    def _spawn(self, cmd: list[str], err: IO[bytes]) -> subprocess.Popen[bytes]:
        try:
            proc = subprocess.Popen(
                git_argv(self.source.path, *cmd),
                stdout=subprocess.PIPE,
                stderr=err,
                env=git_env(self._env()),
            )
        except FileNotFoundError as exc:
            raise GitNotInstalled() from exc
        return proc

    def _git(self, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        return git(self.source.path, *self._base(), *args, env=self._env(), input=stdin)

    def _recover(self, emitted: int, tmp: Path) -> WalkedCommit | None:
        """Load the next commit on its own, or graft past an unreadable commit object."""
        nxt = self._git(
            "rev-list", f"--skip={emitted}", "-n1", *filters(self.since), *self.revs, "--"
        )
        if nxt.returncode == 0:
            sha = nxt.stdout.decode().strip()
            return self._single(sha) if sha else None
        bad = {b.decode() for b in _UNREADABLE.findall(nxt.stderr)}
        if not bad:
            return None
        children = self._children_of(bad, nxt.stderr)
        if not children:
            return None
        for sha in sorted(bad):
            self.unreadable.setdefault(sha, said(nxt.stderr))
        self._grafts.update(children)
        self._graft_file = tmp / "grafts"
        lines = [
            " ".join([child, *(p for p in parents if p not in self.unreadable)])
            for child, parents in self._grafts.items()
        ]
        self._graft_file.write_text("\n".join(lines) + "\n")
        return None

    def _children_of(self, bad: set[str], stderr: bytes) -> dict[str, tuple[str, ...]]:
        """Commits on the walk's frontier (or named by git) that have a parent in ``bad``."""
        candidates = set(self._frontier)
        candidates.update(b.decode() for b in _TRAVERSE.findall(stderr))
        tips = self._git("rev-parse", "--revs-only", *self.revs)
        candidates.update(tips.stdout.decode().replace("^", "").split())
        candidates -= bad
        candidates -= set(self._grafts)
        if not candidates:
            return {}
        shown = self._git(
            "log",
            "--no-walk=unsorted",
            "--stdin",
            "--format=%H %P",
            stdin="\n".join(sorted(candidates)).encode() + b"\n",
        )
        children: dict[str, tuple[str, ...]] = {}
        for line in shown.stdout.decode().splitlines():
            sha, *parents = line.split()
            if bad.intersection(parents):
                children[sha] = tuple(parents)
        return children

    def _single(self, sha: str) -> WalkedCommit | None:
        """``sha`` loaded by itself: with its files if git can list them, else without."""
        common = ["log", "--no-walk", "-n1", f"--format={LOG_FORMAT}"]
        full = self._git(*common, *LOG_FLAGS, sha, "--")
        result = full
        if full.returncode != 0:
            result = self._git(*common, *HEADER_FLAGS, sha, "--")
            if result.returncode != 0:
                self.unreadable.setdefault(sha, said(result.stderr))
                return None
        parser = LogParser()
        commits = parser.feed(result.stdout) + parser.finish()
        if len(commits) != 1:
            return None
        if full.returncode == 0:
            return self._emit(commits[0])
        self.files_lost += 1
        self.warnings.append(
            f"{self.source.name}@{sha}: file list unavailable (missing or corrupt object: "
            f"{said(full.stderr)}); commit loaded with files_available = false"
        )
        return self._emit(dataclasses.replace(commits[0], files=()), False)


def walk_revs(pinned: ResolvedRevs, tips: Sequence[str]) -> list[str]:
    """``git log``'s revisions: the pinned tips, less the excluded ids and ``tips``."""
    return [*pinned.include, *(f"^{sha}" for sha in (*pinned.exclude, *tips))]
