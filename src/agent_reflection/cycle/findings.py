"""The result of a rule: one :class:`ReflectionFinding` (a row of the ``findings`` table), and a
pass's findings in bulk (:class:`Findings`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from typing import Any, overload


@dataclass(frozen=True)
class ReflectionFinding:
    """What a rule found, about which subject, and what it did (or would do) about it."""

    rule: str  # consecutive_failures | timeout_pattern | stale_task | skill_failure_correlation
    severity: str  # warning | action_taken
    subject_type: str  # task | skill | sub_session
    subject_id: str
    detail: str
    action_taken: str  # "" | paused_task | already_paused | flagged_skill
    count: int = 0  # the rule's number: streak length, timeouts, results, failed sessions
    # What the finding rests on, without the clock (the detail names the window): the same data
    # gives the same evidence at any clock, so a write-back can recognise a finding it logged.
    evidence: str = ""

    def line(self) -> str:
        """One printable line: rule, subject, action, detail."""
        action = f" [{self.action_taken}]" if self.action_taken else ""
        return f"{self.rule:<26} {self.subject_type} {self.subject_id}{action}: {self.detail}"


@dataclass(frozen=True)
class Findings(Sequence[ReflectionFinding]):
    """A pass's findings in rule order, held as one column per field of
    :class:`ReflectionFinding` (the same order).

    A pass can find tens of thousands of things; storing them needs only the columns, so they
    are built in bulk from the rule statement's rows and a :class:`ReflectionFinding` is made
    only when one is read (indexing or iterating)."""

    rules: tuple[str, ...] = ()
    severities: tuple[str, ...] = ()
    subject_types: tuple[str, ...] = ()
    subject_ids: tuple[str, ...] = ()
    details: tuple[str, ...] = ()
    actions_taken: tuple[str, ...] = ()
    counts: tuple[int, ...] = ()
    evidence: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        lengths = {len(column) for column in self.columns()}
        if len(lengths) > 1:
            raise ValueError(f"findings' columns differ in length: {sorted(lengths)}")

    @classmethod
    def from_rows(cls, rows: Sequence[tuple[Any, ...]]) -> Findings:
        """Rows of ``ReflectionFinding``'s fields, in order (as ``sql/cycle/rules.sql`` gives
        them), turned into columns in one transposition."""
        if not rows:
            return cls()
        return cls(*zip(*rows, strict=True))

    def columns(self) -> tuple[tuple[Any, ...], ...]:
        """The columns in the order of :class:`ReflectionFinding`'s fields."""
        return tuple(getattr(self, f.name) for f in fields(self))

    def subject_ids_where(
        self, *, subject_type: str | None = None, action_taken: str | None = None
    ) -> list[str]:
        """The subjects of the findings with this subject type and/or action, in order."""
        return [
            subject
            for subject, kind, action in zip(
                self.subject_ids, self.subject_types, self.actions_taken, strict=True
            )
            if (subject_type is None or kind == subject_type)
            and (action_taken is None or action == action_taken)
        ]

    def __len__(self) -> int:
        return len(self.rules)

    @overload
    def __getitem__(self, index: int) -> ReflectionFinding: ...

    @overload
    def __getitem__(self, index: slice) -> Findings: ...

    def __getitem__(self, index: int | slice) -> ReflectionFinding | Findings:
        if isinstance(index, slice):
            return Findings(*(column[index] for column in self.columns()))
        return ReflectionFinding(*(column[index] for column in self.columns()))

    def __iter__(self) -> Iterator[ReflectionFinding]:
        return map(ReflectionFinding, *self.columns())
