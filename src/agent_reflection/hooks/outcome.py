"""What one Stop hook run did (shared by the entry point and the capture)."""

from __future__ import annotations


class Outcome:
    """``action``: off, active, outside (no work tree, no REFLECTION_DIR), locked, asked,
    written or failed.

    A plain slotted class, not a NamedTuple or dataclass: importing ``typing`` or
    ``dataclasses`` would cost every agent stop more than the whole capture's own work.
    """

    __slots__ = ("action", "problems", "sidecar", "stdout")

    def __init__(
        self,
        action: str,
        sidecar: str | None = None,
        stdout: str = "",
        problems: tuple[str, ...] = (),
    ) -> None:
        self.action = action
        self.sidecar = sidecar
        self.stdout = stdout
        self.problems = problems

    def __repr__(self) -> str:
        return f"Outcome({self.action!r}, sidecar={self.sidecar!r}, problems={self.problems!r})"
