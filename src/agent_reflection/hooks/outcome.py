"""What one Stop hook run did (shared by the entry point and the capture)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Outcome:
    """``action``: off, active, locked, asked, written or failed."""

    action: str
    sidecar: str | None = None
    stdout: str = ""
    problems: tuple[str, ...] = ()
