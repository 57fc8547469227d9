"""P2 buckets: which gate would have caught a counted failure signal.

**Declared once, here.** :data:`BUCKETS` names the gates a counted signal can be put in, in
report order; everything else (the registration's check of a rule's bucket, the gate labels'
classes, the correction matrix, the figures and tables) derives from that tuple.
:data:`CONDITIONS` declares each kind of condition a ``[[p2.rules]]`` entry may set: its TOML
key, what its value is, what it means, how its value is read from the file, and how it is
evaluated on a signal. The registration reads each rule with :func:`parse_rule` (a key that is
neither ``name``, ``bucket`` nor a registered condition is an error listing them), the report
describes the rules with :func:`describe_rule`, and :func:`classify` evaluates them. A
condition sees a signal through its :class:`Facts`, which :mod:`.analysis` fills from the
history :mod:`.inputs` reads; a new kind of condition that needs a fact not yet there adds it
to :class:`Facts`, fills it there and reads it there (with its query).

**Classification.** CI results as data first (``ci_runs``, from ``reflect load ci``), when
there are any on the signal's commits (:func:`ci_evidence`): a failed CI run on the
introducing commit, or on a parent of the fixing commit, puts the signal in *ci* ("CI caught
it"); CI runs there that all passed mean CI saw the change and did not catch it, so the rules
that *infer* CI are skipped. Then the fix's diff: a fix that adds or changes a test beside
the code it repairs (:func:`fix_tests`, ``[p2] ci_fix_test``) brought the check that would
have failed, so no check caught the failure when it landed: the rules that infer CI from the
fix's *paths* are skipped (its own words naming a failing check still decide: a check that
failed existed). Each classification says which evidence put the signal in its bucket
(:attr:`Classified.evidence`).

Otherwise the pre-registered rules are tried in order; the first with a condition that holds
decides (a rule without conditions always matches). CI is then *inferred* from the fixing
commit: its own words name a failing test/build/lint/type check, or all it changes is CI/build
configuration. A fix that adds a test is evidence CI missed the failure, so tests never put a
signal in CI.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent_reflection.experiments.p2.paths import matching_glob
from agent_reflection.load.git.signals import REVERTED_SUBJECT, REVERTS_COMMIT

if TYPE_CHECKING:
    from agent_reflection.reflection.risk_floor import RiskVerdict


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


CI, HUMAN_REVIEW, ONLY_SELF = "ci", "human-review", "only-self-reflection"
#: P2's buckets, in report order: the gates a counted signal can be put in. The verdict reads
#: the only-self-reflection share; CI results put a signal in ci; the other names are free.
BUCKETS = (CI, HUMAN_REVIEW, ONLY_SELF)


@dataclass(frozen=True)
class Facts:
    """What a rule's conditions see of one counted signal."""

    #: the files the fixing commit changes, other than the registration's non_code_paths
    code_paths: tuple[str, ...]
    #: the fixing commit's own words (:func:`own_words`)
    message: str
    #: the introducing (reverted) change's risk floor; None when P2 names no introducing commit
    failing_risk: RiskVerdict | None
    #: the review evidence of the introducing change (its pull request's review events and
    #: the lines it changed); None where no review data is loaded for it
    failing_review: ReviewEvidence | None = None


@dataclass(frozen=True)
class ReviewEvidence:
    """What a reviewer did and saw of one commit: the review events and comments of the pull
    request that names it (GitHub timeline), and the lines the commit changed."""

    pull_request: str
    reviews: int
    comments: int
    lines: int


@dataclass(frozen=True)
class Condition:
    """One kind of rule condition (see the module docstring)."""

    key: str
    #: what the TOML value is, in words
    value: str
    #: what the condition means, in words (docs and reports print it)
    description: str
    #: the value as read from the file; raises ValueError saying what is wrong
    parse: Callable[[Any], Any]
    #: why the condition holds for a signal, or None when it does not
    evaluate: Callable[[Any, Facts], str | None]
    #: the value results.json shows for a rule that does not set the condition
    unset: Any = None
    #: the evidence a signal's row names when this condition put it in its bucket
    evidence: str = ""


def regex(value: Any) -> str:
    """``value`` when it is a valid regex; ValueError saying why not (a rule condition's value,
    and the registration's regex keys)."""
    if not isinstance(value, str):
        raise ValueError(f"must be a string, got {value!r}")
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"is not a valid regex ({exc})") from None
    return value


def relative_globs(value: Any) -> tuple[str, ...]:
    """``value`` as path globs, each relative and written with '/' (:mod:`.paths` matches
    them); ValueError saying which is not (a rule condition's value, and the registration's
    glob keys)."""
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"must be a list of strings, got {value!r}")
    for pattern in value:
        if not pattern.strip() or pattern.startswith("/") or "\\" in pattern:
            raise ValueError(f"entry {pattern!r} must be a non-empty relative glob using '/'")
    return tuple(value)


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"must be true/false, got {value!r}")
    return value


def _message_says(pattern: str, facts: Facts) -> str | None:
    found = re.search(pattern, facts.message, re.IGNORECASE)
    return None if found is None else f"message says {found.group(0)!r}"


def _only_paths(globs: tuple[str, ...], facts: Facts) -> str | None:
    paths = facts.code_paths
    if not paths or not all(matching_glob(path, globs) for path in paths):
        return None
    shown = ", ".join(paths[:3]) + (" ..." if len(paths) > 3 else "")
    return f"the fix only changes configuration: {shown}"


def _risk_says(needs_review: bool, facts: Facts) -> str | None:
    risk = facts.failing_risk
    # the path rule is the fallback: where review data exists, review events decide
    if risk is None or facts.failing_review is not None or risk.needs_review != needs_review:
        return None
    return f"introducing change's risk floor: {risk.reason}"


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"must be a whole number >= 1, got {value!r}")
    return int(value)


def _reviewed(max_lines: int, facts: Facts) -> str | None:
    review = facts.failing_review
    if review is None or not review.reviews or review.lines > max_lines:
        return None
    return (
        f"introducing change reviewed: {review.reviews} review(s), {review.comments} "
        f"comment(s) on {review.pull_request}, {review.lines} line(s) to read"
    )


#: Every kind of condition a rule may set, in the order a rule's reasons are listed.
CONDITIONS = (
    Condition(
        "fixing_message",
        "a regex",
        "the fixing commit's own words (subject and body; a revert's without the quoted subject "
        "of the commit it reverts) match this regex, case-insensitive",
        regex,
        _message_says,
        evidence="fix message",
    ),
    Condition(
        "fixing_paths_all",
        "a list of path globs",
        "every file the fixing commit changes, other than non_code_paths, matches one of these "
        "globs (the fix is configuration, or only tests)",
        relative_globs,
        _only_paths,
        unset=(),
        evidence="fix paths (fallback: no CI result)",
    ),
    Condition(
        "failing_risk_needs_review",
        "true or false",
        "the introducing (reverted) change's risk floor says needs_review (true) or not (false); "
        "only where no review data is loaded for it (review events decide where they exist)",
        _flag,
        _risk_says,
        evidence="risk-floor paths (fallback: no review data)",
    ),
    Condition(
        "failing_reviewed_max_lines",
        "a whole number of lines",
        "the introducing change's pull request has review events (a reviewer saw it) and the "
        "change is at most this many lines (small enough to be read)",
        _count,
        _reviewed,
        evidence="review events",
    ),
)


@dataclass(frozen=True)
class Rule:
    """One ``[[p2.rules]]`` entry: the bucket it gives a signal when any of its conditions
    holds; a rule without conditions always matches (the last one must be such a catch-all)."""

    name: str
    bucket: str
    #: registered condition key -> its value, for the conditions the rule sets
    conditions: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The rule as results.json's ``parameters`` show it: every registered condition,
        the ones it does not set as unset."""
        values = {c.key: self.conditions.get(c.key, c.unset) for c in CONDITIONS}
        return {"name": self.name, "bucket": self.bucket, **values}


def parse_rule(table: Mapping[str, Any]) -> Rule:
    """A ``[[p2.rules]]`` table as a :class:`Rule`: its name, its bucket (one of
    :data:`BUCKETS`) and the registered conditions it sets (an empty regex or glob list, or a
    null from YAML, sets none: :meth:`Rule.to_dict` reads back). Raises ValueError saying what
    is wrong (an unknown key: which keys are known)."""
    known = ("name", "bucket", *(c.key for c in CONDITIONS))
    unknown = sorted(str(k) for k in table if k not in known)
    if unknown:
        raise ValueError(
            f"unknown key(s) {unknown}; known keys: name, bucket and the registered conditions "
            f"{', '.join(known[2:])}"
        )
    for key in ("name", "bucket"):
        if not isinstance(table.get(key), str):
            raise ValueError(f"{key} must be a string, got {table.get(key)!r}")
    if table["bucket"] not in BUCKETS:
        raise ValueError(f"bucket must be one of {list(BUCKETS)}")
    conditions: dict[str, Any] = {}
    for c in CONDITIONS:
        if table.get(c.key) is None:
            continue
        try:
            value = c.parse(table[c.key])
        except ValueError as exc:
            raise ValueError(f"{c.key} {exc}") from None
        if value not in ("", ()):
            conditions[c.key] = value
    return Rule(table["name"], table["bucket"], conditions)


def describe_rule(rule: Rule) -> str:
    """``rule`` in words, from the registered conditions' descriptions."""
    if not rule.conditions:
        return f"{rule.name}: every signal no earlier rule took -> {rule.bucket}"
    parts = [
        f"{c.description}: {rule.conditions[c.key]!r}"
        for c in CONDITIONS
        if c.key in rule.conditions
    ]
    return f"{rule.name}: {'; or '.join(parts)} -> {rule.bucket}"


@dataclass(frozen=True)
class Classified:
    bucket: str
    rule: str
    why: str
    #: which evidence put the signal in its bucket (:data:`EVIDENCE`, a condition's evidence)
    evidence: str = ""


#: The rule name of a signal put in *ci* by a failed CI run (data, not inference).
CI_DATA_RULE = "ci-reported-failure"
#: How a signal's CI question was answered (``ci_evidence`` of each signal): CI results on
#: its commits (failed / all passed), else the fix's diff (it adds the test), else inferred.
CI_FAILED, CI_PASSED, CI_INFERRED = "ci_runs-failed", "ci_runs-passed", "inferred"
CI_FIX_TEST = "fix-adds-test"
#: ``[p2] ci_fix_test``: what makes a test file the fix changes a test of the code it repairs
#: (:func:`fix_tests`); "off": the fix's tests are no CI evidence (the files before the key).
FIX_TEST_RULES = ("same-commit", "off")
#: The evidence a row names when no condition put the signal in its bucket (the catch-all):
#: what kept it out of the gates before it.
EVIDENCE = {
    CI_FAILED: "ci_runs: failed run",
    CI_PASSED: "ci_runs: runs passed",
    CI_FIX_TEST: "fix diff: adds the test",
    CI_INFERRED: "no gate's evidence",
}


@dataclass(frozen=True)
class CiEvidence:
    status: str  # CI_FAILED | CI_PASSED | CI_FIX_TEST | CI_INFERRED
    why: str


def fix_tests(
    files: Sequence[tuple[str, int | None]],
    test_paths: Sequence[str],
    non_code_paths: Sequence[str],
    rule: str,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The tests a fix adds or changes beside the code it repairs, and that code, from the
    fixing commit's files (``(path, lines added)``): ``rule`` "same-commit": a test file
    (``test_paths``) with added lines, in a commit that also changes a code file that is
    neither a test nor one of ``non_code_paths``; the commit pairs the test with the repair
    (the test's text is not loaded, so which function it calls is not checked). Empty when
    there is no such pair, or ``rule`` is "off"."""
    if rule == "off":
        return (), ()
    tests = tuple(
        path
        for path, added in files
        if (added or 0) > 0
        and matching_glob(path, tuple(test_paths))
        and not matching_glob(path, tuple(non_code_paths))
    )
    code = tuple(
        path
        for path, _ in files
        if not matching_glob(path, tuple(test_paths))
        and not matching_glob(path, tuple(non_code_paths))
    )
    return (tests, code) if tests and code else ((), ())


def _shown(paths: Sequence[str]) -> str:
    return ", ".join(paths[:2]) + (" ..." if len(paths) > 2 else "")


def ci_evidence(
    ci: CiResults,
    introducing_sha: str | None,
    fixing_sha: str,
    failed_conclusions: Sequence[str],
    tests: tuple[tuple[str, ...], tuple[str, ...]] = ((), ()),
) -> CiEvidence:
    """What the loaded CI results, then the fix's diff (``tests``: :func:`fix_tests`), say
    about one signal (see the module docstring)."""
    added, repaired = tests
    with_test = (
        f"; the fix adds the test that would have failed ({_shown(added)}, beside "
        f"{_shown(repaired)}): CI did not catch it"
        if added
        else ""
    )
    failed = {c.lower() for c in failed_conclusions}
    looked: list[tuple[str, str]] = []
    if introducing_sha:
        looked.append(("the introducing commit", introducing_sha.lower()))
    # the fix's parent, unless it is the introducing commit (its runs are counted once)
    looked += [
        ("the fix's parent", p.lower())
        for p in ci.parents.get(fixing_sha.lower(), ())
        if p.lower() != (introducing_sha or "").lower()
    ]
    seen: dict[str, int] = {}
    for what, sha in looked:
        runs = ci.by_sha.get(sha, ())
        finished = [r for r in runs if r.conclusion is not None]
        if finished:
            seen[what] = seen.get(what, 0) + len(finished)
        bad = [r for r in finished if r.conclusion in failed]
        if bad:
            shown = ", ".join(f"{r.name} {r.conclusion}" for r in bad[:3])
            return CiEvidence(CI_FAILED, f"CI failed on {what} {sha[:10]}: {shown}")
    if seen:
        where = " and ".join(f"{n} on {what}" for what, n in seen.items())
        return CiEvidence(
            CI_PASSED,
            f"CI ran ({where}), none failed: CI ran and did not catch it{with_test}",
        )
    if added:
        return CiEvidence(
            CI_FIX_TEST, f"no CI result on these commits{with_test}; its paths infer no CI"
        )
    return CiEvidence(CI_INFERRED, "no CI result on these commits: CI inferred")


def own_words(subject: str, body: str) -> str:
    """A commit's message without the words it quotes from the commit it reverts."""
    quoted = REVERTED_SUBJECT.match(subject.strip())
    subject = "" if quoted else subject
    return f"{subject}\n{REVERTS_COMMIT.sub('', body)}".strip()


def classify(rules: Sequence[Rule], facts: Facts, *, ci: CiEvidence | None = None) -> Classified:
    """The first rule with a condition that holds for the signal ``facts`` describe (see the
    module docstring); ``ci``: what the loaded CI results say (None or inferred: the rules
    alone decide)."""
    status = CI_INFERRED if ci is None else ci.status
    if ci is not None and status == CI_FAILED:
        return Classified(CI, CI_DATA_RULE, ci.why, EVIDENCE[CI_FAILED])
    for rule in rules:
        if status == CI_PASSED and rule.bucket == CI:
            continue  # CI ran on these commits and passed: no rule may infer that it caught it
        if not rule.conditions:
            return Classified(rule.bucket, rule.name, "no earlier rule matched", EVIDENCE[status])
        held = [
            (c, why)
            for c in CONDITIONS
            if c.key in rule.conditions
            # the fix brought its test: the CI rules that read the fix's paths are skipped
            and not (status == CI_FIX_TEST and rule.bucket == CI and c.key == "fixing_paths_all")
            and (why := c.evaluate(rule.conditions[c.key], facts))
        ]
        if held:
            evidence = "; ".join(dict.fromkeys(c.evidence for c, _ in held))
            return Classified(rule.bucket, rule.name, "; ".join(w for _, w in held), evidence)
    raise AssertionError("the last pre-registered rule must be a catch-all")  # pragma: no cover
