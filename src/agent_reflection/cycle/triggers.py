"""When the rules run: at once on a failed sub-session, and every ``batch_threshold`` completions.

Pure bookkeeping, fed one new outcome at a time (as the peer's event-bus callbacks are).
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_reflection.load.runs.records import FAILURE_STATUSES
from agent_reflection.load.runs.store import NewOutcome


@dataclass(frozen=True)
class Check:
    """One rule run to do: ``failure`` (scoped to these sessions' tasks) or ``batch`` (all)."""

    kind: str
    sessions: tuple[NewOutcome, ...] = ()


@dataclass
class TriggerCounter:
    """Counts completions since the last batch check; failures trigger at once."""

    batch_threshold: int
    completed: int = 0

    def observe(self, outcome: NewOutcome) -> Check | None:
        """The check this outcome triggers, if any (a batch check resets the counter)."""
        if outcome.status in FAILURE_STATUSES:
            return Check("failure", (outcome,))
        if outcome.status != "completed":
            return None
        self.completed += 1
        if self.completed < self.batch_threshold:
            return None
        self.completed = 0
        return Check("batch")

    def observe_all(self, outcomes: list[NewOutcome] | tuple[NewOutcome, ...]) -> list[Check]:
        """Checks for a batch of new outcomes: failures merged into one scoped check, and at
        most one batch check (a batch check covers the failures too)."""
        found = [c for c in (self.observe(o) for o in outcomes) if c is not None]
        if any(c.kind == "batch" for c in found):
            return [Check("batch")]
        failed = tuple(s for c in found for s in c.sessions)
        return [Check("failure", failed)] if failed else []
