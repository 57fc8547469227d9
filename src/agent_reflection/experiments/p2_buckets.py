"""P2 buckets: which gate would have caught a counted failure signal.

The pre-registered rules are tried in order; the first whose condition holds decides
(a rule without conditions always matches). CI is *inferred* from the fixing commit: its own
words name a failing test/build/lint/type check, or all it changes is CI/build configuration.
A fix that adds a test is evidence CI missed the failure, so tests never put a signal in CI.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from agent_reflection.experiments.p2_paths import matching_glob
from agent_reflection.experiments.preregistration import Rule
from agent_reflection.load.git.signals import REVERTED_SUBJECT, REVERTS_COMMIT
from agent_reflection.reflection.risk_floor import RiskVerdict


@dataclass(frozen=True)
class Classified:
    bucket: str
    rule: str
    why: str


def own_words(subject: str, body: str) -> str:
    """A commit's message without the words it quotes from the commit it reverts."""
    quoted = REVERTED_SUBJECT.match(subject.strip())
    subject = "" if quoted else subject
    return f"{subject}\n{REVERTS_COMMIT.sub('', body)}".strip()


def classify(
    rules: Sequence[Rule],
    fixing_paths: Sequence[str],
    message: str,
    failing_risk: RiskVerdict | None,
    *,
    non_code_paths: Sequence[str] = (),
) -> Classified:
    """The first rule with a matching condition (see the module docstring)."""
    considered = [path for path in fixing_paths if matching_glob(path, non_code_paths) is None]
    for rule in rules:
        reasons: list[str] = []
        has_condition = False
        if rule.fixing_message:
            has_condition = True
            m = re.search(rule.fixing_message, message, re.IGNORECASE)
            if m:
                reasons.append(f"message says {m.group(0)!r}")
        if rule.fixing_paths_all:
            has_condition = True
            globs = [matching_glob(path, rule.fixing_paths_all) for path in considered]
            if considered and all(globs):
                shown = ", ".join(considered[:3]) + (" ..." if len(considered) > 3 else "")
                reasons.append(f"the fix only changes configuration: {shown}")
        if rule.failing_risk_needs_review is not None:
            has_condition = True
            if failing_risk is not None and (
                failing_risk.needs_review == rule.failing_risk_needs_review
            ):
                reasons.append(f"introducing change's risk floor: {failing_risk.reason}")
        if not has_condition:
            return Classified(rule.bucket, rule.name, "no earlier rule matched")
        if reasons:
            return Classified(rule.bucket, rule.name, "; ".join(reasons))
    raise AssertionError("the last pre-registered rule must be a catch-all")  # pragma: no cover
