"""Signals derived from a commit message: reverts, reapplies, PRs, conventional commits, fixes.

Pure functions over (subject, body); every pattern is a named, documented constant here and
in docs/git.md. Bump :data:`SIGNALS_VERSION` whenever a definition changes: the ``commits``
table stores the version each row was derived with, so old and new rows can be told apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Version of the definitions below (stored in ``commits.signals_version``).
SIGNALS_VERSION = 1

#: ``This reverts commit <sha>.`` as ``git revert`` writes it (7–40 hex digits; merge reverts
#: add ``, reversing changes made to <sha>.``). The first such line in the message wins.
REVERTS_COMMIT = re.compile(r"\bThis reverts commit ([0-9a-fA-F]{7,40})(?![0-9a-zA-Z])")

#: ``Revert "<subject>"`` (git's default revert subject) or a conventional ``revert:`` subject.
REVERT_SUBJECT = re.compile(r'^(?:Revert\s+"|revert(?:\([^()\r\n]*\))?!?:\s)', re.IGNORECASE)

#: ``Reapply "<subject>"`` (git >= 2.43 for a revert of a revert) or ``Revert "Revert "...``.
REAPPLY_SUBJECT = re.compile(r'^(?:Reapply\s+"|Revert\s+"Revert\s+")', re.IGNORECASE)

#: GitHub merge-commit subject: ``Merge pull request #123 from owner/branch`` (the ``from``
#: part is sometimes missing in old or hand-edited merges).
MERGE_PR_SUBJECT = re.compile(r"^Merge pull request #(\d{1,9})\b")

#: GitHub squash/rebase-merge subject suffix: ``Add a thing (#123)``.
SQUASH_PR_SUFFIX = re.compile(r"\(#(\d{1,9})\)\s*$")

#: Conventional-commit types accepted (commitlint's config-conventional list). Other
#: ``word: text`` prefixes (``http: ...``, ``Note: ...``) are subsystem tags, not types.
CC_TYPES = frozenset(
    {"build", "chore", "ci", "docs", "feat", "fix", "perf", "refactor", "revert", "style", "test"}
)

#: ``type(scope)!: description`` — type case-insensitive, scope optional, ``!`` = breaking.
CC_SUBJECT = re.compile(r"^(?P<type>[A-Za-z]+)(?:\((?P<scope>[^()\r\n]*)\))?(?P<bang>!)?:[ \t]+\S")

#: ``BREAKING CHANGE: ...`` / ``BREAKING-CHANGE: ...`` footer, at the start of a body line.
BREAKING_FOOTER = re.compile(r"^BREAKING[ -]CHANGE:\s", re.MULTILINE)

#: Fix wording as a whole word: fix/fixes/fixed/fixing, hotfix and bugfix (also with a hyphen
#: or as "bug fix"). Not matched: prefix, suffix, fixture(s), fixity, fixup!/fix-up,
#: fixed-width (a hyphen after the word means a compound, not a fix).
FIX_WORDS = re.compile(
    r"(?<![\w-])(?:(?:hot|bug)[- ]?)?fix(?:e[sd]|ing)?(?![\w-])",
    re.IGNORECASE,
)

#: The two readings of the fix words a P2 analysis may pre-register (``[p2] fix_wording``):
#: ``word``: the words anywhere in the subject (what ``commits.is_fix_like`` stores);
#: ``verb``: only where they act as a verb: see :func:`fix_word_is_verb`.
FIX_WORDINGS = ("word", "verb")

#: What may stand right before a fix word that opens the subject or a clause: a tag or scope
#: (``Parser: fix``, ``[docs] fix``), a list or clause break (``, fix``, ``; fix``, ``(fixes
#: #3)``, ``x. Fix y``, ``x - fix y``), or a joining sign read as "and" (``test + fix``,
#: ``docs & fix``).
CLAUSE_OPENERS = frozenset(":;,([{.!?|>*]&+-\u2013\u2014")

#: Words after which a fix word acts as a verb: conjunctions and adverbs that join a clause
#: (``and fix``, ``also fixes``), the infinitive (``to fix``), modals (``should fix``).
VERB_CUES = frozenset(
    {
        "and",
        "or",
        "but",
        "also",
        "then",
        "plus",
        "to",
        "should",
        "will",
        "would",
        "could",
        "might",
        "may",
        "must",
        "can",
        "cannot",
        "please",
        "partially",
        "partly",
        "properly",
        "finally",
        "hopefully",
        "actually",
        "possibly",
        "probably",
        "maybe",
    }
)

#: Subjects after which an inflected ``fixes`` / ``fixed`` is a verb (``this fixes``, ``the
#: patch fixed``); a bare ``fix`` after them is a noun (``this fix``).
SUBJECT_CUES = frozenset({"this", "that", "which", "it", "who", "commit", "change", "patch", "pr"})

#: Auxiliaries after which ``fixed`` is a passive or perfect verb (``is fixed``, ``has fixed``).
PARTICIPLE_CUES = frozenset(
    {"is", "was", "are", "were", "be", "been", "being", "get", "gets", "got", "has", "have", "had"}
)

_LAST_WORD = re.compile(r"(\w+)$")

#: A GitHub closing keyword of the fix family in the body: ``Fixes #12``, ``fixed owner/repo#3``,
#: ``Fix https://github.com/o/r/issues/4``.
FIXES_ISSUE = re.compile(
    r"(?<![\w-])fix(?:e[sd])?:?\s+(?:(?:[\w.-]+/[\w.-]+)?#\d+|https?://\S+/issues/\d+)",
    re.IGNORECASE,
)

#: The quoted subject of a ``Revert "<subject>"`` subject, with GitHub's optional `` (#N)`` PR
#: suffix of the revert itself after the closing quote. Greedy, so a nested
#: ``Revert "Revert "x""`` quotes ``Revert "x"``.
REVERTED_SUBJECT = re.compile(r'^Revert\s+"(?P<subject>.+)"\s*(?:\(#\d{1,9}\))?\s*$', re.IGNORECASE)

#: GitHub's revert-PR body line ``Reverts owner/repo#123`` (or ``Reverts #123``): the PR undone.
REVERTS_PR_BODY = re.compile(r"^Reverts\s+(?:[\w.-]+/[\w.-]+)?#(\d{1,9})\b", re.MULTILINE)

_INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class RevertReference:
    """What a revert's message says about its target when the hash line may be missing.

    Read at analysis time to resolve a revert's target (P2); not stored, so not versioned.
    """

    sha: str | None
    subject: str | None
    pr_number: int | None


def revert_reference(subject: str, body: str) -> RevertReference:
    """The target named by a revert message: the hash line, the quoted subject, the PR number.

    The PR number comes from a ``Reverts owner/repo#N`` body line, else from the quoted
    subject (``Revert "Add x (#12)" (#15)`` -> 12; ``Revert "Merge pull request #12 from a/b"``
    -> 12).
    """
    signals = derive_signals(subject, body)
    quoted = REVERTED_SUBJECT.match(subject.strip())
    target_subject = quoted.group("subject").strip() if quoted else None
    pr_line = REVERTS_PR_BODY.search(body)
    pr_number = _pr_number(pr_line)
    if pr_number is None and target_subject is not None:
        inner = derive_signals(target_subject, "")
        pr_number = inner.pr_number
    return RevertReference(sha=signals.reverts_sha, subject=target_subject, pr_number=pr_number)


@dataclass(frozen=True)
class CommitSignals:
    """What a commit message says about the commit (see docs/git.md for each definition)."""

    is_revert: bool
    reverts_sha: str | None
    is_reapply: bool
    pr_number: int | None
    cc_type: str | None
    cc_scope: str | None
    cc_breaking: bool
    is_fix_like: bool
    version: int = SIGNALS_VERSION


def derive_signals(subject: str, body: str, fix_wording: str = "word") -> CommitSignals:
    """The :class:`CommitSignals` of a commit with this subject line and body.

    ``fix_wording`` (one of :data:`FIX_WORDINGS`) says how the fix words of the subject are read
    for ``is_fix_like``; the stored column is the ``word`` reading, and ``verb`` gives a subset.
    """
    subject = subject.strip()
    # Cheap substring guards skip regexes that cannot match (same results, faster).
    reverted = None
    if "reverts commit" in body:
        reverted = REVERTS_COMMIT.search(body)
    if reverted is None and "reverts commit" in subject:
        reverted = REVERTS_COMMIT.search(subject)
    reverts_sha = reverted.group(1).lower() if reverted else None
    starts_re = subject[:2].lower() == "re"
    is_reapply = starts_re and REAPPLY_SUBJECT.match(subject) is not None
    quoted = is_reapply or (starts_re and REVERT_SUBJECT.match(subject) is not None)
    # A reapply undoes a revert, so it is a revert too (git writes "This reverts commit
    # <the revert>." in its body): pure reverts are ``is_revert AND NOT is_reapply``.
    is_revert = reverts_sha is not None or quoted

    pr_merge = MERGE_PR_SUBJECT.match(subject) if subject.startswith("Merge pull") else None
    pr_number = _pr_number(pr_merge or SQUASH_PR_SUFFIX.search(subject))
    cc_type, cc_scope, bang = _conventional(subject)
    cc_breaking = bang or ("BREAKING" in body and BREAKING_FOOTER.search(body) is not None)
    is_fix_like = cc_type == "fix" or _fix_wording(
        subject, body, quoted, pr_merge is not None, fix_wording
    )
    return CommitSignals(
        is_revert=is_revert,
        reverts_sha=reverts_sha,
        is_reapply=is_reapply,
        pr_number=pr_number,
        cc_type=cc_type,
        cc_scope=cc_scope,
        cc_breaking=cc_breaking,
        is_fix_like=is_fix_like,
    )


def _pr_number(match: re.Match[str] | None) -> int | None:
    if match is None:
        return None
    number = int(match.group(1))
    return number if 0 < number <= _INT32_MAX else None


def _conventional(subject: str) -> tuple[str | None, str | None, bool]:
    match = CC_SUBJECT.match(subject)
    if match is None or match.group("type").lower() not in CC_TYPES:
        return None, None, False
    scope = match.group("scope")
    scope = scope.strip() if scope is not None else None
    return match.group("type").lower(), scope or None, match.group("bang") is not None


def fix_word_is_verb(text: str, match: re.Match[str]) -> bool:
    """Whether the fix word ``match`` of ``text`` acts as a verb, read from what precedes it.

    It does when it opens the text or a clause (nothing, or one of :data:`CLAUSE_OPENERS`, right
    before it), is a closing keyword (:data:`FIXES_ISSUE`: ``fixes #12``), follows one of
    :data:`VERB_CUES`, is ``fixes``/``fixed`` after one of
    :data:`SUBJECT_CUES`, or ``fixed`` after one of :data:`PARTICIPLE_CUES`. Not: a noun after
    an article or a modifier (``a fix``, ``with the fix``, ``SZZ fix``, ``version-only
    fixes``), an adjective (``load fixed cost``), the word quoted (``'fixed'``).
    """
    before = text[: match.start()].rstrip()
    if not before or before[-1] in CLAUSE_OPENERS:
        return True
    if FIXES_ISSUE.match(text, match.start()):
        return True  # a closing keyword: "... posixpath fixes #2033"
    last = _LAST_WORD.search(before)
    if last is None or last.end() != len(before):
        return False
    cue = last.group(1).lower()
    word = match.group(0).lower()
    return (
        cue in VERB_CUES
        or (cue in SUBJECT_CUES and word.endswith(("es", "ed")))
        or (cue in PARTICIPLE_CUES and word.endswith("ed"))
    )


def has_fix_wording(text: str, fix_wording: str = "word") -> bool:
    """Whether ``text`` (a subject or PR title) has fix words under the ``fix_wording`` reading."""
    if fix_wording == "word":
        return FIX_WORDS.search(text) is not None
    if fix_wording == "verb":
        return any(fix_word_is_verb(text, m) for m in FIX_WORDS.finditer(text))
    raise ValueError(f"fix_wording must be one of {', '.join(FIX_WORDINGS)}, not {fix_wording!r}")


def _fix_wording(subject: str, body: str, quoted: bool, pr_merge: bool, fix_wording: str) -> bool:
    if quoted:
        # ``Revert "Fix x"`` quotes the other commit's subject: its wording is not this one's.
        pass
    elif pr_merge:
        # A PR merge's subject names the branch; the PR title is the body's first line.
        title = body.lstrip().split("\n", 1)[0]
        if has_fix_wording(title, fix_wording):
            return True
    elif has_fix_wording(subject, fix_wording):
        return True
    return FIXES_ISSUE.search(body) is not None
