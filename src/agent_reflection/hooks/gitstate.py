"""What the session changed, from as few ``git`` calls as possible, each with a time limit.

``files_changed`` is the union, relative to the repository root, of:

- **uncommitted** changes — staged, unstaged and untracked files (untracked folders listed file
  by file; ignored files excluded), both sides of a rename — from one
  ``git status --porcelain=v2 --branch -z --untracked-files=all``;
- **committed** changes — files touched by commits on ``HEAD`` that its *base* lacks, i.e.
  ``git diff --name-only <base>...HEAD`` (diffed from the merge base). The base is the branch's
  upstream when it has one (then the diff runs only when the branch is ahead of it: unpushed
  work); otherwise the first of ``origin/HEAD``, ``main`` and ``master`` that exists and is not
  the current branch. On a base branch with no upstream, only uncommitted changes count.

Typical cost: ``git rev-parse`` (root and existing base candidates) + ``git status``, plus one
``git diff`` when there are commits to count. Every call is bounded by a timeout;
anything that fails marks the result degraded instead of raising.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections import namedtuple

from agent_reflection.names import name_text

TYPE_CHECKING = False  # not imported from typing: the hook must not pay for typing at start
if TYPE_CHECKING:
    from collections.abc import Sequence

GIT_TIMEOUT_SECONDS = 5.0
BASE_CANDIDATES: tuple[str, ...] = (
    "refs/remotes/origin/HEAD",
    "refs/heads/main",
    "refs/heads/master",
)
_BASE_GLOBS = tuple(f"--glob={ref[:-1]}[{ref[-1]}]" for ref in BASE_CANDIDATES)
_GIT_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",  # never take index.lock away from the agent's own git commands
    "LC_ALL": "C",
}


class GitFailed(Exception):
    """git is missing, timed out, or exited non-zero (``answered``: git ran and said no)."""

    def __init__(self, message: str, *, answered: bool = False) -> None:
        super().__init__(message)
        self.answered = answered


class GitState(
    namedtuple(
        "GitState",
        ("root", "branch", "head_oid", "files", "problems", "uncommitted"),
        defaults=(None, None, (), (), ()),
    )
):
    """The repository as the hook sees it; ``problems`` non-empty means degraded.
    ``uncommitted`` is the part of ``files`` that ``git status`` lists (staged, unstaged,
    untracked), as the file system names them: a byte of a name that is not UTF-8 is kept as
    ``os.fsdecode`` keeps it (``files`` holds each name's text,
    :func:`~agent_reflection.names.name_text`)."""

    __slots__ = ()
    root: str | None
    branch: str | None
    head_oid: str | None
    files: tuple[str, ...]
    problems: tuple[str, ...]
    uncommitted: tuple[str, ...]


def git(
    args: Sequence[str], cwd: str, timeout: float = GIT_TIMEOUT_SECONDS, stdin: bytes = b""
) -> bytes:
    """Run ``git -C cwd args`` with ``stdin`` as its input; stdout bytes, or
    :class:`GitFailed` with the reason."""
    env = {**os.environ, **_GIT_ENV}
    argv = ["git", "-C", cwd, *args]
    try:
        code, out, err = _run(argv, env, timeout, stdin)
    except FileNotFoundError:
        raise GitFailed("git is not installed or not on PATH") from None
    except TimeoutError:
        raise GitFailed(f"`git {args[0]}` took longer than {timeout:g}s") from None
    except OSError as exc:
        raise GitFailed(f"cannot run git: {exc}") from None
    if code != 0:
        lines = err.decode("utf-8", "replace").strip().splitlines()
        raise GitFailed(f"`git {args[0]}` failed: {lines[0] if lines else code}", answered=True)
    return out


def _run(
    argv: list[str], env: dict[str, str], timeout: float, stdin: bytes = b""
) -> tuple[int, bytes, bytes]:
    """Run ``argv`` with ``stdin`` as its input (empty: at its end at once); (exit code,
    stdout, stderr). Raises TimeoutError (the child killed)."""
    try:
        done = subprocess.run(
            argv,
            env=env,
            input=stdin,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise TimeoutError(argv) from None
    return done.returncode, done.stdout, done.stderr


def read_git_state(cwd: str) -> GitState:
    """Best effort: the root, branch and changed files of the repository containing ``cwd``."""
    try:
        # One call: the root, and which base candidates exist (a glob that matches nothing
        # prints nothing; the [x] keeps git from anchoring the pattern with "/*").
        lines = os.fsdecode(
            git(["rev-parse", "--show-toplevel", "--symbolic-full-name", *_BASE_GLOBS], cwd)
        ).split("\n")
    except GitFailed as exc:
        problem = f"not a git work tree, or git unusable: {exc}"
        # git could not answer (missing, hung): a ".git" above cwd still marks a work tree.
        root = None if exc.answered else _work_tree_above(cwd)
        return GitState(root=root, problems=(problem,))
    root, bases = lines[0], [line for line in lines[1:] if line]
    try:
        status = parse_status_v2(
            git(["status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all"], root)
        )
    except GitFailed as exc:
        return GitState(root=root, problems=(str(exc),))
    files = {name_text(name) for name in status.files}
    problems: list[str] = []
    try:
        files.update(_committed_files(root, status, bases))
    except GitFailed as exc:
        problems.append(f"committed changes not counted: {exc}")
    branch = None if status.branch is None else name_text(status.branch)
    return GitState(root, branch, status.oid, tuple(sorted(files)), tuple(problems), status.files)


def outside_git_dir(cwd: str) -> str:
    """``cwd``, or the folder holding the ``.git`` that ``cwd`` is inside (git answers there)."""
    parts = cwd.split(os.sep)
    for i, part in enumerate(parts):
        if part.lower() == ".git":
            return os.sep.join(parts[:i]) or os.sep
    return cwd


def _work_tree_above(cwd: str) -> str | None:
    """The nearest folder at or above ``cwd`` holding a ``.git`` entry (file or folder)."""
    folder = os.path.abspath(cwd)
    while True:
        if os.path.lexists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


class StatusV2(namedtuple("StatusV2", ("branch", "oid", "upstream", "ahead", "files"))):
    """What the hook uses of ``git status --porcelain=v2 --branch``."""

    __slots__ = ()
    branch: str | None
    oid: str | None
    upstream: str | None
    ahead: int
    files: tuple[str, ...]


def parse_status_v2(raw: bytes) -> StatusV2:
    """Parse ``git status --porcelain=v2 --branch -z`` output (paths relative to the root, as
    the file system names them: ``os.fsdecode``d, for ``lstat`` and git's arguments)."""
    branch = oid = upstream = None
    ahead = 0
    files: list[str] = []
    tokens = os.fsdecode(raw).split("\0")
    i = 0
    while i < len(tokens):
        entry = tokens[i]
        i += 1
        kind = entry[:1]
        if kind == "#":
            key, _, value = entry[2:].partition(" ")
            if key == "branch.head":
                branch = None if value == "(detached)" else value
            elif key == "branch.oid":
                oid = None if value == "(initial)" else value
            elif key == "branch.upstream":
                upstream = value
            elif key == "branch.ab":
                ahead_text = value.split(" ")[0].lstrip("+")
                ahead = int(ahead_text) if ahead_text.isdigit() else 0
        elif kind == "1":
            files.append(_field(entry, 8))
        elif kind == "2":
            files.append(_field(entry, 9))
            if i < len(tokens):
                files.append(tokens[i])  # the rename's original path
                i += 1
        elif kind == "u":
            files.append(_field(entry, 10))
        elif kind in ("?", "!"):
            files.append(entry[2:])
    return StatusV2(branch, oid, upstream, ahead, tuple(f for f in files if f))


def _field(entry: str, n: int) -> str:
    parts = entry.split(" ", n)
    return parts[n] if len(parts) > n else ""


def _committed_files(root: str, status: StatusV2, bases: list[str]) -> list[str]:
    if status.oid is None:
        return []  # no commits yet
    if status.upstream is not None:
        if status.ahead == 0:
            return []
        base = status.upstream
    else:
        own = f"refs/heads/{status.branch}" if status.branch else None
        found = [ref for ref in bases if ref != own]
        if not found:
            return []
        base = found[0]  # rev-parse prints them in the order of BASE_CANDIDATES
    out = git(["diff", "--name-only", "-z", "--no-renames", f"{base}...HEAD", "--"], root)
    return [p for p in out.decode("utf-8", "replace").split("\0") if p]


# --- the session's git facts (reflection.v1 ``git``) ----------------------------------------


def session_commits(
    root: str, head_start: str, head_stop: str, limit: int
) -> tuple[list[str], bool]:
    """``git rev-list --reverse head_start..head_stop``, oldest first; at most ``limit`` (the
    newest), and whether more were left out. Raises :class:`GitFailed`."""
    if head_start == head_stop:
        return [], False
    out = git(["rev-list", f"--max-count={limit + 1}", f"{head_start}..{head_stop}", "--"], root)
    newest_first = out.decode("ascii", "replace").split()
    return newest_first[:limit][::-1], len(newest_first) > limit


def work_tree_blobs(
    root: str, paths: Sequence[str], oid_length: int = 40
) -> list[tuple[str, str | None]]:
    """(path, blob id) of each changed path as ``git add`` would store it: ``git hash-object``
    of a regular file (with the repository's clean filters), the link text's blob of a symlink,
    None for a path gone from the work tree (deleted). Folders (a nested repository or a
    submodule) are left out: they are not blobs. Raises :class:`GitFailed`."""
    entries: list[tuple[str, str | None]] = []
    files: list[str] = []
    for path in paths:
        try:
            mode = os.lstat(os.path.join(root, path)).st_mode
        except FileNotFoundError:
            entries.append((path, None))
            continue
        except OSError:
            continue
        if stat.S_ISREG(mode):
            files.append(path)
            entries.append((path, ""))  # filled in below, in order
        elif stat.S_ISLNK(mode):
            entries.append((path, _link_blob(os.path.join(root, path), oid_length)))
    if files:
        out = git(["hash-object", "--", *files], root).decode("ascii", "replace").split()
        if len(out) != len(files):
            raise GitFailed(f"`git hash-object` gave {len(out)} ids for {len(files)} files")
        ids = iter(out)
        entries = [(p, next(ids) if blob == "" else blob) for p, blob in entries]
    return entries


def _link_blob(path: str, oid_length: int) -> str | None:
    """The blob id git gives a symlink: the hash of ``blob <n>\\0<link text>``."""
    import hashlib  # symlinks only

    try:
        target = os.fsencode(os.readlink(path))
    except OSError:
        return None
    digest = hashlib.sha256 if oid_length == 64 else hashlib.sha1
    return digest(b"blob %d\0" % len(target) + target).hexdigest()
