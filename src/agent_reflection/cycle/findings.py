"""The result of a rule: one :class:`ReflectionFinding` (a row of the ``findings`` table)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

RULES = ("consecutive_failures", "timeout_pattern", "stale_task", "skill_failure_correlation")


@dataclass(frozen=True)
class ReflectionFinding:
    """What a rule found, about which subject, and what it did (or would do) about it."""

    rule: str  # one of RULES
    severity: str  # warning | action_taken
    subject_type: str  # task | skill | sub_session
    subject_id: str
    detail: str
    action_taken: str  # "" | paused_task | already_paused | flagged_skill
    count: int = 0  # the rule's number: streak length, timeouts, results, failed sessions
    # What the finding rests on, without the clock (the detail names the window): the same data
    # gives the same evidence at any clock, so a write-back can recognise a finding it logged.
    evidence: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        """One printable line: rule, subject, action, detail."""
        action = f" [{self.action_taken}]" if self.action_taken else ""
        return f"{self.rule:<26} {self.subject_type} {self.subject_id}{action}: {self.detail}"
