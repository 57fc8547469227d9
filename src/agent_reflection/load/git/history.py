"""Load a git history into ``commits`` and ``commit_files``: one streamed ``git log`` pass.

:func:`load_git_history` runs a single ``git log -z --numstat -M`` subprocess (no shell, no
per-commit processes; :mod:`.walk`), parses its pipe incrementally (:mod:`.log`), derives
the message signals (:mod:`.signals`) and appends batches to DuckDB on a writer thread (each
one JSON document per table, read by ``from_json``). Repositories and bundles are resolved by
:mod:`.repo`.

Re-loads are incremental: a complete load (no ``--since``, no excluded range, nothing
unreadable, not shallow) records the commit ids it started from in ``git_tips``; the next load
passes them to git as exclusions, so git lists only commits none of them reaches (and when all
the tips it starts from are recorded ones, git is not run). Commits that are listed but
already loaded (after a ``--since`` load, say) are counted and skipped.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from agent_reflection.load.git.agents import AGENT_PATTERNS_VERSION, commit_agent, refresh_agents
from agent_reflection.load.git.log import ParsedCommit
from agent_reflection.load.git.notes import NOTES_REFS
from agent_reflection.load.git.repo import (
    GitSource,
    existing_commits,
    filters,
    git,
    open_repo,
    pin_revisions,
    revisions,
)
from agent_reflection.load.git.signals import SIGNALS_VERSION, derive_signals
from agent_reflection.load.git.walk import GitWalk, WalkedCommit, walk_revs
from agent_reflection.store.db import (
    LoadRun,
    LoadSummary,
    begin_load,
    columns_json,
    read_sql,
    transaction,
)

if TYPE_CHECKING:
    import duckdb

#: Commits per batch appended to DuckDB (bounded memory whatever the history length).
BATCH_COMMITS = 2_500
#: Entries kept in the ``loads.detail`` lists (files_unavailable, warnings).
DETAIL_LIMIT = 100

ProgressCallback = Callable[[int], object]


# --------------------------------------------------------------------------- batches


class _Batch:
    """Rows of ``commits`` and ``commit_files`` for one batch, without the columns every row of
    a load shares (``repo``, ``load_id``, the two versions: bound once per insert)."""

    #: The varying columns of a ``commits`` row, in tuple order (sql/git/insert_commits.sql).
    COMMIT_COLUMNS = (
        "sha",
        "parents",
        "author_name",
        "author_email",
        "author_time",
        "author_tz_offset",
        "committer_name",
        "committer_email",
        "committer_time",
        "committer_tz_offset",
        "subject",
        "body",
        "is_merge",
        "is_revert",
        "reverts_sha",
        "is_reapply",
        "pr_number",
        "cc_type",
        "cc_scope",
        "cc_breaking",
        "is_fix_like",
        "files_available",
        "agent",
    )
    #: The varying columns of a ``commit_files`` row (sql/git/insert_files.sql).
    FILE_COLUMNS = ("sha", "path", "old_path", "added", "deleted", "binary")

    def __init__(self, repo: str, load_id: int) -> None:
        self.repo = repo
        self.load_id = load_id
        self.commit_rows: list[tuple[Any, ...]] = []
        self.file_rows: list[tuple[Any, ...]] = []
        self.merged_paths = 0

    @property
    def size(self) -> int:
        return len(self.commit_rows)

    def add(self, commit: ParsedCommit, files_available: bool) -> None:
        s = derive_signals(commit.subject, commit.body)
        sha = commit.sha
        self.commit_rows.append(
            (
                sha,
                commit.parents,
                commit.author_name,
                commit.author_email,
                commit.author_epoch,
                commit.author_tz_minutes,
                commit.committer_name,
                commit.committer_email,
                commit.committer_epoch,
                commit.committer_tz_minutes,
                commit.subject,
                commit.body,
                len(commit.parents) > 1,
                s.is_revert,
                s.reverts_sha,
                s.is_reapply,
                s.pr_number,
                s.cc_type,
                s.cc_scope,
                s.cc_breaking,
                s.is_fix_like,
                files_available,
                commit_agent(
                    commit.subject,
                    commit.body,
                    commit.author_name,
                    commit.author_email,
                    commit.committer_name,
                    commit.committer_email,
                ),
            )
        )
        if not files_available or not commit.files:
            return
        seen: set[str] = set()
        for f in commit.files:
            if f.path in seen:  # two undecodable names that decode alike
                self.merged_paths += 1
                continue
            seen.add(f.path)
            self.file_rows.append((sha, f.path, f.old_path, f.added, f.deleted, f.binary))

    def take(self) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        """The rows gathered so far (the batch starts empty again)."""
        rows = (self.commit_rows, self.file_rows)
        self.commit_rows, self.file_rows = [], []
        return rows


def _insert(
    con: duckdb.DuckDBPyConnection,
    batch: tuple[str, int],
    commit_rows: list[tuple[Any, ...]],
    file_rows: list[tuple[Any, ...]],
    counts: dict[str, Any],
) -> None:
    """Append one batch in one transaction (a commit and its files land together), with the
    load's ``counts`` up to this batch (an interrupted load then says what it committed).

    Each table's rows go to DuckDB as one JSON string of column lists
    (:func:`~agent_reflection.store.db.columns_json`)."""
    repo, load_id = batch
    with transaction(con):
        con.execute(
            read_sql("git/insert_commits.sql"),
            {
                "repo": repo,
                "load_id": load_id,
                "signals_version": SIGNALS_VERSION,
                "agent_version": AGENT_PATTERNS_VERSION,
                "batch": columns_json(commit_rows, _Batch.COMMIT_COLUMNS),
            },
        )
        if file_rows:
            con.execute(
                read_sql("git/insert_files.sql"),
                {
                    "repo": repo,
                    "load_id": load_id,
                    "batch": columns_json(file_rows, _Batch.FILE_COLUMNS),
                },
            )
        con.execute(read_sql("core/progress_load.sql"), counts)


#: One batch for the writer thread: (repo, load_id), commit rows, file rows, the load's counts.
_BatchRows = tuple[tuple[str, int], list[Any], list[Any], dict[str, Any]]


class _Writer:
    """Appends batches on a background thread, so DuckDB (which releases the GIL) works while
    git and the parser go on. The main thread does not touch ``con`` until :meth:`close`."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.error: BaseException | None = None
        self._queue: queue.Queue[_BatchRows | None] = queue.Queue(maxsize=2)
        self._thread = threading.Thread(target=self._run, name="git-load-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            if self.error is None:
                try:
                    _insert(self.con, *item)
                except BaseException as exc:  # re-raised in the loading thread
                    self.error = exc

    def put(self, batch: _Batch, counts: dict[str, Any]) -> None:
        self._raise()
        if batch.size:
            self._queue.put(((batch.repo, batch.load_id), *batch.take(), counts))

    def close(self) -> None:
        """Wait for every batch to be written; re-raise a write error."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        self._raise()

    def _raise(self) -> None:
        if self.error is not None:
            raise self.error


# --------------------------------------------------------------------------- the load


def is_shallow(source: GitSource) -> bool:
    """Whether the repository is a shallow clone (its history stops at a cut)."""
    if source.shallow is not None:
        return source.shallow
    done = git(source.path, "rev-parse", "--is-shallow-repository")
    return done.returncode == 0 and done.stdout.strip() == b"true"


def load_git_history(
    con: duckdb.DuckDBPyConnection,
    repo_path: str | os.PathLike[str] | GitSource,
    *,
    rev: str | Sequence[str] | None = None,
    since: str | None = None,
    name: str | None = None,
    progress: ProgressCallback | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    batch_commits: int = BATCH_COMMITS,
    full: bool = False,
) -> LoadSummary:
    """Load the history of ``repo_path`` (a clone, a bare repo or a ``.bundle`` file).

    ``rev``: a revision or range (``v1.0..main``; several separated by spaces); default
    every branch, tag and remote branch (:data:`.repo.DEFAULT_REVS`) plus HEAD. ``since``: a date
    git understands (``2024-01-01``, ``2 weeks ago``). ``name``: the repo name stored in
    ``commits.repo`` (default: the basename without ``.git``/``.bundle``). ``progress`` is
    called with the number of commits just read.

    Incremental: git lists only commits that no tip recorded by an earlier complete load of
    this repo name reaches (``full=True`` ignores the recorded tips and lists everything).
    ``read`` counts the commits listed (plus unreadable ones); listed commits already loaded
    count as already present. File rows of a commit whose objects are missing are not loaded
    and its ``files_available`` is false. Each batch is its own transaction (written while git
    runs): a load that fails part-way keeps the batches already written, and loading again
    completes it. ``detail["notes_tips"]``: the commit of each notes ref
    (:data:`.notes.NOTES_REFS`) the repository has, which the notes loaders take as ``tips``.
    """
    source = open_repo(repo_path, name=name, cache_dir=cache_dir)
    revs, pinned = pin_revisions(source, rev)
    with begin_load(con, "git", source.origin) as run:
        run.detail.update(repo=source.name, revs=revs, since=since, signals=SIGNALS_VERSION)
        if source.bundle is not None:
            run.detail["bundle_clone"] = str(source.path)
        recorded = [] if full else _recorded_tips(con, source)
        # one git process peels the recorded tips, the tips this load starts from and the
        # notes refs the notes loaders read after it
        found = existing_commits(source, [*recorded, *pinned.include, *NOTES_REFS])
        # the commit of each notes ref the repository has, for the notes loaders' ``tips``
        run.detail["notes_tips"] = {ref: found[ref] for ref in NOTES_REFS if ref in found}
        tips = _forget_gone_tips(con, source, recorded, found)
        run.detail["excluded_tips"] = len(tips)
        walk = GitWalk(source, walk_revs(pinned, tips), since)
        # Every tip is a recorded one: git would list nothing, so it is not asked.
        nothing_new = set(tips).issuperset(found.get(name) for name in pinned.include)
        batch = _Batch(source.name, run.load_id)
        known, unavailable = _append_listed(
            con, run, () if nothing_new else walk, batch, batch_commits, progress
        )
        _reject_unreadable(con, run, source, walk, known)
        # rows loaded before the agent patterns changed (or before they existed)
        run.detail["agents_refreshed"] = refresh_agents(con, source.name)
        _describe_walk(run, source, walk, batch, unavailable)
        # Every ancestor of the pinned tips is now loaded only when nothing was cut off.
        complete = not (since or pinned.exclude or walk.unreadable or run.detail["shallow"])
        run.detail["tips_recorded"] = 0
        starts = [found.get(name) for name in pinned.include]
        if complete and pinned.include:
            _record_tips(con, run, source, starts, tips)
    return run.summary()


def _append_listed(
    con: duckdb.DuckDBPyConnection,
    run: LoadRun,
    walk: Iterable[WalkedCommit],
    batch: _Batch,
    batch_commits: int,
    progress: ProgressCallback | None,
) -> tuple[set[str] | None, list[str]]:
    """Append every commit git lists that is not loaded yet, in batches written on a writer
    thread. Returns (the repo's loaded commit ids, None if git listed nothing; the new commits
    whose files are unavailable)."""
    known: set[str] | None = None  # fetched once git lists a commit (none: nothing new)
    unavailable: list[str] = []
    writer = _Writer(con)
    try:
        for item in walk:
            if known is None:
                known = _known_shas(con, batch.repo)
            run.read += 1
            sha = item.commit.sha
            if sha in known:
                run.already_present += 1
            else:
                known.add(sha)
                batch.add(item.commit, item.files_available)
                run.loaded += 1
                if not item.files_available:
                    unavailable.append(sha)
                if batch.size >= batch_commits:
                    writer.put(batch, run.counts())
            if progress is not None:
                progress(1)
        writer.put(batch, run.counts())
        writer.close()
    except BaseException:
        with contextlib.suppress(BaseException):
            writer.close()
        raise
    return known, unavailable


def _reject_unreadable(
    con: duckdb.DuckDBPyConnection,
    run: LoadRun,
    source: GitSource,
    walk: GitWalk,
    known: set[str] | None,
) -> None:
    """Count each commit git could not read: already present if loaded before, else rejected."""
    if walk.unreadable and known is None:
        known = _known_shas(con, source.name)
    for sha, said in walk.unreadable.items():
        run.read += 1
        if known is not None and sha in known:
            run.already_present += 1
            continue
        run.reject(
            f"{source.name}@{sha}",
            None,
            f"commit object {sha} is missing or corrupt (git said: {said}); commits "
            "reachable only through it were not loaded. Repair with `git fsck` / "
            "re-fetch, then load again",
        )


def _describe_walk(
    run: LoadRun, source: GitSource, walk: GitWalk, batch: _Batch, unavailable: list[str]
) -> None:
    """Record in the load's detail what the walk could not give: files, commits, history."""
    run.detail["files_unavailable_count"] = len(unavailable)
    run.detail["files_unavailable"] = unavailable[:DETAIL_LIMIT]
    run.detail["warnings"] = walk.warnings[:DETAIL_LIMIT] + [
        f"{source.name}@{sha}: rejected, commit object unreadable" for sha in walk.unreadable
    ]
    run.detail["shallow"] = is_shallow(source)
    if run.detail["shallow"]:
        run.detail["warnings"].insert(
            0,
            f"{source.name}: shallow clone, the history before its cut is missing, so every "
            "count over commits (fixes, reverts, P2's attribution) undercounts; run `git fetch "
            "--unshallow` in the clone, then load again",
        )
    if batch.merged_paths:
        run.detail["merged_paths"] = batch.merged_paths


def _record_tips(
    con: duckdb.DuckDBPyConnection,
    run: LoadRun,
    source: GitSource,
    include: Sequence[str | None],
    tips: Sequence[str],
) -> None:
    """Record the commits a complete load started from (``include``, peeled; None: not a
    commit), and forget the older tips they reach."""
    commits = sorted({sha for sha in include if sha is not None})
    run.detail["tips_recorded"] = len(commits)
    con.execute(
        read_sql("git/save_tips.sql"),
        {"repo": source.name, "shas": commits, "load_id": run.load_id},
    )
    redundant = _covered(source, tips, commits)
    if redundant:  # keeps the exclusion list about as long as the list of refs
        con.execute(read_sql("git/forget_tips.sql"), {"repo": source.name, "shas": redundant})


def count_new_commits(
    con: duckdb.DuckDBPyConnection,
    source: GitSource,
    *,
    rev: str | Sequence[str] | None = None,
    since: str | None = None,
    full: bool = False,
) -> int:
    """How many commits :func:`load_git_history` would list (for a progress bar's total)."""
    tips = [] if full else _usable_tips(con, source)
    excluded = [f"^{sha}" for sha in tips]
    args = ["rev-list", "--count", *filters(since), *revisions(source, rev), *excluded, "--"]
    done = git(source.path, *args)
    return int(done.stdout.strip() or 0) if done.returncode == 0 else 0


def _covered(source: GitSource, old: Sequence[str], new: Sequence[str]) -> list[str]:
    """The ``old`` tips that ``new`` tips reach (``git rev-list OLD ^NEW`` does not list them)."""
    candidates = [sha for sha in old if sha not in set(new)]
    if not candidates or not new:
        return []
    done = git(source.path, "rev-list", *candidates, *(f"^{sha}" for sha in new), "--")
    if done.returncode != 0:
        return []
    unreached = set(done.stdout.decode().split())
    return [sha for sha in candidates if sha not in unreached]


def _known_shas(con: duckdb.DuckDBPyConnection, repo: str) -> set[str]:
    return {row[0] for row in con.execute(read_sql("git/known_shas.sql"), [repo]).fetchall()}


def _usable_tips(con: duckdb.DuckDBPyConnection, source: GitSource) -> list[str]:
    """The recorded tips of ``source`` that are loaded and that the repository still has."""
    recorded = _recorded_tips(con, source)
    return _forget_gone_tips(con, source, recorded, existing_commits(source, recorded))


def _recorded_tips(con: duckdb.DuckDBPyConnection, source: GitSource) -> list[str]:
    """The tips recorded by the complete loads of ``source`` (``git_tips``)."""
    return [
        row[0]
        for row in con.execute(read_sql("git/known_tips.sql"), {"repo": source.name}).fetchall()
    ]


def _forget_gone_tips(
    con: duckdb.DuckDBPyConnection,
    source: GitSource,
    recorded: Sequence[str],
    present: dict[str, str],
) -> list[str]:
    """``recorded`` tips that name a commit of the repository (``present``: as
    :func:`existing_commits` answered); the others are deleted from ``git_tips``."""
    gone = [sha for sha in recorded if sha not in present]
    if gone:
        con.execute(read_sql("git/forget_tips.sql"), {"repo": source.name, "shas": gone})
    return [sha for sha in recorded if sha in present]
