"""The one entry wrapper every Claude Code hook runs under: never fail the session.

:func:`run_hook` calls a hook's body with its arguments, writes what the body returns to the
real stdout (the only thing Claude Code parses), and turns every fault into one line on stderr
and exit status 0. While the body runs, ``sys.stdout`` is stderr, so nothing printed by accident
can reach Claude Code's JSON parser. :func:`read_stdin` reads the event, bounded;
:func:`read_event` parses it too.

Import-free (``sys`` only; ``json`` inside :func:`read_event`): every agent stop or tool call
pays for what a hook imports.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not imported from typing: the hooks must not pay for typing at start
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

#: Most bytes of stdin read: an event is a few kB; /dev/zero never ends.
MAX_STDIN_BYTES = 32 << 20


def warn(prog: str, message: str) -> None:
    """``prog: message`` on stderr (Claude Code shows it in debug mode only); never raises."""
    try:
        sys.stderr.write(f"{prog}: {message}\n")
        sys.stderr.flush()
    except Exception:  # a closed or broken stderr must not fail the hook
        pass


def read_stdin(prog: str) -> str:
    """The event text, at most :data:`MAX_STDIN_BYTES`; ``""`` and a warning when there is none
    to read: a terminal (a hook run by hand is not left waiting), a read error, or more than
    that (not an event)."""
    try:
        if sys.stdin is None or sys.stdin.isatty():
            warn(prog, "stdin is a terminal (or closed), not the event JSON; ignored")
            return ""
        raw = sys.stdin.buffer.read(MAX_STDIN_BYTES + 1)
    except (OSError, ValueError) as exc:
        warn(prog, f"cannot read stdin: {exc}; ignored")
        return ""
    if len(raw) > MAX_STDIN_BYTES:
        warn(prog, f"stdin is larger than {MAX_STDIN_BYTES} bytes; ignored")
        return ""
    return raw.decode("utf-8", "replace")


def read_event(prog: str) -> tuple[dict[str, Any], str | None]:
    """The event on stdin (:func:`read_stdin`) as a JSON object: ``(event, None)``, or ``({},
    what was wrong)``. ``json`` is imported only here."""
    raw = read_stdin(prog)
    if not raw.strip():
        return {}, "no event JSON on stdin"
    import json

    try:
        event = json.loads(raw)
    except ValueError as exc:
        return {}, f"stdin is not JSON ({exc})"
    except RecursionError:
        return {}, "stdin JSON is nested too deeply"
    if not isinstance(event, dict):
        return {}, "stdin JSON is not an object"
    return event, None


def run_hook(
    prog: str,
    body: Callable[[list[str]], str | None],
    argv: Sequence[str] | None = None,
    *,
    fault: str = "",
) -> int:
    """Run ``body(args)`` (args: ``argv``, default ``sys.argv[1:]``) as a hook. Always 0.

    A non-empty string the body returns goes to stdout as is; any exception becomes
    ``prog: <fault><Type>: <message>`` on stderr (``fault`` says what the failure means,
    e.g. "internal error, nothing written: ").
    """
    real_stdout = sys.stdout
    sys.stdout = sys.stderr
    try:
        out = body(list(sys.argv[1:] if argv is None else argv))
        if out:
            real_stdout.write(out)
            real_stdout.flush()
    except BaseException as exc:  # a hook must never fail the session
        warn(prog, f"{fault}{type(exc).__name__}: {exc}")
    finally:
        sys.stdout = real_stdout
    return 0
