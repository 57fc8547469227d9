"""The Claude Code ``Stop`` hook: one reflection.v1 sidecar per stop, never disturbing the session.

Run as ``reflect-stop-hook`` (or ``python -m agent_reflection.hooks.stop``) with the Stop event's
JSON on stdin. Contract (docs/capture.md has the long form):

- ``REFLECTION_MODE`` unset, ``off`` or unknown → exit at once, nothing read or written.
- ``stop_hook_active: true`` → exit at once, unless an "ask" is pending for this session.
- A ``<session>.lock`` sentinel in the output folder guards against re-fire; it is removed on
  every exit path (a lock older than two minutes is a killed run's and is taken over).
- Mechanical fields from git and the risk floor; the self-report from ``$REFLECTION_INPUT``; any
  missing input or failed step sets ``provenance.degraded``.
- The sidecar is written atomically as ``<session>-<UTC stamp>.reflection.json``.
- Exit status is always 0 and stdout is always empty — except in the optional ask mode
  (``REFLECTION_ASK=1``), which prints one ``{"decision": "block", "reason": ...}`` at most once
  per stop cycle. Diagnostics go to stderr (Claude Code shows them in debug mode only).

Imports: the standard library and the package's stdlib-only modules, nothing else.
"""

from __future__ import annotations

import os
import sys

from agent_reflection.hooks._entry import read_event, run_hook, warn

TYPE_CHECKING = False  # not imported from typing: the no-op path must not pay for typing
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import NoReturn

CAPTURE_MODES = ("solo", "orchestrated")
PROG = "reflect-stop-hook"
USAGE = f"""usage: {PROG} [--mode solo|orchestrated] [--ask]

Claude Code Stop hook: reads the Stop event JSON on stdin and writes a reflection.v1 sidecar.
Does nothing unless REFLECTION_MODE is solo or orchestrated (--mode sets it when unset).
--ask turns on ask mode (as REFLECTION_ASK=1): a stop without a usable self-report asks once.
Environment: REFLECTION_MODE, REFLECTION_DIR, REFLECTION_INPUT, REFLECTION_TASK_REF,
REFLECTION_AGENT, REFLECTION_RISK_TABLE, REFLECTION_ASK. See docs/capture.md.
"""


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Console entry point. Ends the process with status 0; stdout carries only the ask mode's
    block JSON."""
    run_hook(PROG, _stop, argv, fault="internal error, nothing written: ")


def _stop(args: list[str]) -> str | None:
    if "-h" in args or "--help" in args:
        sys.stderr.write(USAGE)
        return None
    ask = "--ask" in args
    mode, problems = capture_mode([a for a in args if a != "--ask"])
    # Off is fail-closed, and fast: nothing else is imported or read.
    out = None if mode == "off" else run(mode, problems, ask=ask)
    for problem in problems:
        warn(PROG, problem)
    return out


def capture_mode(args: list[str]) -> tuple[str, list[str]]:
    """The capture mode a hook's ``args`` and environment ask for (``REFLECTION_MODE``, else
    ``--mode``), and the problems with either (SessionStart uses it too)."""
    default_mode, problems = _parse_args(args)
    mode, note = parse_mode(os.environ.get("REFLECTION_MODE", default_mode))
    if note:
        problems.append(note)
    return mode, problems


def parse_mode(raw: str | None) -> tuple[str, str | None]:
    """``REFLECTION_MODE`` (else the hook's ``--mode``) → (mode, note). Unset, empty, ``off``
    or unknown → ``off``: a globally registered hook is inert until a session opts in."""
    if raw is None:
        return "off", None
    value = raw.strip().lower()
    if value in CAPTURE_MODES or value in ("", "off"):
        return (value or "off"), None
    return "off", f"REFLECTION_MODE={raw!r} is not off, solo or orchestrated; treated as off"


def _parse_args(args: list[str]) -> tuple[str | None, list[str]]:
    mode: str | None = None
    problems: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--mode" and i + 1 < len(args):
            mode = args[i + 1]
            i += 2
            continue
        if arg.startswith("--mode="):
            mode = arg.partition("=")[2]
        else:
            problems.append(f"ignored unknown argument {arg!r}")
        i += 1
    return mode, problems


def run(mode: str, problems: list[str], *, ask: bool = False) -> str | None:
    """One stop in capture ``mode``; the ask mode's stdout, if any (``problems`` gets what
    went wrong). ``ask``: the command's ``--ask`` (beats ``REFLECTION_ASK``, as every command
    line beats the environment). ``stop_hook_active`` returns before git or the disk is
    touched."""
    payload, payload_problem = read_event(PROG)
    if payload_problem:
        problems.append(f"{payload_problem}; captured without the Stop event")
    from agent_reflection import config

    ask = config.resolve(config.ASK, cli="1" if ask else None)[0]
    if payload.get("stop_hook_active") is True and not ask:
        return None
    from agent_reflection.hooks.capture import capture  # the real work, imported only now

    return capture(mode, ask, payload, problems)


if __name__ == "__main__":
    main()
