"""``reflect hook install --git``: the repository's ``post-commit`` and ``post-rewrite`` hooks.

Each is a small ``sh`` script in the folder git runs hooks from (``git rev-parse --git-path
hooks``: ``core.hooksPath`` when set, else ``.git/hooks``, shared by every work tree of the
repository). A hook already there that is not ours is kept: it is moved to
``<name>.pre-reflection`` and our script runs it first, with the same arguments and stdin,
and exits with its status; ours runs after it and cannot fail the commit (``|| :``). Install is
idempotent (our script is recognised by its marker line and rewritten in place); uninstall
removes ours and moves the kept hook back.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from agent_reflection.errors import ReflectionError
from agent_reflection.hooks.gitstate import GitFailed, git

MARKER = "# agent-reflection: installed by `reflect hook install --git`"
CHAINED_SUFFIX = ".pre-reflection"
#: Hook name -> the arguments our command gets (post-rewrite: normalise rewritten notes).
GIT_HOOKS: dict[str, tuple[str, ...]] = {"post-commit": (), "post-rewrite": ("--rewrite",)}


class GitHookError(ReflectionError):
    """The repository's hooks folder cannot be found or written."""


@dataclass(frozen=True)
class GitHookChange:
    name: str
    path: Path
    action: str  # installed | updated | unchanged | removed | absent
    chained: Path | None  # the pre-existing hook ours runs first, if any


def hooks_dir(repo: Path) -> Path:
    """Where git runs this repository's hooks from (``core.hooksPath`` respected)."""
    try:
        root = os.fsdecode(git(["rev-parse", "--show-toplevel"], str(repo))).strip()
        rel = os.fsdecode(git(["rev-parse", "--git-path", "hooks"], root)).strip()
    except GitFailed as exc:
        raise GitHookError(
            f"{repo}: not inside a git work tree ({exc}); run this in the repository"
        ) from None
    return (Path(root) / os.path.expanduser(rel)).resolve()


def hook_script(name: str, command: str) -> str:
    """The ``sh`` script for hook ``name`` running ``command`` (shell words, already quoted)."""
    # Only sh built-ins besides the two hooks (${0%/*}, not dirname): PATH may lack everything.
    args = " ".join(GIT_HOOKS[name])
    ours = f"{command} {args}".rstrip()
    chained = f'"${{0%/*}}/{name}{CHAINED_SUFFIX}"'
    if name == "post-rewrite":  # the rewritten pairs arrive on stdin: both hooks read them
        return f"""#!/bin/sh
{MARKER}
# Adds the sessions a commit contains to refs/notes/reflection (docs/capture.md). A hook that
# was here before runs first, as {name}{CHAINED_SUFFIX}; ours never fails the command.
input=$(cat)
status=0
if [ -x {chained} ]; then
    printf '%s\\n' "$input" | {chained} "$@" || status=$?
fi
printf '%s\\n' "$input" | {ours} "$@" || :
exit $status
"""
    return f"""#!/bin/sh
{MARKER}
# Adds the sessions a commit contains to refs/notes/reflection (docs/capture.md). A hook that
# was here before runs first, as {name}{CHAINED_SUFFIX}; ours never fails the commit.
status=0
if [ -x {chained} ]; then
    {chained} "$@" || status=$?
fi
{ours} "$@" </dev/null || :
exit $status
"""


def is_ours(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return MARKER.encode() in handle.read(4096)
    except OSError:
        return False


def install_git_hooks(repo: Path, command: str) -> list[GitHookChange]:
    """Install (or refresh) our ``post-commit`` and ``post-rewrite`` hooks in ``repo``."""
    folder = hooks_dir(repo)
    changes = []
    for name in GIT_HOOKS:
        path = folder / name
        chained = folder / f"{name}{CHAINED_SUFFIX}"
        text = hook_script(name, command)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            if path.is_symlink() or (path.exists() and not is_ours(path)):
                if chained.exists() or chained.is_symlink():
                    raise GitHookError(
                        f"{path} is not ours and {chained} exists already; move one of them "
                        "aside and run `reflect hook install --git` again"
                    )
                path.rename(chained)
            if path.exists() and path.read_text("utf-8") == text:
                action = "unchanged"
            else:
                action = "updated" if path.exists() else "installed"
                tmp = path.with_name(f".{name}.{os.getpid()}.tmp")
                tmp.write_text(text, "utf-8")
                tmp.chmod(0o755)
                tmp.replace(path)
        except OSError as exc:
            raise GitHookError(
                f"cannot write {path} ({exc.strerror or exc}); make {folder} writable"
            ) from None
        changes.append(GitHookChange(name, path, action, chained if chained.exists() else None))
    return changes


def uninstall_git_hooks(repo: Path) -> list[GitHookChange]:
    """Remove our hooks from ``repo`` and put back the hooks they chained."""
    folder = hooks_dir(repo)
    changes = []
    for name in GIT_HOOKS:
        path = folder / name
        chained = folder / f"{name}{CHAINED_SUFFIX}"
        if not is_ours(path) or path.is_symlink():
            changes.append(GitHookChange(name, path, "absent", None))
            continue
        try:
            path.unlink()
            restored = None
            if chained.exists() or chained.is_symlink():
                chained.rename(path)
                restored = path
        except OSError as exc:
            raise GitHookError(f"cannot remove {path} ({exc.strerror or exc})") from None
        changes.append(GitHookChange(name, path, "removed", restored))
    return changes


def git_hook_status(repo: Path) -> list[tuple[str, Path, bool]]:
    """(hook name, path, ours?) for each of our hook names."""
    folder = hooks_dir(repo)
    return [(name, folder / name, is_ours(folder / name)) for name in GIT_HOOKS]
