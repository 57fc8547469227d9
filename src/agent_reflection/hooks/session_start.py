"""``reflect-session-start-hook``: the Claude Code ``SessionStart`` hook.

Claude Code sends ``session_id``, ``source`` (startup, resume, clear, compact) and ``cwd``. The
hook records the session's starting HEAD, branch and work tree in ``<key>.start.json`` beside
the in-loop hook's state (:mod:`agent_reflection.hooks.paths`); the Stop hook reads it
for reflection.v1's ``git.head_start``, and so the commits made during the session.

- ``REFLECTION_MODE`` off (``--mode`` sets it when unset, as for the Stop hook) → nothing.
- A record already kept for this session and work tree is left as it is: a resumed or
  compacted session keeps the HEAD it first started from.
- Outside a git work tree, or without git: nothing written (diagnostic on stderr).
- Writes only the state file; stdout stays empty; exit status 0 on every fault.

Stdlib only; one ``git rev-parse`` (two more only before the first commit).
"""

from __future__ import annotations

import os
import sys

from agent_reflection.hooks._entry import read_event, run_hook, warn
from agent_reflection.hooks.stop import capture_mode

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any, NoReturn

PROG = "reflect-session-start-hook"
USAGE = f"""usage: {PROG} [--mode solo|orchestrated]

Claude Code SessionStart hook: records the session's starting git HEAD and branch for the
Stop hook (reflection.v1 git.head_start). Does nothing unless REFLECTION_MODE is solo or
orchestrated (--mode sets it when unset). State folder: REFLECTION_STATE_DIR, else
$XDG_CACHE_HOME/agent-reflection. See docs/capture.md.
"""


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Console entry point. Ends the process with status 0; stdout stays empty."""
    run_hook(PROG, _session_start, argv, fault="internal error, nothing recorded: ")


def _session_start(args: list[str]) -> None:
    if "-h" in args or "--help" in args:
        sys.stderr.write(USAGE)
        return
    mode, problems = capture_mode(args)
    for problem in problems:
        warn(PROG, problem)
    if mode == "off":
        return
    event, wrong = read_event(PROG)  # only once a capture mode is on: json is imported there
    if wrong:
        warn(PROG, f"{wrong}; nothing recorded")
        return
    record_start(event, os.environ)


def record_start(event: Mapping[str, Any], env: Mapping[str, str]) -> str | None:
    """Record the session's start; the state file written, or None (and why, on stderr)."""
    from agent_reflection.hooks.gitstate import GitFailed, git, outside_git_dir
    from agent_reflection.hooks.paths import read_start, write_start

    session_id = event.get("session_id")
    if not isinstance(session_id, str) or not session_id.strip():
        warn(PROG, "the event has no session_id; nothing recorded")
        return None
    cwd = event.get("cwd")
    if not (isinstance(cwd, str) and cwd and os.path.isdir(cwd)):
        cwd = os.getcwd()
    cwd = outside_git_dir(os.path.abspath(cwd))
    try:
        root, head, branch = _git_head(cwd, git)
    except GitFailed as exc:
        warn(PROG, f"not a git work tree, or git unusable ({exc}); nothing recorded")
        return None
    kept = read_start(env, session_id)
    if kept is not None and os.path.realpath(kept["root"]) == os.path.realpath(root):
        return None  # resumed or compacted: the session's first start stands
    source = event.get("source")
    return write_start(
        env,
        session_id,
        {
            "session_id": session_id,
            "root": root,
            "head": head,
            "branch": branch,
            "source": source if isinstance(source, str) else None,
        },
    )


def _git_head(cwd: str, git: Any) -> tuple[str, str | None, str | None]:
    """(work tree root, HEAD commit or None before the first commit, branch or None)."""
    from agent_reflection.hooks.gitstate import GitFailed

    try:
        args = ["rev-parse", "--show-toplevel", "HEAD", "--symbolic-full-name", "HEAD"]
        out = os.fsdecode(git(args, cwd))
        root, head, ref = [*out.split("\n"), "", "", ""][:3]
    except GitFailed as exc:
        if not exc.answered:
            raise
        # No commit yet (HEAD names an unborn branch), or not a work tree at all.
        root = os.fsdecode(git(["rev-parse", "--show-toplevel"], cwd)).strip()
        head = None
        try:
            ref = os.fsdecode(git(["symbolic-ref", "-q", "HEAD"], root)).strip()
        except GitFailed:
            ref = ""
    if not root:
        raise GitFailed("not inside a work tree (a bare repository?)", answered=True)
    branch = ref[len("refs/heads/") :] if ref.startswith("refs/heads/") else None
    return root, head or None, branch


if __name__ == "__main__":
    main()
