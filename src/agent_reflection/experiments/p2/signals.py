"""P2 failure signals from git history: which commits repair a failure, and what introduced it.

Pure functions over a :class:`~.inputs.History` (commits, their files, the SZZ attribution of
fixes).
Every candidate gets a **category**; only ``revert`` and ``fix-after-feature`` are counted
(bucketed by :mod:`agent_reflection.experiments.p2.buckets`):

- ``revert``: a revert whose target commit is found (by the ``This reverts commit`` hash, else the
  PR number, else the quoted subject) and which nobody undid later;
- ``cancelled``: a revert that was itself reverted or reapplied, and the reapply itself;
- ``revert-unresolved``: a revert whose target is not in the data (listed, not bucketed);
- ``fix-after-feature``: a fix-like commit whose SZZ-introducing commit (most blamed lines among
  the qualifying ones) is a feature change at most ``window_days`` earlier;
- ``cosmetic``: such a fix, or a revert of such a change, that is typo/whitespace/docstring/
  formatting/lint work (from the diff and the message; see the pre-registration);
- ``duplicate``: a fix with the same subject and introducing commit as an earlier one (the same
  fix cherry-picked to another branch), so each fix is counted once;
- ``not-a-fix``: such a fix or revert that is a release (every code line it changes only sets a
  version string) or that adds a test (changes only tests, its subject says it adds one); and,
  where registered, one made by a bot, a dependency bump or a release by the rules of
  :mod:`agent_reflection.load.git.kinds` (the one home of those rules);
- ``out-of-window``: a revert more than ``window_days`` after its target (``revert_window``:
  reverts get the window fixes have).

A fix whose SZZ-introducing commit is an earlier fix in the window (``fix_of_fix =
"failure-of-first-fix"``) is a failure of that first fix: counted as ``fix-after-feature`` with
rule ``szz-fix-of-fix-in-window`` and the first fix as its introducing commit; a chain (a fix of
that fix, and so on) is counted once, its later links ``duplicate`` (rule ``fix-chain``).

In a repo loaded without ``--szz`` (no ``fix_inducing`` rows) a fix is paired with the latest
feature change in the window that shares a code file with it: the old, imprecise rule, named
``file-overlap`` on every such signal and in the report's notes.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from agent_reflection.experiments.p2.inputs import Commit, History, Inducing
from agent_reflection.experiments.p2.paths import matches
from agent_reflection.experiments.registration import P2Params
from agent_reflection.load.git.agents import identity_agent
from agent_reflection.load.git.kinds import classify_commit
from agent_reflection.load.git.signals import revert_reference

REVERT = "revert"
FIX_AFTER_FEATURE = "fix-after-feature"
COSMETIC = "cosmetic"
CANCELLED = "cancelled"
UNRESOLVED = "revert-unresolved"
DUPLICATE = "duplicate"
NOT_A_FIX = "not-a-fix"
OUT_OF_WINDOW = "out-of-window"
#: Categories in report order; only the first two are counted and bucketed.
CATEGORIES = (
    REVERT,
    FIX_AFTER_FEATURE,
    COSMETIC,
    NOT_A_FIX,
    CANCELLED,
    UNRESOLVED,
    DUPLICATE,
    OUT_OF_WINDOW,
)
COUNTED = (REVERT, FIX_AFTER_FEATURE)

_REAPPLY_QUOTED = re.compile(r'^Reapply\s+"(?P<subject>.+)"\s*(?:\(#\d{1,9}\))?\s*$', re.I)
_PR_SUFFIX = re.compile(r"\s*\(#\d{1,9}\)\s*$")


def same_subject(subject: str) -> str:
    """A subject without GitHub's `` (#N)`` suffix: a squash merge and its PR's commit, or a
    revert's quoted subject and its target, compare equal."""
    return _PR_SUFFIX.sub("", subject.strip()).strip()


@dataclass(frozen=True)
class Signal:
    repo: str
    kind: str  # "revert" or "fix"
    fixing_sha: str
    at: datetime
    subject: str
    introducing_sha: str | None
    category: str
    category_rule: str
    why: str
    resolved_by: str | None = None  # how a revert's target was found
    blamed_lines: int | None = None
    gap_days: float | None = None


def feature_reason(c: Commit, p: P2Params) -> str | None:
    """Why ``c`` is a feature change under the pre-registered definition, or None."""
    if c.is_revert:
        return None
    if c.cc_type is not None and c.cc_type in p.feature_cc_types:
        return f"{c.cc_type} commit"
    if c.is_fix_like and p.exclude_fix_like_introducers:
        return None
    if c.cc_type is not None and c.cc_type in p.non_feature_cc_types:
        return None
    if p.feature_merged_pr and c.pr_number is not None:
        return f"merged PR #{c.pr_number}"
    if p.feature_direct_commits and not c.is_merge:
        return "direct commit"
    return None


def find_signals(history: History, p: P2Params) -> list[Signal]:
    """Every candidate signal with its category, in (repo, time, sha) order."""
    signals = revert_signals(history, p) + fix_signals(history, p)
    return _mark_duplicates(history, sorted(signals, key=lambda s: (s.repo, s.at, s.fixing_sha)))


def _mark_duplicates(history: History, signals: list[Signal]) -> list[Signal]:
    first: dict[tuple[str, str, str], Signal] = {}
    out: list[Signal] = []
    for s in signals:
        if s.kind != "fix" or s.introducing_sha is None:
            out.append(s)
            continue
        key = (s.repo, same_subject(s.subject), s.introducing_sha)
        earlier = first.setdefault(key, s)
        if earlier is s:
            out.append(s)
            continue
        out.append(
            replace(
                s,
                category=DUPLICATE,
                category_rule="same-fix-again",
                why=f"same subject and introducing commit as {earlier.fixing_sha[:10]}: the same "
                "fix on another branch, counted once",
            )
        )
    return out


# --- reverts ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Index:
    by_prefix: Mapping[str, Sequence[Commit]]
    by_pr: Mapping[int, Sequence[Commit]]
    by_subject: Mapping[str, Sequence[Commit]]


def _index(commits: Sequence[Commit]) -> _Index:
    by_prefix: dict[str, list[Commit]] = defaultdict(list)
    by_pr: dict[int, list[Commit]] = defaultdict(list)
    by_subject: dict[str, list[Commit]] = defaultdict(list)
    for c in commits:
        by_prefix[c.sha[:7]].append(c)
        if c.pr_number is not None:
            by_pr[c.pr_number].append(c)
        by_subject[same_subject(c.subject)].append(c)
    return _Index(by_prefix, by_pr, by_subject)


def _latest_before(candidates: Sequence[Commit], revert: Commit) -> Commit | None:
    earlier = [c for c in candidates if c.sha != revert.sha and c.at <= revert.at]
    return max(earlier, key=lambda c: (c.at, c.sha)) if earlier else None


def resolve_target(revert: Commit, index: _Index) -> tuple[Commit | None, str]:
    """The commit a revert (or reapply) undoes and how it was found."""
    ref = revert_reference(revert.subject, revert.body)
    if ref.sha is not None:
        hits = [c for c in index.by_prefix.get(ref.sha[:7], ()) if c.sha.startswith(ref.sha)]
        if len(hits) == 1:
            return hits[0], "hash"
    if ref.pr_number is not None:
        target = _latest_before(index.by_pr.get(ref.pr_number, ()), revert)
        if target is not None:
            return target, f"PR #{ref.pr_number}"
    subject = ref.subject
    if subject is None:
        reapply = _REAPPLY_QUOTED.match(revert.subject.strip())
        # ``Reapply "x"`` undoes the revert ``Revert "x"``.
        subject = f'Revert "{reapply.group("subject").strip()}"' if reapply else None
    if subject is not None:
        target = _latest_before(index.by_subject.get(same_subject(subject), ()), revert)
        if target is not None:
            return target, "subject"
    return None, "not found"


def revert_signals(history: History, p: P2Params) -> list[Signal]:
    by_repo: dict[str, list[Commit]] = defaultdict(list)
    for c in history.commits.values():
        by_repo[c.repo].append(c)
    out: list[Signal] = []
    for _, commits in sorted(by_repo.items()):
        index = _index(commits)
        reverts = sorted((c for c in commits if c.is_revert), key=lambda c: (c.at, c.sha))
        targets = {r.sha: resolve_target(r, index) for r in reverts}
        # Who undoes each commit: a later revert/reapply whose target it is.
        undone_by: dict[str, Commit] = {}
        for r in reverts:
            target, _ = targets[r.sha]
            if target is not None and target.sha not in undone_by:
                undone_by[target.sha] = r
        for r in reverts:
            target, how = targets[r.sha]
            twin = _twin(index, target, r, p) if target is not None else None
            out.append(_revert_signal(history, p, r, target, how, undone_by.get(r.sha), twin))
    return out


def _revert_signal(
    history: History,
    p: P2Params,
    r: Commit,
    target: Commit | None,
    how: str,
    undone_by: Commit | None,
    twin: Commit | None = None,
) -> Signal:
    def make(category: str, rule: str, why: str) -> Signal:
        return Signal(
            repo=r.repo,
            kind="revert",
            fixing_sha=r.sha,
            at=r.at,
            subject=r.subject,
            introducing_sha=target.sha if target else None,
            category=category,
            category_rule=rule,
            why=why,
            resolved_by=how,
            gap_days=_days(target.at, r.at) if target else None,
        )

    if r.is_reapply or (target is not None and target.is_revert):
        return make(CANCELLED, "reapply", "re-applies a reverted change: not a failure")
    if undone_by is not None:
        return make(
            CANCELLED,
            "revert-undone",
            f"itself undone by {undone_by.sha[:10]} ({_days(r.at, undone_by.at):.1f} days "
            f"later): {undone_by.subject[:60]!r}",
        )
    if twin is not None:
        return make(
            CANCELLED,
            "revert-of-duplicate",
            f"the same change also landed as {twin.sha[:10]} ({_days(twin.at, r.at):+.1f} days "
            "from the revert): a duplicate or a move to another branch, not undone",
        )
    if target is None:
        return make(
            UNRESOLVED,
            "revert-target-not-found",
            "the reverted commit is not in the data (no hash, PR or subject match)",
        )
    paths = history.paths(r.repo, target.sha)
    if paths and all(matches(path, p.non_code_paths) for path in paths):
        return make(
            COSMETIC, "cosmetic-non-code", "the reverted change touches only non-code files"
        )
    diff = history.diffs.get((r.repo, r.sha))
    if diff is not None and diff.code_lines == 0:
        return make(
            COSMETIC,
            "cosmetic-diff",
            f"the revert changes no code line ({diff.cosmetic_lines} whitespace/comment/doc "
            "line(s))",
        )
    not_fix = not_a_fix_reason(history, p, r)
    if not_fix is not None:
        return make(NOT_A_FIX, *not_fix)
    gap = _days(target.at, r.at)
    if p.revert_window and gap > p.window_days:
        return make(
            OUT_OF_WINDOW,
            "revert-after-window",
            f"reverts {target.sha[:10]} {gap:.1f} days later, after the {p.window_days}-day "
            "window fixes have",
        )
    return make(REVERT, "revert", f"reverts {target.sha[:10]} (found by {how})")


def _twin(index: _Index, target: Commit, revert: Commit, p: P2Params) -> Commit | None:
    """Another non-revert commit with the target's subject within ``window_days`` of the revert."""
    window = timedelta(days=p.window_days)
    twins = [
        c
        for c in index.by_subject.get(same_subject(target.subject), ())
        if c.sha not in (target.sha, revert.sha)
        and not c.is_revert
        and not c.is_merge
        and abs(c.at - revert.at) <= window
    ]
    return min(twins, key=lambda c: (abs(c.at - revert.at), c.sha)) if twins else None


# --- fixes -----------------------------------------------------------------------------------


def fix_signals(history: History, p: P2Params) -> list[Signal]:
    """Fix-like commits whose introducing commit is a feature change in the window."""
    out: list[Signal] = []
    window = timedelta(days=p.window_days)
    features = _features_by_repo(history, p)
    # fix-of-fix chains: each fix counted as a failure of a first fix -> that first fix
    chain_root: dict[tuple[str, str], str] = {}
    for (repo, sha), c in sorted(
        history.commits.items(), key=lambda kv: (kv[0][0], kv[1].at, kv[0][1])
    ):
        if not c.is_fix_like or c.is_revert or c.is_merge:
            continue
        chained = False
        if repo in history.szz_repos:
            found = _szz_introducer(history, p, c, window)
            if found is None and p.fix_of_fix == "failure-of-first-fix":
                found = _szz_fix_introducer(history, p, c, window)
                chained = found is not None
        else:
            found = _overlap_introducer(history, p, c, window, features.get(repo, []))
        if found is None:
            continue
        introducer, lines, how = found
        cosmetic = cosmetic_reason(history, p, c)
        not_fix = None if cosmetic else not_a_fix_reason(history, p, c)
        category, rule, why = FIX_AFTER_FEATURE, how, ""
        if cosmetic:
            category, rule, why = COSMETIC, *cosmetic
        elif not_fix:
            category, rule, why = NOT_A_FIX, *not_fix
        elif chained:
            root = chain_root.get((repo, introducer.sha))
            chain_root[(repo, sha)] = root or introducer.sha
            gap = _days(introducer.at, c.at)
            if root is not None:
                category, rule = DUPLICATE, "fix-chain"
                why = (
                    f"fixes {introducer.sha[:10]}, itself a fix of the first fix {root[:10]}: "
                    "the chain is one failure of that fix, counted once"
                )
            else:
                why = (
                    f"{lines} blamed line(s) from the earlier fix {introducer.sha[:10]} "
                    f"({gap:.1f} days earlier): a failure of that fix"
                )
        else:
            reason = feature_reason(introducer, p)
            blamed = f"{lines} blamed line(s) from" if lines is not None else "a code file of"
            gap = _days(introducer.at, c.at)
            why = f"{blamed} {introducer.sha[:10]} ({reason}, {gap:.1f} days earlier)"
        out.append(
            Signal(
                repo=repo,
                kind="fix",
                fixing_sha=sha,
                at=c.at,
                subject=c.subject,
                introducing_sha=introducer.sha,
                category=category,
                category_rule=rule,
                why=why,
                blamed_lines=lines,
                gap_days=_days(introducer.at, c.at),
            )
        )
    return out


def _most_blamed(
    history: History,
    fix: Commit,
    window: timedelta,
    skip: Callable[[Inducing], bool],
    accept: Callable[[Commit], bool],
) -> tuple[Commit, int] | None:
    """The SZZ candidate of ``fix`` in the window that most of its blamed lines come from (then
    the latest, then the highest sha), among the candidates ``skip`` keeps whose commit
    ``accept`` takes."""
    best: tuple[int, datetime, str, Commit] | None = None
    for cand in history.inducing.get((fix.repo, fix.sha), ()):
        if skip(cand):
            continue
        earlier = history.commits.get((fix.repo, cand.sha))
        if earlier is None or not (fix.at - window <= earlier.at < fix.at):
            continue
        if not accept(earlier):
            continue
        key = (cand.lines, earlier.at, earlier.sha, earlier)
        if best is None or key[:3] > best[:3]:
            best = key
    return None if best is None else (best[3], best[0])


def _szz_introducer(
    history: History, p: P2Params, fix: Commit, window: timedelta
) -> tuple[Commit, int | None, str] | None:
    found = _most_blamed(
        history,
        fix,
        window,
        lambda c: (
            (c.is_bulk and p.exclude_bulk_introducers)
            or (c.is_merge and p.exclude_merge_introducers)
        ),
        lambda introducer: feature_reason(introducer, p) is not None,
    )
    return None if found is None else (*found, "szz-feature-in-window")


def _szz_fix_introducer(
    history: History, p: P2Params, fix: Commit, window: timedelta
) -> tuple[Commit, int | None, str] | None:
    """The earlier fix in the window most of ``fix``'s blamed lines come from (not a bot's,
    a bump or a release, not a revert or merge), for ``fix_of_fix = failure-of-first-fix``."""
    found = _most_blamed(
        history,
        fix,
        window,
        lambda c: (c.is_bulk and p.exclude_bulk_introducers) or c.is_merge,
        lambda earlier: (
            earlier.is_fix_like
            and not earlier.is_revert
            and not earlier.is_merge
            and kind_reason(history, p, earlier, every_kind=True) is None
        ),
    )
    return None if found is None else (*found, "szz-fix-of-fix-in-window")


def kind_reason(
    history: History, p: P2Params, c: Commit, *, every_kind: bool = False
) -> tuple[str, str] | None:
    """(rule, why) when ``c`` is a bot's commit, a dependency bump or a release by
    :func:`~agent_reflection.load.git.kinds.classify_commit` and the pre-registration leaves
    that kind out (``exclude_bots``, ``exclude_dependency_bumps``, ``exclude_releases``; with
    ``every_kind``, any of them)."""
    diff = history.diffs.get((c.repo, c.sha))
    version_only = (
        None
        if diff is None or diff.version_lines is None
        else 0 < diff.code_lines == diff.version_lines
    )
    kind = classify_commit(
        p.kind_rules,
        author=c.author,
        committer=c.committer,
        subject=c.subject,
        body=c.body,
        cc_type=c.cc_type,
        cc_scope=c.cc_scope,
        paths=history.paths(c.repo, c.sha),
        version_only=version_only,
        agent_identity=identity_agent(c.author, c.committer) is not None,
    )
    excluded = {
        "bot": p.exclude_bots,
        "dependency-bump": p.exclude_dependency_bumps,
        "release": p.exclude_releases,
    }
    if kind.kind is None or not (every_kind or excluded[kind.kind]):
        return None
    return f"{kind.kind}:{kind.rule}", f"{kind.why}: a {kind.kind} commit, not a repair"


def _features_by_repo(history: History, p: P2Params) -> dict[str, list[Commit]]:
    out: dict[str, list[Commit]] = defaultdict(list)
    for c in history.commits.values():
        if feature_reason(c, p) is not None:
            out[c.repo].append(c)
    return out


def _overlap_introducer(
    history: History, p: P2Params, fix: Commit, window: timedelta, features: list[Commit]
) -> tuple[Commit, int | None, str] | None:
    code = {f for f in history.paths(fix.repo, fix.sha) if not matches(f, p.non_code_paths)}
    best: Commit | None = None
    for feat in features:
        if not (fix.at - window <= feat.at < fix.at) or feat.sha == fix.sha:
            continue
        if code & set(history.paths(feat.repo, feat.sha)) and (
            best is None or (feat.at, feat.sha) > (best.at, best.sha)
        ):
            best = feat
    return (best, None, "file-overlap-feature-in-window") if best is not None else None


def cosmetic_reason(history: History, p: P2Params, fix: Commit) -> tuple[str, str] | None:
    """(rule, why) when the fix is cosmetic: non-code files, a diff without code lines, lint
    words; typo words only when the diff is not loaded, or (``cosmetic_typo_text_only``) when
    its every changed code line changed only inside strings or markup text (see the
    pre-registration)."""
    paths = history.paths(fix.repo, fix.sha)
    if paths and all(matches(path, p.non_code_paths) for path in paths):
        return "cosmetic-non-code", "changes only non-code files"
    diff = history.diffs.get((fix.repo, fix.sha))
    if diff is not None and diff.code_lines == 0:
        return "cosmetic-diff", (
            f"changes no code line ({diff.cosmetic_lines} whitespace/comment/doc line(s))"
        )
    message = f"{fix.subject}\n{fix.body}"
    lint = re.search(p.cosmetic_lint_message, message, re.IGNORECASE)
    if lint is not None:
        return "cosmetic-lint", f"message says {lint.group(0)!r}: lint/format/annotation work"
    typo = re.search(p.cosmetic_typo_message, message, re.IGNORECASE)
    if typo is None:
        return None
    if fix.repo not in history.szz_repos:
        return "cosmetic-typo", f"message says {typo.group(0)!r} (SZZ diff not loaded)"
    if p.cosmetic_typo_text_only and diff is not None and diff.text_only:
        return "cosmetic-typo-text", (
            f"message says {typo.group(0)!r} and each of its {diff.code_lines} changed code"
            " line(s) changed only inside a string literal or markup text"
        )
    return None


def not_a_fix_reason(history: History, p: P2Params, c: Commit) -> tuple[str, str] | None:
    """(rule, why) when a fix-like commit or a revert is no fix: a release (every code line it
    changes only sets a version string) or a new test (it changes only tests and its subject
    says it adds one); a bot's commit, a dependency bump or a release (:func:`kind_reason`).
    Pre-registered: ``exclude_version_bumps``, ``new_test_message``, ``exclude_bots``,
    ``exclude_dependency_bumps``, ``exclude_releases``."""
    diff = history.diffs.get((c.repo, c.sha))
    if (
        p.exclude_version_bumps
        and diff is not None
        and diff.version_lines is not None
        and 0 < diff.code_lines == diff.version_lines
    ):
        return "version-bump", (
            f"every code line it changes ({diff.code_lines}) only sets a version string: a release"
        )
    code = [f for f in history.paths(c.repo, c.sha) if not matches(f, p.non_code_paths)]
    if (
        p.new_test_message
        and code
        and all(matches(f, p.test_paths) for f in code)
        and re.search(p.new_test_message, c.subject, re.IGNORECASE) is not None
    ):
        return "new-test", "changes only tests and its subject says it adds a test: no failure"
    return kind_reason(history, p, c)


def _days(start: datetime, end: datetime) -> float:
    return (end - start).total_seconds() / 86400
