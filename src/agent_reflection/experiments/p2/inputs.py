"""P2's inputs: the history its signals are derived from, and CI results, as frozen types
read from the database.

The I/O edge of :mod:`.analysis`: :func:`load_history` and :func:`load_ci_results` read with
the named queries of ``sql/experiments/p2_*.sql``; everything after them is pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from agent_reflection.errors import ReflectionError
from agent_reflection.experiments.p2.buckets import (
    CiResults,
    CiRun,
    Facts,
    ReviewEvidence,
    own_words,
)
from agent_reflection.experiments.p2.paths import matches
from agent_reflection.experiments.registration import P2Params
from agent_reflection.load.git.signals import derive_signals
from agent_reflection.store.db import read_sql

if TYPE_CHECKING:
    import duckdb

    from agent_reflection.reflection.risk_floor import RiskVerdict


@dataclass(frozen=True)
class Commit:
    repo: str
    sha: str
    at: datetime
    subject: str
    body: str
    is_merge: bool
    is_revert: bool
    is_reapply: bool
    pr_number: int | None
    cc_type: str | None
    is_fix_like: bool
    # ``Name <email>`` of the author and the committer, and the conventional scope
    author: str = ""
    committer: str = ""
    cc_scope: str | None = None


@dataclass(frozen=True)
class FileChange:
    path: str
    added: int | None
    deleted: int | None


@dataclass(frozen=True)
class Inducing:
    """One SZZ candidate of a fix: ``lines`` of its changed code lines blame to ``sha``."""

    sha: str
    lines: int
    is_merge: bool
    is_bulk: bool


@dataclass(frozen=True)
class DiffSummary:
    """A fix's (or revert's) diff, from ``fix_changes``: code lines vs whitespace/comment/doc-only
    lines; ``version_lines``: code lines that only set a version string; ``text_lines``: code
    lines changed only inside string literals or markup text (None: not loaded)."""

    code_lines: int
    cosmetic_lines: int
    version_lines: int | None = None
    text_lines: int | None = None

    @property
    def text_only(self) -> bool:
        """Every code line it changes changed only inside strings or markup text."""
        return self.text_lines is not None and 0 < self.code_lines == self.text_lines


@dataclass(frozen=True)
class History:
    """What P2 reads, keyed by (repo, sha); ``szz_repos``: repos loaded with ``--szz``, whose
    fixes have ``inducing`` candidates and ``diffs``; ``not_fix_by_wording``: commits the
    stored reading of the fix words calls fix-like and ``[p2] fix_wording`` does not."""

    commits: Mapping[tuple[str, str], Commit]
    files: Mapping[tuple[str, str], tuple[FileChange, ...]]
    inducing: Mapping[tuple[str, str], tuple[Inducing, ...]] = field(default_factory=dict)
    diffs: Mapping[tuple[str, str], DiffSummary] = field(default_factory=dict)
    szz_repos: frozenset[str] = frozenset()
    # commits whose stored is_fix_like (any fix word) the registered fix_wording does not keep
    not_fix_by_wording: frozenset[tuple[str, str]] = frozenset()
    # (repo, sha) -> (pull request, review events, comments): commits with review data
    reviews: Mapping[tuple[str, str], tuple[str, int, int]] = field(default_factory=dict)

    def review(self, repo: str, sha: str | None) -> ReviewEvidence | None:
        """The review evidence of a commit (None without review data for it)."""
        found = None if sha is None else self.reviews.get((repo, sha))
        if found is None or sha is None:
            return None
        lines = sum((f.added or 0) + (f.deleted or 0) for f in self.files.get((repo, sha), ()))
        return ReviewEvidence(found[0], found[1], found[2], lines)

    def paths(self, repo: str, sha: str) -> list[str]:
        return [f.path for f in self.files.get((repo, sha), ())]

    def facts(
        self,
        repo: str,
        fixing_sha: str,
        non_code_paths: tuple[str, ...],
        *,
        failing_risk: RiskVerdict | None,
        failing_review: ReviewEvidence | None = None,
    ) -> Facts:
        """What the rules' conditions see of the counted signal whose fix is ``fixing_sha``:
        a new fact a condition needs is read into :class:`Commit` and filled here."""
        fixing = self.commits[(repo, fixing_sha)]
        return Facts(
            code_paths=tuple(
                path for path in self.paths(repo, fixing_sha) if not matches(path, non_code_paths)
            ),
            message=own_words(fixing.subject, fixing.body),
            failing_risk=failing_risk,
            failing_review=failing_review,
        )


class WindowPastBlameHorizon(ReflectionError, ValueError):
    """P2's window reaches further back than the SZZ blames of a repository were run."""


def check_blame_horizon(con: duckdb.DuckDBPyConnection, p: P2Params) -> None:
    """Refuse a window wider than the blame horizon a repository's SZZ rows were loaded with:
    blame stopped there, so introducing commits older than it are not named and the signals of
    the wider window would be silently undercounted."""
    for repo, horizon in con.execute(read_sql("experiments/p2_szz_horizons.sql")).fetchall():
        if horizon is not None and p.window_days > float(horizon):
            raise WindowPastBlameHorizon(
                f"P2's window_days = {p.window_days} reaches past the {horizon:g}-day blame "
                f"horizon repo {repo!r} was attributed with (`reflect load git --szz` blames "
                "back as far as the widest registered window, then stops): introducing commits "
                f"older than {horizon:g} days were not named. Fix: load the repository with "
                "--szz into a new database under a registration whose windows reach "
                f"{p.window_days} days, or run P2 with window_days <= {horizon:g}"
            )


def load_history(con: duckdb.DuckDBPyConnection, p: P2Params) -> History:
    """Commits, files and (when loaded with ``--szz``) the SZZ tables; a window wider than a
    repository's blame horizon is refused (:func:`check_blame_horizon`)."""
    commits: dict[tuple[str, str], Commit] = {}
    not_fix_by_wording: set[tuple[str, str]] = set()
    for r in con.execute(
        read_sql("experiments/p2_commits.sql"), {"time_column": p.time_column}
    ).fetchall():
        key = (str(r[0]), str(r[1]))
        subject, body = str(r[3]), str(r[4] or "")
        # the stored column reads fix words anywhere; the pre-registration may read fewer
        is_fix_like = bool(r[10])
        if is_fix_like and p.fix_wording != "word":
            is_fix_like = derive_signals(subject, body, p.fix_wording).is_fix_like
            if not is_fix_like:
                not_fix_by_wording.add(key)
        commits[key] = Commit(
            repo=key[0],
            sha=key[1],
            at=r[2],
            subject=subject,
            body=body,
            is_merge=bool(r[5]),
            is_revert=bool(r[6]),
            is_reapply=bool(r[7]),
            pr_number=None if r[8] is None else int(r[8]),
            cc_type=r[9],
            is_fix_like=is_fix_like,
            author=str(r[11]),
            committer=str(r[12]),
            cc_scope=r[13],
        )
    files: dict[tuple[str, str], list[FileChange]] = {}
    for repo, sha, path, added, deleted in con.execute(
        read_sql("experiments/p2_files.sql")
    ).fetchall():
        files.setdefault((repo, sha), []).append(FileChange(path, added, deleted))
    tables = {r[0] for r in con.execute(read_sql("experiments/p2_szz_tables.sql")).fetchall()}
    szz_repos: set[str] = set()
    inducing: dict[tuple[str, str], list[Inducing]] = {}
    diffs: dict[tuple[str, str], DiffSummary] = {}
    if {"fix_inducing", "fix_changes"} <= tables:
        check_blame_horizon(con, p)
        szz_repos = {r[0] for r in con.execute(read_sql("experiments/p2_szz_repos.sql")).fetchall()}
        for repo, fix, sha, lines, is_merge, is_bulk in con.execute(
            read_sql("experiments/p2_inducing.sql")
        ).fetchall():
            inducing.setdefault((repo, fix), []).append(
                Inducing(sha, int(lines), bool(is_merge), bool(is_bulk))
            )
        for repo, fix, code, cosmetic, version, text in con.execute(
            read_sql("experiments/p2_fix_changes.sql")
        ).fetchall():
            diffs[(repo, fix)] = DiffSummary(
                int(code or 0),
                int(cosmetic or 0),
                None if version is None else int(version),
                None if text is None else int(text),
            )
    reviews: dict[tuple[str, str], tuple[str, int, int]] = {}
    board = {r[0] for r in con.execute(read_sql("experiments/p2_review_tables.sql")).fetchall()}
    if len(board) == 3:  # tasks, task_events, task_commits: a board is loaded
        for repo, sha, n_reviews, n_comments, pull_request in con.execute(
            read_sql("experiments/p2_reviews.sql")
        ).fetchall():
            reviews[(str(repo), str(sha))] = (str(pull_request), int(n_reviews), int(n_comments))
    return History(
        reviews=reviews,
        commits=commits,
        files={k: tuple(v) for k, v in files.items()},
        inducing={k: tuple(v) for k, v in inducing.items()},
        diffs=diffs,
        szz_repos=frozenset(szz_repos),
        not_fix_by_wording=frozenset(not_fix_by_wording),
    )


def load_ci_results(con: duckdb.DuckDBPyConnection, p: P2Params) -> CiResults:
    """CI results by commit (``ci_runs``) and the parents of every commit; empty when no CI
    result is loaded or ``ci_failed_conclusions`` is empty (CI is then inferred)."""
    if not p.ci_failed_conclusions:
        return CiResults()
    tables = {r[0] for r in con.execute(read_sql("experiments/p2_ci_tables.sql")).fetchall()}
    if "ci_runs" not in tables:  # a database written before ci_runs existed
        return CiResults()
    by_sha: dict[str, list[CiRun]] = {}
    for sha, kind, name, conclusion in con.execute(
        read_sql("experiments/p2_ci_runs.sql")
    ).fetchall():
        by_sha.setdefault(str(sha), []).append(CiRun(str(kind), str(name), conclusion))
    if not by_sha:
        return CiResults()
    parents = {
        str(sha): tuple(str(x).lower() for x in ps)
        for sha, ps in con.execute(read_sql("experiments/p2_parents.sql")).fetchall()
    }
    return CiResults({k: tuple(v) for k, v in by_sha.items()}, parents)
