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

Typical cost: ``git rev-parse`` + ``git status`` (plus ``git for-each-ref`` without an upstream,
and one ``git diff`` when there are commits to count). Every call is bounded by a timeout;
anything that fails marks the result degraded instead of raising.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field

GIT_TIMEOUT_SECONDS = 5.0
BASE_CANDIDATES: tuple[str, ...] = (
    "refs/remotes/origin/HEAD",
    "refs/heads/main",
    "refs/heads/master",
)
_GIT_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",  # never take index.lock away from the agent's own git commands
    "LC_ALL": "C",
}


class GitFailed(Exception):
    """git is missing, timed out, or exited non-zero."""


@dataclass(frozen=True)
class GitState:
    """The repository as the hook sees it; ``problems`` non-empty means degraded."""

    root: str | None
    branch: str | None = None
    head_oid: str | None = None
    files: tuple[str, ...] = ()
    problems: tuple[str, ...] = field(default=())

    @property
    def degraded(self) -> bool:
        return bool(self.problems)


def git(args: Sequence[str], cwd: str, timeout: float = GIT_TIMEOUT_SECONDS) -> bytes:
    """Run ``git args`` in ``cwd``; stdout bytes, or :class:`GitFailed` with the reason."""
    env = {**os.environ, **_GIT_ENV}
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
            capture_output=True, timeout=timeout, check=False,
        )  # fmt: skip
    except FileNotFoundError:
        raise GitFailed("git is not installed or not on PATH") from None
    except subprocess.TimeoutExpired:
        raise GitFailed(f"`git {args[0]}` took longer than {timeout:g}s") from None
    except OSError as exc:
        raise GitFailed(f"cannot run git: {exc}") from None
    if done.returncode != 0:
        err = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitFailed(f"`git {args[0]}` failed: {err[0] if err else done.returncode}")
    return done.stdout


def read_git_state(cwd: str) -> GitState:
    """Best effort: the root, branch and changed files of the repository containing ``cwd``."""
    try:
        root = os.fsdecode(git(["rev-parse", "--show-toplevel"], cwd)).rstrip("\n")
    except GitFailed as exc:
        return GitState(root=None, problems=(f"not a git work tree, or git unusable: {exc}",))
    try:
        status = parse_status_v2(
            git(["status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all"], root)
        )
    except GitFailed as exc:
        return GitState(root=root, problems=(str(exc),))
    files = set(status.files)
    problems: list[str] = []
    try:
        files.update(_committed_files(root, status))
    except GitFailed as exc:
        problems.append(f"committed changes not counted: {exc}")
    return GitState(root, status.branch, status.oid, tuple(sorted(files)), tuple(problems))


@dataclass(frozen=True)
class StatusV2:
    branch: str | None
    oid: str | None
    upstream: str | None
    ahead: int
    files: tuple[str, ...]


def parse_status_v2(raw: bytes) -> StatusV2:
    """Parse ``git status --porcelain=v2 --branch -z`` output (paths relative to the root)."""
    branch = oid = upstream = None
    ahead = 0
    files: list[str] = []
    tokens = raw.decode("utf-8", "replace").split("\0")
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
                ahead = _int(value.split(" ")[0].lstrip("+"))
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


def _int(text: str) -> int:
    return int(text) if text.isdigit() else 0


def _committed_files(root: str, status: StatusV2) -> list[str]:
    if status.oid is None:
        return []  # no commits yet
    if status.upstream is not None:
        if status.ahead == 0:
            return []
        base = status.upstream
    else:
        refs = git(["for-each-ref", "--format=%(refname)", *BASE_CANDIDATES], root).decode(
            "utf-8", "replace"
        )
        own = f"refs/heads/{status.branch}" if status.branch else None
        found = [r for r in refs.split("\n") if r and r != own]
        if not found:
            return []
        # for-each-ref sorts by name; keep the candidates' order of preference
        base = min(found, key=lambda r: BASE_CANDIDATES.index(r) if r in BASE_CANDIDATES else 99)
    out = git(["diff", "--name-only", "-z", "--no-renames", f"{base}...HEAD", "--"], root)
    return [p for p in out.decode("utf-8", "replace").split("\0") if p]
