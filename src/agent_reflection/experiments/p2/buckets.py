"""P2 buckets: which gate would have caught a counted failure signal.

CI results as data first (``ci_runs``, from ``reflect load ci``), when there are any on the
signal's commits (:func:`ci_evidence`): a failed CI run on the introducing commit, or on a
parent of the fixing commit, puts the signal in *ci* ("CI caught it"); CI runs there that all
passed mean CI saw the change and did not catch it, so the rules that *infer* CI are skipped.

Otherwise the pre-registered rules are tried in order; the first whose condition holds
decides (a rule without conditions always matches). CI is then *inferred* from the fixing
commit: its own words name a failing test/build/lint/type check, or all it changes is CI/build
configuration. A fix that adds a test is evidence CI missed the failure, so tests never put a
signal in CI.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from agent_reflection.experiments.p2.paths import matching_glob
from agent_reflection.experiments.registration import Rule
from agent_reflection.load.git.signals import REVERTED_SUBJECT, REVERTS_COMMIT
from agent_reflection.reflection.risk_floor import RiskVerdict


@dataclass(frozen=True)
class Classified:
    bucket: str
    rule: str
    why: str


#: The rule name of a signal put in *ci* by a failed CI run (data, not inference).
CI_DATA_RULE = "ci-reported-failure"
#: How a signal's CI question was answered (``ci_evidence`` of each signal).
CI_FAILED, CI_PASSED, CI_INFERRED = "ci_runs-failed", "ci_runs-passed", "inferred"


@dataclass(frozen=True)
class CiRun:
    """One CI result on a commit (a row of ``ci_runs``)."""

    kind: str
    name: str
    conclusion: str | None


@dataclass(frozen=True)
class CiResults:
    """CI results by full commit sha, and the parents of the commits P2 may ask about.

    Joined to the git history by sha alone: a clone's repo name (``flask``) is not the
    ``owner/repo`` GitHub reports, and a full sha names one commit.
    """

    by_sha: Mapping[str, tuple[CiRun, ...]] = field(default_factory=dict)
    parents: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.by_sha)


@dataclass(frozen=True)
class CiEvidence:
    status: str  # CI_FAILED | CI_PASSED | CI_INFERRED
    why: str


def ci_evidence(
    ci: CiResults,
    introducing_sha: str | None,
    fixing_sha: str,
    failed_conclusions: Sequence[str],
) -> CiEvidence:
    """What the loaded CI results say about one signal (see the module docstring)."""
    failed = {c.lower() for c in failed_conclusions}
    looked: list[tuple[str, str]] = []
    if introducing_sha:
        looked.append(("the introducing commit", introducing_sha.lower()))
    looked += [("the fix's parent", p.lower()) for p in ci.parents.get(fixing_sha.lower(), ())]
    seen = 0
    for what, sha in looked:
        runs = ci.by_sha.get(sha, ())
        finished = [r for r in runs if r.conclusion is not None]
        seen += len(finished)
        bad = [r for r in finished if r.conclusion in failed]
        if bad:
            shown = ", ".join(f"{r.name} {r.conclusion}" for r in bad[:3])
            return CiEvidence(CI_FAILED, f"CI failed on {what} {sha[:10]}: {shown}")
    if seen:
        return CiEvidence(
            CI_PASSED,
            f"{seen} CI result(s) on the introducing commit / the fix's parent, none failed: "
            "CI ran and did not catch it",
        )
    return CiEvidence(CI_INFERRED, "no CI result on these commits: CI inferred")


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
    ci: CiEvidence | None = None,
) -> Classified:
    """The first rule with a matching condition (see the module docstring); ``ci``: what the
    loaded CI results say (None or inferred: the rules alone decide)."""
    if ci is not None and ci.status == CI_FAILED:
        return Classified("ci", CI_DATA_RULE, ci.why)
    considered = [path for path in fixing_paths if matching_glob(path, non_code_paths) is None]
    for rule in rules:
        if ci is not None and ci.status == CI_PASSED and rule.bucket == "ci":
            continue  # CI ran on these commits and passed: no rule may infer that it caught it
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
