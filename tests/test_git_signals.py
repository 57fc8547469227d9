"""Table-driven tests of the commit-message signals (agent_reflection.load.git.signals)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_reflection.load.git.signals import (
    CC_TYPES,
    SIGNALS_VERSION,
    CommitSignals,
    derive_signals,
    revert_reference,
)

SHA40 = "4f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c"

# (id, subject, body, expected is_revert, expected reverts_sha, expected is_reapply)
REVERTS = [
    ("git-revert", 'Revert "Add a thing"', f"This reverts commit {SHA40}.\n", True, SHA40, False),
    ("short-sha", 'Revert "x"', "This reverts commit abc1234.", True, "abc1234", False),
    (
        "merge-revert",
        'Revert "Merge pull request #5 from a/b"',
        f"This reverts commit {SHA40}, reversing\nchanges made to 1234567890abcdef.\n",
        True,
        SHA40,
        False,
    ),
    ("uppercase-hex-lowered", "Undo", "This reverts commit ABCDEF1.", True, "abcdef1", False),
    ("six-hex-too-short", "Undo", "This reverts commit abcdef.", False, None, False),
    ("41-hex-too-long", "Undo", "This reverts commit " + "a" * 41 + ".", False, None, False),
    ("hex-then-letters", "Undo", "This reverts commit abcdef1xyz.", False, None, False),
    ("subject-only", 'Revert "Add a thing"', "", True, None, False),
    ("cc-revert", "revert: add a thing", "", True, None, False),
    ("cc-revert-scope", "revert(api): add a thing", "", True, None, False),
    ("reverted-word-not-revert", "Reverted flaky test timeout", "", False, None, False),
    ("revert-mid-subject", 'Add "Revert" button', "", False, None, False),
    (
        "reapply-git243",
        'Reapply "Add a thing"',
        f"This reverts commit {SHA40}.\n",
        True,
        SHA40,
        True,
    ),
    (
        "revert-of-revert",
        'Revert "Revert "Add a thing""',
        "This reverts commit 1234567.",
        True,
        "1234567",
        True,
    ),
    ("reapply-bare-word", "Reapply formatting", "", False, None, False),
    (
        "first-of-two",
        "Revert two",
        "This reverts commit 1111111.\nThis reverts commit 2222222.",
        True,
        "1111111",
        False,
    ),
    ("plain", "Add a thing", "Some body text.", False, None, False),
]


@pytest.mark.parametrize(
    ("subject", "body", "is_revert", "sha", "is_reapply"),
    [case[1:] for case in REVERTS],
    ids=[case[0] for case in REVERTS],
)
def test_revert_signals(
    subject: str, body: str, is_revert: bool, sha: str | None, is_reapply: bool
) -> None:
    got = derive_signals(subject, body)
    assert (got.is_revert, got.reverts_sha, got.is_reapply) == (is_revert, sha, is_reapply)


PRS = [
    ("merge-pr", "Merge pull request #4821 from pallets/fix-x", 4821),
    ("squash", "Fix the loader (#123)", 123),
    ("squash-trailing-space", "Fix the loader (#123)  ", 123),
    ("number-mid-subject", "Fix #12 and more", None),
    ("paren-not-at-end", "Fix (#12) the loader", None),
    ("merge-branch", "Merge branch 'main' into dev", None),
    ("merge-pr-no-from", "Merge pull request #12", 12),
    ("merge-pr-digits-run-on", "Merge pull request #12a from x", None),
    ("zero", "Thing (#0)", None),
    ("too-big", "Thing (#9999999999)", None),
    ("plain", "Add a thing", None),
]


@pytest.mark.parametrize(("subject", "pr"), [c[1:] for c in PRS], ids=[c[0] for c in PRS])
def test_pr_number(subject: str, pr: int | None) -> None:
    assert derive_signals(subject, "").pr_number == pr


# (id, subject, body, cc_type, cc_scope, cc_breaking)
CONVENTIONAL = [
    ("feat", "feat: add x", "", "feat", None, False),
    ("scope-bang", "feat(api)!: drop v1", "", "feat", "api", True),
    ("bang-no-scope", "refactor!: drop py2", "", "refactor", None, True),
    ("upper-type", "FIX: crash", "", "fix", None, False),
    ("footer", "feat: new config", "Body.\n\nBREAKING CHANGE: config moved", "feat", None, True),
    ("footer-hyphen", "chore: x", "BREAKING-CHANGE: gone", "chore", None, True),
    ("footer-not-at-line-start", "chore: x", "no BREAKING CHANGE: here", "chore", None, False),
    ("footer-without-cc", "Move config", "BREAKING CHANGE: moved", None, None, True),
    ("empty-scope", "docs(): tidy", "", "docs", None, False),
    ("scope-spaces", "test( loader ): more", "", "test", "loader", False),
    ("unknown-type", "http: fix redirect", "", None, None, False),
    ("note-prefix", "Note: nothing", "", None, None, False),
    ("no-space-after-colon", "feat:add x", "", None, None, False),
    ("no-description", "feat: ", "", None, None, False),
    ("nested-parens", "feat(a(b)): x", "", None, None, False),
    ("plain", "Add a thing", "", None, None, False),
]


@pytest.mark.parametrize(
    ("subject", "body", "cc_type", "cc_scope", "cc_breaking"),
    [c[1:] for c in CONVENTIONAL],
    ids=[c[0] for c in CONVENTIONAL],
)
def test_conventional_commit(
    subject: str, body: str, cc_type: str | None, cc_scope: str | None, cc_breaking: bool
) -> None:
    got = derive_signals(subject, body)
    assert (got.cc_type, got.cc_scope, got.cc_breaking) == (cc_type, cc_scope, cc_breaking)


FIX_LIKE = [
    ("fix", "Fix crash on empty input", "", True),
    ("fixes", "Fixes crash", "", True),
    ("fixed", "fixed crash", "", True),
    ("fixing", "Fixing the tests", "", True),
    ("hotfix", "Hotfix for 2.0", "", True),
    ("hot-fix", "hot-fix release", "", True),
    ("bugfix", "Bugfix: off by one", "", True),
    ("bug-fix", "bug-fix in parser", "", True),
    ("bug fix", "Small bug fix", "", True),
    ("cc-fix", "fix(parser): off by one", "", True),
    ("mid-subject", "Parser: fix off by one", "", True),
    ("body-fixes-issue", "Handle empty input", "Fixes #123", True),
    ("body-fixes-cross-repo", "Handle empty input", "fixes pallets/flask#12", True),
    ("body-fix-url", "Handle it", "Fix https://github.com/o/r/issues/4", True),
    ("pr-merge-title", "Merge pull request #3 from a/branch", "Fix login redirect\n", True),
    ("pr-merge-branch-name-only", "Merge pull request #3 from a/fix-login", "Add login\n", False),
    ("prefix", "Strip URL prefix", "", False),
    ("suffix", "Add suffix option", "", False),
    ("fixture", "Add fixture for app", "", False),
    ("fixtures", "Move fixtures", "", False),
    ("fixity", "Fixity of the API", "", False),
    ("fixup", "fixup! Add a thing", "", False),
    ("fix-up", "Fix-up the docs layout", "", False),
    ("fixed-width", "Use fixed-width font", "", False),
    ("body-mention-not-issue", "Refactor", "This also fixes things.", False),
    ("revert-of-fix", 'Revert "Fix crash"', "This reverts commit 1234567.", False),
    ("revert-body-fixes-issue", 'Revert "Add x"', "This reverts commit 1234567.\nFixes #9", True),
    ("debugging", "Improve debugging output", "", False),
    ("plain", "Add a thing", "", False),
]


@pytest.mark.parametrize(
    ("subject", "body", "expected"), [c[1:] for c in FIX_LIKE], ids=[c[0] for c in FIX_LIKE]
)
def test_is_fix_like(subject: str, body: str, expected: bool) -> None:
    assert derive_signals(subject, body).is_fix_like is expected


def test_signals_are_frozen_and_versioned() -> None:
    got = derive_signals("feat: x", "")
    assert isinstance(got, CommitSignals)
    assert got.version == SIGNALS_VERSION
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.is_revert = True  # type: ignore[misc]


def test_subject_whitespace_is_ignored() -> None:
    assert derive_signals("  feat(x): y  \n", "") == derive_signals("feat(x): y", "")


@given(subject=st.text(max_size=200), body=st.text(max_size=600))
@settings(max_examples=300, deadline=None)
def test_any_message_gives_consistent_signals(subject: str, body: str) -> None:
    got = derive_signals(subject, body)
    if got.reverts_sha is not None:
        assert 7 <= len(got.reverts_sha) <= 40
        assert set(got.reverts_sha) <= set("0123456789abcdef")
        assert got.reverts_sha in (subject + "\n" + body).lower()
        assert got.is_revert
    if got.is_reapply:
        assert got.is_revert
    if got.cc_type is not None:
        assert got.cc_type in CC_TYPES
    else:
        assert got.cc_scope is None
    if got.pr_number is not None:
        assert 0 < got.pr_number < 2**31 and str(got.pr_number) in subject


@given(sha=st.text(alphabet="0123456789abcdef", min_size=7, max_size=40))
def test_git_revert_message_round_trip(sha: str) -> None:
    body = f"This reverts commit {sha}, reversing\nchanges made to {'1' * 40}.\n"
    got = derive_signals('Revert "Merge pull request #7 from a/b"', body)
    assert (got.is_revert, got.reverts_sha, got.pr_number) == (True, sha, None)


@pytest.mark.parametrize(
    ("subject", "body", "expected"),
    [
        ('Revert "Add a thing"', f"This reverts commit {SHA40}.", (SHA40, "Add a thing", None)),
        ('Revert "Add x (#12)" (#15)', "", (None, "Add x (#12)", 12)),
        (
            'Revert "Merge pull request #12 from a/b"',
            "",
            (None, "Merge pull request #12 from a/b", 12),
        ),
        ('Revert "Addressing issue 9"', "", (None, "Addressing issue 9", None)),
        ('Revert "Add x"', "Reverts pallets/flask#2222", (None, "Add x", 2222)),
        ('Revert "Revert "x""', "", (None, 'Revert "x"', None)),
        ("revert: add x", "", (None, None, None)),
        ("Add a thing", "", (None, None, None)),
    ],
)
def test_revert_reference(subject: str, body: str, expected: tuple[object, ...]) -> None:
    ref = revert_reference(subject, body)
    assert (ref.sha, ref.subject, ref.pr_number) == expected


# The verb reading of the fix words ([p2] fix_wording = "verb"): a fix word counts where it acts
# as a verb. Nouns and adjectives name something; they do not say the commit repairs anything.
FIX_VERB = [
    ("opens-subject", "Fix crash on empty input", True),
    ("opens-after-tag", "Parser: fix off by one", True),
    ("opens-after-bracket-tag", "[docs] fix the example", True),
    ("after-comma", "Handle empty input, fixes #12", True),
    ("in-parentheses", "Handle empty input (fixes #12)", True),
    ("after-full-stop", "Refactor the loader. Fix the cache key", True),
    ("after-dash", "Loader - fix the cache key", True),
    ("after-plus", "Unit test + bug fix for add_foreign_keys", True),
    ("after-and", "Rename the flag and fix its default", True),
    ("infinitive", "Use os.fspath to fix Path arguments", True),
    ("modal", "This should fix the flaky test", True),
    ("subject-inflected", "This fixes the redirect", True),
    ("participle", "The redirect is fixed", True),
    ("closing-keyword", "safe_join on Windows uses posixpath fixes #2033", True),
    ("past-tense-opens", "Fixed typo in the docs", True),
    ("gerund-opens", "Fixing the tests", True),
    ("compound-opens", "Bugfix: off by one", True),
    ("article-noun", "P2: a fix cherry-picked to another branch counts once", False),
    ("with-the-fix", "one-line errors with the fix", False),
    ("modifier-noun", "session outcomes tests: revert, SZZ fix, quiet", False),
    ("hyphen-modifier-noun", "docs: measured revert diffs and version-only fixes", False),
    ("adjective", "git load fixed cost: lazy imports", False),
    ("adjective-delay", "tests: waits where a fixed delay could lose", False),
    ("this-fix-noun", "Explain this fix in the changelog", False),
    ("quoted", "Explain why 'fixed' matched", False),
    ("small-fixes", "Small fixes in the extension tester", False),
    ("names-the-fix", "settings: an unreadable settings file names the fix", False),
]


@pytest.mark.parametrize(
    ("subject", "expected"), [c[1:] for c in FIX_VERB], ids=[c[0] for c in FIX_VERB]
)
def test_the_verb_reading_of_the_fix_words(subject: str, expected: bool) -> None:
    assert derive_signals(subject, "", "verb").is_fix_like is expected
    assert derive_signals(subject, "", "word").is_fix_like  # every case has a fix word


def test_the_verb_reading_keeps_the_other_fix_signals() -> None:
    # a conventional fix type and a closing keyword in the body count under both readings
    assert derive_signals("fix(parser): off by one", "", "verb").is_fix_like
    assert derive_signals("Handle empty input", "Fixes #123", "verb").is_fix_like
    merge = ("Merge pull request #3 from a/branch", "Small fix for the login redirect\n")
    assert derive_signals(*merge, "word").is_fix_like
    assert not derive_signals(*merge, "verb").is_fix_like  # the PR title is read the same way
    with pytest.raises(ValueError, match="fix_wording must be one of word, verb"):
        derive_signals("Fix x", "", "noun")


#: Subjects made of fix words, cues, openers and filler, so most examples have a fix word.
FIX_PIECES = st.sampled_from(
    [
        "fix",
        "Fixes",
        "fixed",
        "fixing",
        "bug fix",
        "hotfix",
        "a",
        "the",
        "and",
        "to",
        "this",
        "is",
        ":",
        ",",
        "(",
        " - ",
        "+",
        "'",
        "x",
        "fix-up",
        "SZZ",
        "\n",
        'Revert "',
    ]
)


@given(
    subject=st.one_of(st.text(max_size=120), st.lists(FIX_PIECES, max_size=12).map(" ".join)),
    body=st.one_of(st.text(max_size=200), st.lists(FIX_PIECES, max_size=12).map(" ".join)),
)
@settings(max_examples=500, deadline=None)
def test_the_verb_reading_is_a_subset_of_the_word_reading(subject: str, body: str) -> None:
    # the git load's SZZ step blames every commit the word reading calls fix-like, so P2's
    # verb reading finds every fix it reads attributed
    verb = derive_signals(subject, body, "verb")
    word = derive_signals(subject, body, "word")
    assert not verb.is_fix_like or word.is_fix_like
    assert dataclasses.replace(verb, is_fix_like=word.is_fix_like) == word
