"""The one matcher that joins board tasks to commits and to sidecars.

Rules, applied to a commit's subject + body (and to a sidecar's ``task_ref``), first rule
wins for a given task:

``task-ref``
    A ``task_ref`` known in ``tasks`` from a generic or git-files board (``tasks/login.md``,
    ``T-7``...) written verbatim, not inside a longer word or path. Refs shorter than 3
    characters or all digits (``42``) are too generic and never matched this way.
``jira-key``
    ``[A-Z][A-Z0-9]+-\\d+`` (e.g. ``KAFKA-1234``) whose project (the part before ``-``) is a
    project of some ``jira`` task. The key itself need not be in ``tasks`` (boards are often
    partial exports), but ``FOO-1`` of an unknown project never matches (``UTF-8``, ``SHA-1``).
``github-ref``
    ``owner/repo#123`` whose ``owner/repo`` is the project of some ``github`` task, or a bare
    ``#123`` / ``GH-123`` in a commit of a repo whose name equals the repo part of exactly one
    known GitHub project (commits of repo ``flask`` resolve ``#123`` to
    ``pallets/flask#123``). A bare number in a sidecar's task_ref is never matched.

Sidecars: a ``reflections.task_ref`` equal to a ``tasks.task_ref`` matches ``exact``;
otherwise the rules above run on it (``flask@fix/KAFKA-12-npe`` -> ``KAFKA-12``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import duckdb
import pyarrow as pa

from agent_reflection.store.db import LoadSummary, begin_load, read_sql, registered

JIRA_KEY = re.compile(r"(?<![A-Za-z0-9_-])([A-Z][A-Z0-9]+)-(\d+)(?![A-Za-z0-9_])")
GITHUB_FULL = re.compile(r"(?<![\w/.-])([A-Za-z0-9][\w.-]*/[\w.-]+)#(\d+)(?!\d)")
_SIMPLE_REF = re.compile(r"[\w./-]+")
_SIMPLE_RUN = re.compile(r"[\w./-]+")
GITHUB_BARE = re.compile(r"(?<![\w/&#-])(?:#|GH-)(\d+)(?![\d])")


@dataclass(frozen=True)
class TaskMention:
    task_ref: str
    rule: str


@dataclass(frozen=True)
class MatchContext:
    """What the matcher knows about the boards loaded so far."""

    jira_projects: frozenset[str] = frozenset()
    github_projects: Mapping[str, str] = field(default_factory=dict)  # lower -> as stored
    repo_projects: Mapping[str, str] = field(default_factory=dict)  # commits.repo lower -> proj
    explicit_refs: frozenset[str] = frozenset()  # refs made only of word chars . / -
    other_refs: re.Pattern[str] | None = None  # the rest (spaces, '#'...), as one regex

    @classmethod
    def build(
        cls, jira_projects: Iterable[str], github_projects: Iterable[str], other_refs: Iterable[str]
    ) -> MatchContext:
        gh = {p.lower(): p for p in github_projects}
        by_name: dict[str, list[str]] = {}
        for project in gh.values():
            by_name.setdefault(project.rsplit("/", 1)[-1].lower(), []).append(project)
        repo_projects = {name: ps[0] for name, ps in by_name.items() if len(ps) == 1}
        repo_projects.update({p.lower(): p for p in gh.values()})
        refs = {r for r in other_refs if _matchable(r)}
        simple = frozenset(r for r in refs if _SIMPLE_REF.fullmatch(r))
        rest = sorted(refs - simple, key=len, reverse=True)
        pattern = None
        if rest:
            alternation = "|".join(re.escape(r) for r in rest)
            pattern = re.compile(rf"(?<![\w/.-])(?:{alternation})(?![\w/-]|\.\w)")
        projects = frozenset(jira_projects)
        return cls(projects, gh, repo_projects, simple, pattern)


def _matchable(ref: str) -> bool:
    """Refs too generic to find verbatim (``42``, ``x``) are left to the other rules."""
    return len(ref.strip()) >= 3 and not ref.strip().isdigit()


def find_task_refs(text: str, ctx: MatchContext, repo: str | None = None) -> list[TaskMention]:
    """Every task ``text`` mentions under the rules above (bare ``#N`` only when ``repo``)."""
    found: dict[str, str] = {}
    if ctx.explicit_refs:
        # a maximal run of word chars . / - (trailing dots cut) must equal a known ref
        for m in _SIMPLE_RUN.finditer(text):
            token = m.group(0).rstrip(".")
            if token in ctx.explicit_refs:
                found.setdefault(token, "task-ref")
    if ctx.other_refs is not None:
        for m in ctx.other_refs.finditer(text):
            found.setdefault(m.group(0), "task-ref")
    for m in JIRA_KEY.finditer(text):
        if m.group(1) in ctx.jira_projects:
            found.setdefault(f"{m.group(1)}-{int(m.group(2))}", "jira-key")
    for m in GITHUB_FULL.finditer(text):
        project = ctx.github_projects.get(m.group(1).lower())
        if project is not None:
            found.setdefault(f"{project}#{int(m.group(2))}", "github-ref")
    if repo is not None:
        project = ctx.repo_projects.get(repo.lower())
        if project is not None:
            for m in GITHUB_BARE.finditer(text):
                found.setdefault(f"{project}#{int(m.group(1))}", "github-ref")
    return [TaskMention(ref, rule) for ref, rule in found.items()]


def load_context(con: duckdb.DuckDBPyConnection) -> MatchContext:
    """The matcher's knowledge, read from ``tasks``."""
    rows = con.execute(read_sql("board/match_context.sql")).fetchall()
    jira = [p for src, p, _ in rows if src == "jira" and p]
    github = [p for src, p, _ in rows if src == "github" and p]
    other = [r for src, _, r in rows if src not in ("jira", "github") and r]
    return MatchContext.build(jira, github, other)


@dataclass(frozen=True)
class MatchSummary:
    """What one matcher run found; ``load`` is its reconcile line (read = mentions found)."""

    load: LoadSummary
    commits_scanned: int
    sidecars_scanned: int
    by_rule: dict[str, int]

    def line(self) -> str:
        rules = ", ".join(f"{k} {v:,}" for k, v in sorted(self.by_rule.items())) or "none"
        return (
            f"{self.load.line()} (scanned {self.commits_scanned:,} commits, "
            f"{self.sidecars_scanned:,} sidecars; mentions by rule: {rules})"
        )


def match_task_commits(con: duckdb.DuckDBPyConnection) -> MatchSummary:
    """Rebuild-free, idempotent: add every (task, commit) and (sidecar, task) mention not yet
    in ``task_commits`` / ``reflection_tasks``. Safe to run after every load."""
    ctx = load_context(con)
    with begin_load(con, "match", "commits+reflections") as run:
        commit_rows: list[tuple[str, str, str, str]] = []
        n_commits = 0
        if ctx.jira_projects or ctx.github_projects or ctx.explicit_refs or ctx.other_refs:
            cursor = con.execute(read_sql("board/commit_texts.sql"))
            while batch := cursor.fetchmany(10_000):
                n_commits += len(batch)
                for repo, sha, message in batch:
                    for m in find_task_refs(message, ctx, repo):
                        commit_rows.append((m.task_ref, repo, sha, m.rule))
        sidecar_rows: list[tuple[str, str, str, str]] = []
        known = {r for (r,) in con.execute(read_sql("board/task_refs.sql")).fetchall()}
        sidecars = con.execute(read_sql("board/sidecar_task_refs.sql")).fetchall()
        for content_hash, ref in sidecars:
            if ref in known:
                sidecar_rows.append((content_hash, ref, "", "exact"))
                continue
            for m in find_task_refs(ref, ctx):
                sidecar_rows.append((content_hash, m.task_ref, "", m.rule))
        by_rule = dict(Counter(row[3] for row in commit_rows + sidecar_rows))
        run.read = len(commit_rows) + len(sidecar_rows)
        inserted = _insert(con, "board/insert_task_commits.sql", commit_rows, run.load_id)
        inserted += _insert(con, "board/insert_reflection_tasks.sql", sidecar_rows, run.load_id)
        run.loaded = inserted
        run.already_present = run.read - inserted
        run.detail.update(
            commits_scanned=n_commits, sidecars_scanned=len(sidecars), by_rule=by_rule
        )
    return MatchSummary(run.summary(), n_commits, len(sidecars), by_rule)


def _insert(
    con: duckdb.DuckDBPyConnection, sql: str, rows: list[tuple[str, str, str, str]], load_id: int
) -> int:
    if not rows:
        return 0
    columns = [pa.array(list(c), pa.string()) for c in zip(*rows, strict=True)]
    table = pa.Table.from_arrays(columns, names=["a", "b", "c", "rule"])
    with registered(con, match_incoming=table):
        row = con.execute(read_sql(sql), [load_id]).fetchone()
    return int(row[0]) if row else 0
