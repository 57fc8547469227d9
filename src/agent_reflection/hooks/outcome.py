"""What one Stop hook run did (shared by the entry point and the capture)."""

from __future__ import annotations

from typing import NamedTuple


class Outcome(NamedTuple):
    """``action``: off, active, locked, asked, written or failed.

    The hook's records are NamedTuples (immutable like frozen dataclasses, far cheaper to
    define at start-up, which every agent stop pays).
    """

    action: str
    sidecar: str | None = None
    stdout: str = ""
    problems: tuple[str, ...] = ()
