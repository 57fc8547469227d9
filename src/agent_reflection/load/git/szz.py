"""SZZ at load time: for each fix-like commit, the commits that last touched what it changes.

:func:`load_fix_inducing` reads the fix-like, non-merge commits of a repo already loaded by
:func:`agent_reflection.load.git.history.load_git_history` and, per fix:

1. its ``git diff-tree -p -U0 --histogram`` against its first parent (raw entries give exact
   paths and blob ids, the patch gives the hunks), read for a batch of fixes by ONE
   ``git diff-tree --stdin`` (:func:`diff_fixes`; one by one only if git stops on a bad object);
2. per changed code file, both blob versions through one long-lived ``git cat-file --batch``
   (per worker) to tell code lines from cosmetic ones (:mod:`.git_szz_lines`);
3. per changed code file with deleted code lines, ONE ``git blame --porcelain -w`` on the
   parent with every deleted range as its own ``-L`` (not a blame per line), honouring the
   repository's ``.git-blame-ignore-revs``, and walking back no further than the blame horizon
   (:func:`blame_horizon_days`: the widest window the registered analyses count an introducing
   commit in). Lines last changed before the horizon are counted as such
   (:data:`METHOD_BEFORE_HORIZON`), their commit not named: no analysis could count it, and the
   walk past it was most of the cost on deep histories.

Fixes are worked on by a bounded pool of threads, each with its own git processes (git does the
work, so they run on every core); results are written in the order of the fixes. When there
are many fixes to attribute, those git processes read a commit-graph with changed-path Bloom
filters that the load writes beside them (:class:`PrivateCommitGraph`): a blame started once
it is written skips, without reading their trees, the commits that do not touch its file. It
lives in a temporary object folder that borrows the repository's objects, so nothing is written
into the repository.

Rows go to ``fix_changes`` (every file of every fix: code or cosmetic line counts) and
``fix_inducing`` (one row per fix, introducing commit and path; or one row saying why a fix has
no candidate). Candidates that are merges or bulk commits (:data:`BULK_MIN_FILES`,
:data:`BULK_MIN_LINES`) are flagged, not dropped. A fix whose objects git cannot read is
rejected (``rejected``, location ``repo@sha``) and retried by the next run; fixes already
attributed are skipped, so re-running adds nothing and a crashed run is completed by the next.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import duckdb

from agent_reflection.load.git.log import lossy_text
from agent_reflection.load.git.repo import (
    GitLoadError,
    GitSource,
    batch_objects,
    git_argv,
    git_env,
    open_repo,
    said,
)
from agent_reflection.load.git.repo import git as git_command
from agent_reflection.load.git.szz_lines import (
    CODE,
    Hunk,
    account_hunk,
    cosmetic_lines,
    file_kind,
    is_markup,
    ranges,
)
from agent_reflection.store.db import (
    LoadRun,
    LoadSummary,
    begin_load,
    columns_json,
    pandas_deferred,
    read_sql,
    transaction,
)

if TYPE_CHECKING:
    from agent_reflection.experiments.registration import Preregistration

#: Bump when what a row means changes (filters, thresholds, methods). 2: ``fix_changes`` also
#: holds the diff facts of reverts that are not fix-like, and ``version_lines``. 3:
#: ``fix_changes.text_lines`` (code lines changed only inside string literals or markup text).
#: 4: blames stop at the blame horizon (``before-horizon`` rows, see :func:`blame_horizon_days`).
SZZ_VERSION = 4

#: ``fix_inducing.method`` values. ``blame``: a candidate found by blaming the fix's deleted
#: code lines. The others mark a fix with no candidate (introducing_sha NULL) and say why.
METHOD_BLAME = "blame"
METHOD_NO_DELETED_LINES = "no-deleted-lines"  # code changed, but no code line deleted
METHOD_NO_CODE_FILES = "no-code-files"  # only docs, changelogs, lockfiles, ... changed
METHOD_ROOT_COMMIT = "root-commit"  # no parent to blame
#: In a shallow clone: the fix is at the cut (its parent is not there), or lines blamed to a
#: commit at the cut (they may be older: the real introducing commit is not in the clone).
METHOD_SHALLOW = "shallow-boundary"
#: Lines whose last change is older than the blame horizon (the fix's committer time minus
#: :func:`blame_horizon_days`): blame stopped there, so the introducing commit is not named
#: (introducing_sha NULL). A fix whose blamed lines are all that old has only such rows.
METHOD_BEFORE_HORIZON = "before-horizon"

#: A candidate is *bulk* (mass reformatting, vendoring, a big move) when it changes at least
#: this many files, or at least :data:`BULK_MIN_LINES` lines (added + deleted). On flask these
#: are the largest ~0.6% of non-merge commits (25 of 3,843), e.g. "Reformat with black".
BULK_MIN_FILES = 50
BULK_MIN_LINES = 1000

#: Diff algorithm for the fix's own diff: histogram aligns code changes better than Myers
#: (Nugroho et al., "How different are different diff algorithms in Git?", EMSE 2020).
DIFF_ALGORITHM = "--histogram"

#: The file git blame's own convention names (read at every branch and tag tip, merged).
IGNORE_REVS_FILE = ".git-blame-ignore-revs"
#: Fixes per transaction (and per round of parallel work).
BATCH_FIXES = 256
#: Blob ids asked of ``git cat-file --batch`` before reading the answers (their ids fit the pipe).
PREFETCH_BLOBS = 256
#: A private commit-graph (:class:`PrivateCommitGraph`) is written only when there is at
#: least one fix to attribute per this many loaded commits: writing it costs about 45 us a
#: commit (0.47 s for 10,553) and saved about 0.9 ms a fix on a dense history (bench/README.md,
#: 2026-12-07); a re-run attributing a few new fixes of a long history would pay it all.
COMMITS_PER_FIX_FOR_A_GRAPH = 20
#: Worker threads (each runs its own git processes; git does the work, not Python): one per
#: core this process may use, at most :data:`MAX_WORKERS`.
MAX_WORKERS = 8


def default_workers() -> int:
    return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0))))


ProgressCallback = Callable[[int], object]

_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_PORCELAIN_HEADER = re.compile(rb"^([0-9a-f]{40,64}) (\d+) (\d+)(?: \d+)?$")
_NULL_SHA = re.compile(r"^0+$")


class SzzGitError(Exception):
    """git could not read what one fix needs (missing object, shallow history)."""


# --------------------------------------------------------------------------- diff parsing


@dataclass(frozen=True)
class FileDiff:
    """One file of a fix's diff: paths, blob ids (None when absent) and hunks."""

    path: str
    old_path: str
    #: ``old_path`` as git's argument: its bytes as git printed them, ``os.fsdecode``d
    #: (``old_path`` is their text, where a byte that is not UTF-8 reads U+FFFD: no such path)
    old_path_arg: str
    old_blob: str | None
    new_blob: str | None
    status: str
    binary: bool
    hunks: tuple[Hunk, ...]
    submodule: bool = False  # a gitlink (mode 160000): its "lines" are commit ids


def parse_diff_tree(output: bytes) -> list[FileDiff]:
    """Parse ``git diff-tree -r -z --no-abbrev --patch-with-raw -U0`` output."""
    tokens = output.split(b"\0")
    entries: list[tuple[str, str, str, str | None, str | None, str, bool]] = []
    i = 0
    while i < len(tokens) and tokens[i].startswith(b":"):
        meta = tokens[i][1:].split()
        status = meta[4].decode()[:1]
        old_blob, new_blob = meta[2].decode(), meta[3].decode()
        old_name = tokens[i + 1]
        if status in ("R", "C"):
            old_path, path = lossy_text(old_name), lossy_text(tokens[i + 2])
            i += 3
        else:
            old_path = path = lossy_text(old_name)
            i += 2
        entries.append(
            (
                path,
                old_path,
                os.fsdecode(old_name),
                None if _NULL_SHA.match(old_blob) else old_blob,
                None if _NULL_SHA.match(new_blob) else new_blob,
                status,
                b"160000" in (meta[0], meta[1]),
            )
        )
    patch = b"\0".join(tokens[i:]).lstrip(b"\0")
    sections = _sections(patch)
    if len(sections) != len(entries):
        raise ValueError(f"{len(entries)} raw entries but {len(sections)} patch sections")
    return [
        FileDiff(path, old, old_arg, ob, nb, st, binary, hunks, gitlink)
        for (path, old, old_arg, ob, nb, st, gitlink), (binary, hunks) in zip(
            entries, sections, strict=True
        )
    ]


def _sections(patch: bytes) -> list[tuple[bool, tuple[Hunk, ...]]]:
    sections: list[tuple[bool, tuple[Hunk, ...]]] = []
    binary = False
    hunks: list[Hunk] = []
    current: tuple[int, int, list[str], list[str]] | None = None
    started = False

    def close_hunk() -> None:
        nonlocal current
        if current is not None:
            hunks.append(Hunk(current[0], tuple(current[2]), current[1], tuple(current[3])))
            current = None

    for line in patch.split(b"\n"):
        if line.startswith(b"diff --git "):
            close_hunk()
            if started:
                sections.append((binary, tuple(hunks)))
            started, binary, hunks = True, False, []
            continue
        match = _HUNK.match(line)
        if match:
            close_hunk()
            old_count = 1 if match.group(2) is None else int(match.group(2))
            old_start = int(match.group(1))
            # "-5,0" means nothing deleted after line 5; deleted lines start at old_start
            current = (old_start if old_count else old_start + 1, int(match.group(3)), [], [])
            continue
        if current is not None and line[:1] == b"-":
            current[2].append(lossy_text(line[1:]))
        elif current is not None and line[:1] == b"+":
            current[3].append(lossy_text(line[1:]))
        elif line.startswith(b"Binary files ") or line == b"GIT binary patch":
            binary = True
    close_hunk()
    if started:
        sections.append((binary, tuple(hunks)))
    return sections


def parse_blame(output: bytes) -> dict[int, str]:
    """``git blame --porcelain`` output -> {final line number: sha}."""
    return parse_blame_times(output)[0]


def parse_blame_times(output: bytes) -> tuple[dict[int, str], dict[str, int]]:
    """``git blame --porcelain`` output -> ({final line number: sha}, {sha: committer time})."""
    blamed: dict[int, str] = {}
    times: dict[str, int] = {}
    sha = ""
    for line in output.split(b"\n"):
        if not line or line[:1] == b"\t":
            continue
        match = _PORCELAIN_HEADER.match(line)
        if match:
            sha = match.group(1).decode()
            blamed[int(match.group(3))] = sha
        elif line.startswith(b"committer-time "):
            times[sha] = int(line.split()[1])
    return blamed, times


# --------------------------------------------------------------------------- per-fix work


@dataclass(frozen=True)
class FixRef:
    """A fix-like commit as stored in ``commits``."""

    sha: str
    parents: tuple[str, ...]
    committer_epoch: float
    #: a revert that is not fix-like: only its diff facts (``fix_changes``) are read, nothing
    #: is blamed (``fix_inducing`` stays about fixes), so P2 can see what a revert changes
    diff_only: bool = False


@dataclass(frozen=True)
class FileChangeRow:
    path: str
    old_path: str | None
    kind: str
    code_added: int
    code_deleted: int
    cosmetic_added: int
    cosmetic_deleted: int
    version_lines: int = 0  # code lines (both sides) that only set a version string
    text_lines: int = 0  # code lines (both sides) changed only inside strings / markup text


@dataclass(frozen=True)
class FixResult:
    """What one fix yields: its files, and lines blamed per (introducing commit, path)."""

    fix: FixRef
    files: tuple[FileChangeRow, ...] = ()
    #: (introducing sha, path in the fix, lines); sha None: lines that blame to the cut of a
    #: shallow clone (their real origin is not in the clone)
    blamed: tuple[tuple[str | None, str, int], ...] = ()
    method: str = METHOD_BLAME
    error: str | None = None
    blame_calls: int = 0
    #: (path in the fix, lines) whose last change is older than the blame horizon
    before_horizon: tuple[tuple[str, int], ...] = ()
    #: files whose blame was not run: the loaded history shows all their lines are older
    blames_skipped: int = 0


@dataclass(frozen=True)
class FirstParents:
    """The loaded history near the fixes, to tell without a blame that a file's lines are all
    older than the blame horizon (:meth:`untouched_since`)."""

    #: sha -> (first parent or None, committer time, is a merge, paths its diff touches)
    commits: dict[str, tuple[str | None, int, bool, frozenset[str]]]
    shallow: frozenset[str] = frozenset()

    def untouched_since(self, start: str, path: str, since: int) -> bool:
        """True when ``git blame --since=@since start -- path`` can only stop at a commit
        older than ``since`` for every line: along the first parents from ``start``, no commit
        at or after ``since`` is a merge, a root, a shallow cut or one that touches ``path``
        (blame then hands every line to the first parent, which has the same file). False
        when it cannot tell (a commit not loaded), so the blame runs."""
        sha: str | None = start
        while sha is not None:
            found = self.commits.get(sha)
            if found is None or sha in self.shallow:
                return False
            first_parent, at, is_merge, paths = found
            if at < since:
                return True
            if is_merge or path in paths:
                return False
            sha = first_parent
        return False  # a root commit inside the horizon: blame names it


def first_parents(
    con: duckdb.DuckDBPyConnection, repo: str, since: int, shallow: frozenset[str]
) -> FirstParents:
    """:class:`FirstParents` of the commits of ``repo`` committed at or after ``since``."""
    found = con.execute(
        read_sql("git/szz_first_parents.sql"), {"repo": repo, "since": since}
    ).fetchall()
    return FirstParents(
        {
            sha: (parent, at, bool(merge), frozenset([*(paths or ()), *(old or ())]))
            for sha, parent, at, merge, paths, old in found
        },
        shallow,
    )


class GitSession:
    """The git processes of one worker thread: a ``cat-file --batch`` kept open, plus runs."""

    def __init__(
        self,
        path: Path,
        ignore_revs: Path | None,
        shallow: frozenset[str] = frozenset(),
        horizon_days: float | None = None,
        history: FirstParents | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.path = path
        #: environment added to every git process (:class:`PrivateCommitGraph`'s)
        self.env = env
        self.shallow = shallow  # commits at the cut of a shallow clone
        #: how far back from a fix its blames walk (None: to the root)
        self.horizon_days = horizon_days
        #: the loaded history, to skip a blame whose lines are all older than the horizon
        self.history = history
        self.ignore_args = ["--ignore-revs-file", ""]  # drop any blame.ignoreRevsFile config
        if ignore_revs is not None:
            self.ignore_args += ["--ignore-revs-file", str(ignore_revs)]
        self._batch: subprocess.Popen[bytes] | None = None
        self._prefetched: dict[str, bytes] = {}

    def run(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        return git_command(self.path, "-c", "core.quotePath=false", *args, env=self.env)

    def _pipes(self) -> tuple[IO[bytes], IO[bytes]]:
        if self._batch is None:
            self._batch = subprocess.Popen(
                git_argv(self.path, "cat-file", "--batch"),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=git_env(self.env),
            )
        return self._batch.stdin, self._batch.stdout  # type: ignore[return-value]

    def blob(self, sha: str) -> bytes:
        found = self._prefetched.pop(sha, None)
        if found is not None:
            return found
        stdin, stdout = self._pipes()
        stdin.write(sha.encode() + b"\n")
        stdin.flush()
        header = stdout.readline()
        parts = header.split()
        if len(parts) != 3:
            raise SzzGitError(f"blob {sha} is missing ({lossy_text(header.strip())})")
        data = stdout.read(int(parts[2]))
        stdout.read(1)  # the newline after the content
        return data

    def prefetch(self, shas: Sequence[str]) -> None:
        """Read ``shas`` in one round trip (all asked, then all read: a few requests fit the
        pipe); :meth:`blob` then returns each once. A missing one is left for :meth:`blob`
        to report."""
        self._prefetched.clear()  # what the last fix left unread (a fix that failed midway)
        wanted = list(dict.fromkeys(shas))
        stdin, stdout = self._pipes()
        for start in range(0, len(wanted), PREFETCH_BLOBS):
            chunk = wanted[start : start + PREFETCH_BLOBS]
            stdin.write(b"".join(sha.encode() + b"\n" for sha in chunk))
            stdin.flush()
            for sha in chunk:
                parts = stdout.readline().split()
                if len(parts) == 3:
                    self._prefetched[sha] = stdout.read(int(parts[2]))
                    stdout.read(1)

    def close(self) -> None:
        if self._batch is not None:
            if self._batch.stdin is not None:
                self._batch.stdin.close()
            self._batch.wait()
            if self._batch.stdout is not None:
                self._batch.stdout.close()
            self._batch = None


def attribute_fix(git: GitSession, fix: FixRef, diffs: list[FileDiff] | None = None) -> FixResult:
    """SZZ for one fix (see the module docstring). git errors come back in ``error``.

    ``diffs``: the fix's diff when already read (:func:`diff_fixes`), else it is read here."""
    if not fix.parents:
        return FixResult(
            fix, method=METHOD_SHALLOW if fix.sha in git.shallow else METHOD_ROOT_COMMIT
        )
    parent = fix.parents[0]
    if diffs is None:
        try:
            diffs = diff_fix(git, parent, fix.sha)
        except SzzGitError as exc:
            return FixResult(fix, error=str(exc))
    try:
        git.prefetch([sha for diff in diffs for sha in blobs_to_read(diff)])
    except OSError as exc:
        return FixResult(fix, error=f"git cat-file stopped: {exc}")
    files: list[FileChangeRow] = []
    blamed: Counter[tuple[str | None, str]] = Counter()
    older: Counter[str] = Counter()
    any_code = False
    blame_calls = skipped = 0
    since = None
    if git.horizon_days is not None:
        since = math.floor(fix.committer_epoch - git.horizon_days * 86400)
    try:
        for diff in diffs:
            row, to_blame = account_file(git, diff)
            files.append(row)
            any_code = any_code or row.kind == CODE
            if to_blame and not fix.diff_only:
                if (
                    since is not None
                    and git.history is not None
                    and git.history.untouched_since(parent, diff.old_path, since)
                ):
                    older[diff.path] += len(set(to_blame))  # what the blame would say
                    skipped += 1
                    continue
                blame_calls += 1
                lines, times = blame_lines_since(git, parent, diff.old_path_arg, to_blame, since)
                for sha in lines.values():
                    if sha in git.shallow:
                        blamed[(None, diff.path)] += 1
                    elif since is not None and times.get(sha, since) < since:
                        older[diff.path] += 1  # blame stopped here: the line is older
                    else:
                        blamed[(sha, diff.path)] += 1
    except SzzGitError as exc:
        return FixResult(fix, tuple(files), error=str(exc))
    method = METHOD_BLAME
    if not blamed and not older:
        method = METHOD_NO_DELETED_LINES if any_code else METHOD_NO_CODE_FILES
    elif all(sha is None for sha, _ in blamed):
        method = METHOD_SHALLOW if blamed else METHOD_BEFORE_HORIZON
    rows = tuple((sha, path, n) for (sha, path), n in sorted(blamed.items(), key=str))
    before = tuple(sorted(older.items()))
    return FixResult(
        fix,
        tuple(files),
        rows,
        method,
        blame_calls=blame_calls,
        before_horizon=before,
        blames_skipped=skipped,
    )


def _diff_tree_args(algorithm: str) -> list[str]:
    return [
        "diff-tree",
        "-r",
        "-z",
        "-M",
        "--no-abbrev",
        "--patch-with-raw",
        "-U0",
        algorithm,
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--src-prefix=a/",
        "--dst-prefix=b/",
    ]


def diff_fixes(git: GitSession, fixes: Sequence[FixRef]) -> dict[str, list[FileDiff]]:
    """The diffs of many fixes (against their first parent) from ONE ``git diff-tree --stdin``.

    Fixes whose diff could not be read this way (git stopped at a missing object, so the whole
    stream is dropped) are left out: :func:`attribute_fix` then reads them one by one."""
    pairs = [(f.sha, f.parents[0]) for f in fixes if f.parents]
    if not pairs:
        return {}
    done = git_command(
        git.path,
        *_diff_tree_args(DIFF_ALGORITHM),
        "--stdin",
        "--always",
        input="".join(f"{sha} {parent}\n" for sha, parent in pairs).encode(),
        env=git.env,
    )
    if done.returncode != 0:
        return {}
    out, found = done.stdout, {}
    starts: list[tuple[str, int]] = []
    pos = 0
    for sha, _ in pairs:  # each fix's output starts with "<sha>\0", in input order
        header = sha.encode() + b"\0"
        at = out.find(header, pos)
        while at > 0 and out[at - 1 : at] not in (b"\n", b"\0"):
            at = out.find(header, at + 1)
        if at < 0:
            return {}
        starts.append((sha, at))
        pos = at + len(header)
    ends = [at for _, at in starts[1:]] + [len(out)]
    for (sha, at), end in zip(starts, ends, strict=True):
        try:
            found[sha] = parse_diff_tree(out[at + len(sha) + 1 : end])
        except (ValueError, IndexError):
            continue  # read again on its own, where a failure is reported
    return found


def diff_fix(
    git: GitSession, parent: str, sha: str, algorithm: str = DIFF_ALGORITHM
) -> list[FileDiff]:
    """The files ``sha`` changes against ``parent`` (``git diff-tree -M -U0``), parsed."""
    done = git.run(*_diff_tree_args(algorithm), parent, sha, "--")
    if done.returncode != 0:
        raise SzzGitError(f"git diff-tree {parent[:12]} {sha[:12]} failed: {said(done.stderr)}")
    try:
        return parse_diff_tree(done.stdout)
    except (ValueError, IndexError) as exc:
        raise SzzGitError(f"unreadable git diff-tree output for {sha[:12]}: {exc}") from exc


def blobs_to_read(diff: FileDiff) -> list[str]:
    """The blobs :func:`account_file` reads for ``diff`` (a code file's sides with changes)."""
    if diff.submodule or diff.binary or file_kind(diff.path) != CODE:
        return []
    wanted = []
    if diff.old_blob is not None and any(h.deleted for h in diff.hunks):
        wanted.append(diff.old_blob)
    if diff.new_blob is not None and any(h.added for h in diff.hunks):
        wanted.append(diff.new_blob)
    return wanted


def account_file(git: GitSession, diff: FileDiff) -> tuple[FileChangeRow, list[int]]:
    """The file's line counts, and the old line numbers of its deleted code lines."""
    old_path = diff.old_path if diff.old_path != diff.path else None
    kind = file_kind(diff.path)
    if diff.submodule:
        kind = "submodule"
    elif kind == CODE and diff.binary:
        kind = "binary"
    added = sum(len(h.added) for h in diff.hunks)
    deleted = sum(len(h.deleted) for h in diff.hunks)
    if kind != CODE:  # nothing in a non-code file is code: all of it counts as cosmetic
        return FileChangeRow(diff.path, old_path, kind, 0, 0, added, deleted), []
    old_cosmetic = new_cosmetic = frozenset[int]()
    if deleted and diff.old_blob is not None:
        last = max(h.old_start + len(h.deleted) - 1 for h in diff.hunks if h.deleted)
        old_cosmetic = cosmetic_lines(lossy_text(git.blob(diff.old_blob)), diff.old_path, last)
    if added and diff.new_blob is not None:
        last = max(h.new_start + len(h.added) - 1 for h in diff.hunks if h.added)
        new_cosmetic = cosmetic_lines(lossy_text(git.blob(diff.new_blob)), diff.path, last)
    to_blame: list[int] = []
    code_added = code_deleted = cosmetic_added = cosmetic_deleted = version = text = 0
    markup = is_markup(diff.path)
    for hunk in diff.hunks:
        lines = account_hunk(hunk, old_cosmetic, new_cosmetic, markup)
        to_blame.extend(lines.blame)
        code_added += lines.code_added
        code_deleted += lines.code_deleted
        cosmetic_added += lines.cosmetic_added
        cosmetic_deleted += lines.cosmetic_deleted
        version += lines.version_lines
        text += lines.text_lines
    row = FileChangeRow(
        diff.path,
        old_path,
        kind,
        code_added,
        code_deleted,
        cosmetic_added,
        cosmetic_deleted,
        version,
        text,
    )
    return row, to_blame


def blame_lines(git: GitSession, parent: str, path: str, lines: Sequence[int]) -> dict[int, str]:
    """One ``git blame`` of ``path`` at ``parent`` over all of ``lines``: {line: commit}."""
    return blame_lines_since(git, parent, path, lines, None)[0]


def blame_lines_since(
    git: GitSession, parent: str, path: str, lines: Sequence[int], since: int | None
) -> tuple[dict[int, str], dict[str, int]]:
    """:func:`blame_lines`, walking back only to commits with a committer time (epoch seconds)
    of at least ``since`` (None: to the root); with the committer time of each commit named.
    ``path`` is git's argument (:attr:`FileDiff.old_path_arg`).

    git's ``--since`` stops the walk at the first commit older than ``since`` on each line's
    path and names that commit (a boundary): a line named with a commit older than ``since``
    was last changed there or earlier."""
    args = ["blame", "--porcelain", "-w", *git.ignore_args]
    if since is not None:
        args.append(f"--since=@{since}")
    for first, last in ranges(lines):
        args += ["-L", f"{first},{last}"]
    done = git.run(*args, parent, "--", path)
    if done.returncode != 0:
        shown = lossy_text(os.fsencode(path))
        raise SzzGitError(f"git blame {shown} at {parent[:12]} failed: {said(done.stderr)}")
    wanted = set(lines)
    blamed, times = parse_blame_times(done.stdout)
    return {n: sha for n, sha in blamed.items() if n in wanted}, times


# --------------------------------------------------------------------------- candidates


@dataclass
class _CommitFacts:
    committer_epoch: float
    is_merge: bool
    files: int = 0
    lines: int = 0

    @property
    def is_bulk(self) -> bool:
        return self.files >= BULK_MIN_FILES or self.lines >= BULK_MIN_LINES


def commit_facts(git: GitSession, shas: Sequence[str]) -> dict[str, _CommitFacts]:
    """Committer time, merge flag and size of ``shas``: one ``git log --no-walk`` for all."""
    if not shas:
        return {}
    done = git_command(
        git.path,
        "log",
        "--no-walk=unsorted",
        "--stdin",
        "--numstat",
        "--no-renames",
        "--format=%x1e%H %ct %P",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        input="\n".join(shas).encode() + b"\n",
        env=git.env,
    )
    facts: dict[str, _CommitFacts] = {}
    current: _CommitFacts | None = None
    for line in done.stdout.split(b"\n"):
        if line.startswith(b"\x1e"):
            sha, epoch, *parents = line[1:].decode().split()
            current = facts[sha] = _CommitFacts(float(epoch), len(parents) > 1)
        elif current is not None and line.count(b"\t") >= 2:
            added, deleted, _ = line.split(b"\t", 2)
            current.files += 1
            if added != b"-":
                current.lines += int(added) + int(deleted)
    return facts


def read_ignore_revs(source: GitSource) -> list[str]:
    """Full shas listed in ``.git-blame-ignore-revs`` at any branch or tag tip (or HEAD)."""
    refs = ("refs/heads", "refs/remotes", "refs/tags")
    tips = git_command(source.path, "for-each-ref", "--format=%(objectname)", *refs).stdout.split()
    head = git_command(source.path, "rev-parse", "--verify", "-q", "HEAD").stdout.split()
    queries = "".join(f"{t.decode()}:{IGNORE_REVS_FILE}\n" for t in dict.fromkeys(head + tips))
    if not queries:
        return []
    done = git_command(source.path, "cat-file", "--batch", input=queries.encode())
    listed: dict[str, None] = {}
    for _, text in batch_objects(done.stdout):  # "<query> missing": no such file at that tip
        for raw in text.decode("utf-8", "replace").splitlines():
            word = raw.split("#", 1)[0].strip()
            if re.fullmatch(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}", word):
                listed[word.lower()] = None
    return list(listed)


class PrivateCommitGraph:
    """A commit-graph of every commit reachable from the refs of ``source``, with changed-path
    Bloom filters, written in the background under ``folder`` (not into the repository).

    :attr:`env` makes a git process read it: the folder is an object directory of its own
    whose one alternate is the repository's, so git finds every object there and the graph
    here (a process started before the graph is written reads the commits as it would without
    one). A blame's walk asks of each commit whether it touches the file; the filter answers
    "no" for most without reading two trees (bench/README.md has the figures). Commits are
    content-addressed: the graph cannot disagree with the repository about one. git writes
    none, and says so only in a warning, where a graph cannot be used (a shallow clone,
    replaced commits, ``core.commitGraph`` off): :meth:`written` looks for the file. None is
    written for a repository with alternates of its own."""

    def __init__(self, source: GitSource, folder: Path) -> None:
        self.env: dict[str, str] | None = None
        self._writer: subprocess.Popen[bytes] | None = None
        self._info = folder / "objects" / "info"
        found = git_command(source.path, "rev-parse", "--git-path", "objects")
        objects = os.fsencode((source.path / os.fsdecode(found.stdout.strip())).resolve())
        if found.returncode != 0 or not os.path.isdir(objects) or b"\n" in objects:
            return
        # git follows alternates six levels deep, and this folder adds one: a repository that
        # already borrows objects (`clone --shared`, `--reference`) goes without a graph rather
        # than lose the deepest of a chain at git's limit (the blames do not wait for the graph;
        # one level or six, the check does not count them)
        if os.path.lexists(os.path.join(objects, b"info", b"alternates")):
            return
        self._info.mkdir(parents=True, exist_ok=True)
        (self._info / "alternates").write_bytes(objects + b"\n")  # the path's own bytes
        self.env = {"GIT_OBJECT_DIRECTORY": str(self._info.parent)}
        self._writer = subprocess.Popen(
            git_argv(source.path, "commit-graph", "write", "--reachable", "--changed-paths"),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=git_env(self.env),
        )

    def written(self) -> bool:
        """Wait for the graph; whether git wrote one (the load's ``commit_graph`` detail). SZZ does
        not wait for it: its blames start at once, and those started before the graph is
        written, or when git writes none, read the commits as they would without one."""
        if self._writer is None or self._writer.wait() != 0:
            return False
        return (self._info / "commit-graph").is_file() or (self._info / "commit-graphs").is_dir()

    def close(self) -> None:
        if self._writer is not None and self._writer.poll() is None:
            self._writer.kill()
            self._writer.wait()


def shallow_commits(source: GitSource) -> frozenset[str]:
    """The commits at the cut of a shallow clone (``$GIT_DIR/shallow``); empty if not shallow."""
    done = git_command(source.path, "rev-parse", "--git-path", "shallow")
    path = Path(os.fsdecode(done.stdout.strip()))
    path = path if path.is_absolute() else source.path / path
    if done.returncode != 0 or not path.is_file():
        return frozenset()
    return frozenset(path.read_text().split())


# --------------------------------------------------------------------------- the load


@dataclass
class _Rows:
    changes: list[tuple[Any, ...]] = field(default_factory=list)
    inducing: list[tuple[Any, ...]] = field(default_factory=list)


#: The varying columns of a ``fix_changes`` row, in tuple order (sql/git/insert_fix_changes.sql;
#: ``repo``, ``szz_version`` and ``load_id`` are bound once per batch).
CHANGE_COLUMNS = (
    "fix_sha",
    "path",
    "old_path",
    "kind",
    "is_code",
    "code_lines_added",
    "code_lines_deleted",
    "cosmetic_lines_added",
    "cosmetic_lines_deleted",
    "version_lines",
    "text_lines",
)
#: The varying columns of a ``fix_inducing`` row (sql/git/insert_fix_inducing.sql).
INDUCING_COLUMNS = (
    "fix_sha",
    "introducing_sha",
    "path",
    "lines",
    "method",
    "gap_days",
    "introducing_is_merge",
    "introducing_is_bulk",
)


def _insert(con: duckdb.DuckDBPyConnection, repo: str, rows: _Rows, run: LoadRun) -> None:
    """One batch of fixes, with the load's counts so far in the same transaction: a load
    interrupted later says what it stored. Each table's rows go as one JSON document of
    column lists (:func:`~agent_reflection.store.db.columns_json`), as the git load's do."""
    shared = {"repo": repo, "szz_version": SZZ_VERSION, "load_id": run.load_id}
    with transaction(con):  # a fix's two tables land together: a fix with rows is done
        for sql, batch, names in (
            ("git/insert_fix_changes.sql", rows.changes, CHANGE_COLUMNS),
            ("git/insert_fix_inducing.sql", rows.inducing, INDUCING_COLUMNS),
        ):
            if batch:
                con.execute(read_sql(sql), {**shared, "batch": columns_json(batch, names)})
        run.checkpoint()


class _Workers:
    """One :class:`GitSession` per thread, closed together."""

    def __init__(
        self,
        path: Path,
        ignore_revs: Path | None,
        shallow: frozenset[str],
        horizon_days: float | None,
        history: FirstParents | None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.path, self.ignore_revs, self.shallow = path, ignore_revs, shallow
        self.horizon_days, self.history, self.env = horizon_days, history, env
        self._local = threading.local()
        self._all: list[GitSession] = []
        self._lock = threading.Lock()

    def git(self) -> GitSession:
        found: GitSession | None = getattr(self._local, "git", None)
        if found is None:
            found = self._local.git = GitSession(
                self.path, self.ignore_revs, self.shallow, self.horizon_days, self.history, self.env
            )
            with self._lock:
                self._all.append(found)
        return found

    def close(self) -> None:
        for g in self._all:
            g.close()


def _batches(items: Sequence[FixRef], size: int) -> Iterator[Sequence[FixRef]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def blame_horizon_days(prereg: Preregistration) -> int | None:
    """How many days before a fix its blames walk: the widest registered window in which an
    analysis counts a commit SZZ blames ([p2] window_days; [p1] loop_window_days, the session
    outcomes; [agent_vs_human] follow_up_days). None (the whole history) when an analysis that
    reads the blame dates commits by author time: the walk is bounded by committer time, and an
    author time says nothing about where a commit sits in the history."""
    if {prereg.p2.time_column, prereg.agent_vs_human.time_column} != {"committer_time"}:
        return None
    return max(
        prereg.p2.window_days,
        prereg.p1.loop_window_days,
        prereg.agent_vs_human.follow_up_days,
    )


def load_fix_inducing(
    con: duckdb.DuckDBPyConnection,
    repo_path: str | os.PathLike[str] | GitSource,
    *,
    name: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    workers: int | None = None,
    progress: ProgressCallback | None = None,
    batch_fixes: int = BATCH_FIXES,
    prereg: Preregistration | None = None,
    full_depth: bool = False,
) -> LoadSummary:
    """Fill ``fix_changes`` and ``fix_inducing`` for the fix-like commits of a loaded repo.

    ``repo_path``/``name``/``cache_dir`` as for ``load_git_history`` (run it first: the fixes
    are read from ``commits``). Counts, in a ``loads`` row with ``source = 'git-szz'``: read =
    fix-like non-merge commits, loaded = fixes attributed now, already present = fixes
    attributed by an earlier run, rejected = fixes git could not read (retried next time).

    Blames stop at :func:`blame_horizon_days` of ``prereg`` (None: the effective
    ``preregistration.toml``); ``full_depth`` walks every blame to the root instead (what SZZ
    did before SZZ_VERSION 4: the same candidates inside the horizon, slower). ``workers``:
    threads running git (None: :func:`default_workers`).
    """
    with pandas_deferred():  # DuckDB's parameter binding would import pandas (0.3 s)
        return _load_fix_inducing(
            con, repo_path, name, cache_dir, workers, progress, batch_fixes, prereg, full_depth
        )


def _load_fix_inducing(
    con: duckdb.DuckDBPyConnection,
    repo_path: str | os.PathLike[str] | GitSource,
    name: str | None,
    cache_dir: str | os.PathLike[str] | None,
    workers: int | None,
    progress: ProgressCallback | None,
    batch_fixes: int,
    prereg: Preregistration | None,
    full_depth: bool,
) -> LoadSummary:
    source = open_repo(repo_path, name=name, cache_dir=cache_dir)
    horizon: int | None = None
    if not full_depth:
        if prereg is None:
            from agent_reflection.experiments.registration import load_preregistration

            prereg = load_preregistration()
        horizon = blame_horizon_days(prereg)
    workers = default_workers() if workers is None else workers
    loaded = con.execute(read_sql("git/szz_repo_loaded.sql"), [source.name]).fetchone()
    commits = loaded[0] if loaded else 0
    if not commits:
        raise GitLoadError(
            f"no commits of repo {source.name!r} in the database: SZZ attributes the fixes the "
            f"git load stored. Run `reflect load git {source.origin} --szz` (with the same "
            "--name, if one was used)"
        )
    with begin_load(con, "git-szz", source.origin) as run:
        fixes = [
            FixRef(sha, tuple(parents), float(epoch), diff_only=bool(diff_only))
            for sha, parents, epoch, diff_only in con.execute(
                read_sql("git/szz_fixes.sql"), [source.name]
            ).fetchall()
        ]
        done = {
            r[0] for r in con.execute(read_sql("git/szz_done.sql"), [source.name] * 2).fetchall()
        }
        todo = [f for f in fixes if f.sha not in done]
        run.read = len(fixes)
        run.already_present = len(fixes) - len(todo)
        ignored = read_ignore_revs(source)
        shallow = shallow_commits(source)
        methods: Counter[str] = Counter()
        run.detail.update(
            repo=source.name,
            szz_version=SZZ_VERSION,
            ignore_revs=len(ignored),
            bulk_min_files=BULK_MIN_FILES,
            bulk_min_lines=BULK_MIN_LINES,
            shallow=bool(shallow),
            horizon_days=horizon,
            workers=workers,
        )
        if prereg is not None:
            run.detail.update(preregistration=prereg.path, preregistration_sha256=prereg.sha256)
        facts: dict[str, _CommitFacts] = {}
        with tempfile.TemporaryDirectory(prefix="reflect-szz-") as tmp, ExitStack() as cleanup:
            ignore_file = None
            if ignored:
                ignore_file = Path(tmp) / "ignore-revs"
                ignore_file.write_text("\n".join(ignored) + "\n")
            graph = None
            if todo and len(todo) * COMMITS_PER_FIX_FOR_A_GRAPH >= commits:
                graph = PrivateCommitGraph(source, Path(tmp))
                cleanup.callback(graph.close)  # closed after the workers' git, before rmtree
            history = None
            if horizon is not None and todo:
                oldest = math.floor(min(f.committer_epoch for f in todo) - horizon * 86400)
                history = first_parents(con, source.name, oldest, shallow)
            env = None if graph is None else graph.env
            pool_git = _Workers(source.path, ignore_file, shallow, horizon, history, env)
            cleanup.callback(pool_git.close)
            batches = list(_batches(todo, batch_fixes))
            diffs = diff_fixes(pool_git.git(), batches[0]) if batches else {}
            with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
                for at, batch in enumerate(batches):
                    read = [diffs.get(f.sha) for f in batch]
                    work = pool.map(lambda f, d: attribute_fix(pool_git.git(), f, d), batch, read)
                    if at + 1 < len(batches):  # the next batch's diffs while these run
                        diffs = diff_fixes(pool_git.git(), batches[at + 1])
                    results = list(work)
                    blamed = {sha for r in results for sha, _, _ in r.blamed if sha}
                    wanted = blamed - facts.keys()
                    facts.update(commit_facts(pool_git.git(), sorted(wanted)))
                    rows = _Rows()
                    for result in results:
                        _rows_of(result, source.name, facts, rows, run, methods)
                    _insert(con, source.name, rows, run)
                    if progress is not None:
                        progress(len(batch))
            run.detail["commit_graph"] = graph is not None and graph.written()
        run.detail["blame_calls"] = methods.pop("blame_calls", 0)
        run.detail["blames_skipped"] = methods.pop("blames_skipped", 0)
        run.detail["methods"] = dict(sorted(methods.items()))
    return run.summary()


def _rows_of(
    result: FixResult,
    repo: str,
    facts: dict[str, _CommitFacts],
    rows: _Rows,
    run: LoadRun,
    methods: Counter[str],
) -> None:
    fix = result.fix
    if result.error is not None:
        run.reject(
            f"{repo}@{fix.sha}",
            None,
            f"SZZ could not read this fix: {result.error}. Fetch the missing objects (a full "
            "clone, not shallow or partial), then load again with --szz",
        )
        return
    run.loaded += 1
    if fix.diff_only:
        methods["revert-diff"] += 1
        return _change_rows(result, rows)
    methods[result.method] += 1
    methods["blame_calls"] += result.blame_calls
    methods["blames_skipped"] += result.blames_skipped
    _change_rows(result, rows)
    for path, lines in result.before_horizon:
        rows.inducing.append((fix.sha, None, path, lines, METHOD_BEFORE_HORIZON, None, None, None))
    if not result.blamed:
        if not result.before_horizon:
            rows.inducing.append((fix.sha, None, None, 0, result.method, None, None, None))
        return
    for sha, path, lines in result.blamed:
        if sha is None:
            rows.inducing.append((fix.sha, None, path, lines, METHOD_SHALLOW, None, None, None))
            continue
        known = facts.get(sha)
        gap = None if known is None else (fix.committer_epoch - known.committer_epoch) / 86400
        rows.inducing.append(
            (
                fix.sha,
                sha,
                path,
                lines,
                METHOD_BLAME,
                gap,
                None if known is None else known.is_merge,
                None if known is None else known.is_bulk,
            )
        )


def _change_rows(result: FixResult, rows: _Rows) -> None:
    for f in result.files:
        rows.changes.append(
            (
                result.fix.sha,
                f.path,
                f.old_path,
                f.kind,
                f.kind == CODE,
                f.code_added,
                f.code_deleted,
                f.cosmetic_added,
                f.cosmetic_deleted,
                f.version_lines,
                f.text_lines,
            )
        )
