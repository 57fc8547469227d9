"""The one entry wrapper every Claude Code hook runs under: never fail the session.

:func:`run_hook` calls a hook's body with its arguments, writes what the body returns to the
real stdout (the only thing Claude Code parses), turns every fault into one line on stderr and
ends the process with exit status 0 (:func:`end_process`). While the body runs, ``sys.stdout``
is stderr, so nothing printed by accident can reach Claude Code's JSON parser.
:func:`read_stdin` reads the event, bounded; :func:`read_event` parses it too.

Import-free (``sys`` only; ``json`` inside :func:`read_event`): every agent stop or tool call
pays for what a hook imports.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not imported from typing: the hooks must not pay for typing at start
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, NoReturn

#: Most bytes of stdin read: an event is a few kB; /dev/zero never ends.
MAX_STDIN_BYTES = 32 << 20
#: Seconds to wait for the end of stdin: Claude Code writes the event and closes it at once; a
#: writer that keeps it open is not sending an event, and the hook's own timeout (10 s for the
#: in-loop hooks) must not be spent waiting.
STDIN_DEADLINE_SECONDS = 5.0


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
        raw = _read_until_deadline(sys.stdin.fileno(), MAX_STDIN_BYTES + 1)
    except (OSError, ValueError) as exc:
        warn(prog, f"cannot read stdin: {exc}; ignored")
        return ""
    if raw is None:
        warn(prog, f"stdin did not end within {STDIN_DEADLINE_SECONDS:g} s; ignored")
        return ""
    if len(raw) > MAX_STDIN_BYTES:
        warn(prog, f"stdin is larger than {MAX_STDIN_BYTES} bytes; ignored")
        return ""
    return raw.decode("utf-8", "replace")


def _read_until_deadline(fd: int, limit: int) -> bytes | None:
    """Up to ``limit`` bytes of ``fd`` until its end; None when it has not ended by
    :data:`STDIN_DEADLINE_SECONDS` (a pipe held open)."""
    import os
    import select
    import time

    deadline = time.monotonic() + STDIN_DEADLINE_SECONDS
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, min(1 << 16, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


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
) -> NoReturn:
    """Run ``body(args)`` (args: ``argv``, default ``sys.argv[1:]``) as a hook, then end the
    process with status 0 (:func:`end_process`): a hook's ``main`` does not return.

    A non-empty string the body returns goes to stdout as is; any exception becomes
    ``prog: <fault><Type>: <message>`` on stderr (``fault`` says what the failure means,
    e.g. "internal error, nothing written: ").
    """
    real_stdout = sys.stdout
    sys.stdout = sys.stderr
    try:
        out = body(list(sys.argv[1:] if argv is None else argv))
        if out:
            real_stdout.write(out)  # a reader gone (a broken pipe) is a fault like any other
            real_stdout.flush()
    except BaseException as exc:  # a hook must never fail the session
        warn(prog, f"{fault}{type(exc).__name__}: {exc}")
    finally:
        sys.stdout = real_stdout
    end_process()


def end_process() -> NoReturn:
    """Exit with status 0 now, skipping the interpreter's teardown: freeing every module and
    object one by one took 4-8 ms of each call here, more than the in-loop hook's own work
    (bench/README.md). Safe because a hook has written and closed all its files by now (the
    sidecars fsync'd too) before its body returns, starts no thread and registers no exit
    handler; only the standard streams may hold text, flushed here (a broken one is ignored:
    the status stays 0)."""
    import os

    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:  # a closed or broken stream: nothing more can reach it
            pass
    os._exit(0)
