"""P2's inputs from the database: the history its signals are derived from, and CI results.

The I/O edge of :mod:`.analysis`: everything below is read with the named queries of
``sql/experiments/p2_*.sql`` into the frozen types of :mod:`.signals` and :mod:`.buckets`.
"""

from __future__ import annotations

import duckdb

from agent_reflection.experiments.p2.buckets import (
    CiResults,
    CiRun,
)
from agent_reflection.experiments.p2.signals import (
    Commit,
    DiffSummary,
    FileChange,
    History,
    Inducing,
)
from agent_reflection.experiments.registration import (
    P2Params,
)
from agent_reflection.load.git.signals import derive_signals
from agent_reflection.store.db import read_sql


def load_history(con: duckdb.DuckDBPyConnection, p: P2Params) -> History:
    """Commits, files and (when loaded with ``--szz``) the SZZ tables."""
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
    return History(
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
