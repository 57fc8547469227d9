"""Load a git history into ``commits`` and ``commit_files``: one streamed ``git log`` pass.

:func:`load_git_history` runs a single ``git log -z --numstat -M`` subprocess (no shell, no
per-commit processes), parses its pipe incrementally (:mod:`.git_log`), derives the message
signals (:mod:`.git_signals`) and appends Arrow batches to DuckDB. Commits already loaded for
the repo are counted and skipped, so re-loading only adds new ones.

Missing or corrupt objects (partial clones, damaged repos) make git stop part-way. The loader
then finds the commit git could not finish (``git rev-list --skip=N -n1``), loads its header with
``files_available = false`` when its file list cannot be computed, and resumes the same walk
with ``--skip``; an unreadable *commit* object is rejected by sha, and the walk continues past
it through a temporary graft file. Bundles are cloned once into a cache (see
:func:`open_repo`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import os
import queue
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

import duckdb

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows
    fcntl = None  # type: ignore[assignment]

from agent_reflection.db import LoadSummary, begin_load, read_sql
from agent_reflection.errors import ReflectionError
from agent_reflection.load.git_log import LOG_FLAGS, LOG_FORMAT, LogParser, ParsedCommit
from agent_reflection.load.git_signals import SIGNALS_VERSION, derive_signals

#: Commits per Arrow batch appended to DuckDB (bounded memory whatever the history length).
BATCH_COMMITS = 2_500
#: Entries kept in the ``loads.detail`` lists (files_unavailable, warnings).
DETAIL_LIMIT = 100
#: Bytes read from git's pipe at a time.
READ_CHUNK = 1 << 20
#: Pipe buffer asked for git's output (the Linux default max, /proc/sys/fs/pipe-max-size).
PIPE_SIZE = 1 << 20
#: Environment variable naming the cache folder for cloned bundles.
CACHE_ENV = "REFLECT_CACHE_DIR"
#: What is loaded when no ``rev`` is given: every branch, tag and remote-tracking branch, plus
#: HEAD when it resolves (a detached HEAD). Not ``--all``: that would also load refs/stash and
#: refs/notes commits, which are not history.
DEFAULT_REVS = ("--branches", "--tags", "--remotes")

ProgressCallback = Callable[[int], object]


class GitLoadError(ReflectionError):
    """A git history could not be loaded."""


class GitNotInstalled(GitLoadError):
    """The ``git`` executable is not on PATH."""

    def __init__(self) -> None:
        super().__init__("git is not installed or not on PATH: install git (2.20 or newer)")


class GitRepoNotFound(GitLoadError, FileNotFoundError):
    """The path given does not exist."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            f"{path}: no such file or folder. Pass a git clone, a bare repository or a "
            ".bundle file (e.g. `git clone https://github.com/OWNER/REPO` first)"
        )


class NotAGitRepository(GitLoadError):
    """The path exists but is neither a git repository nor a readable bundle."""

    def __init__(self, path: Path, git_said: str) -> None:
        super().__init__(
            f"{path} is not a git repository or bundle (git said: {git_said.strip()}). Pass "
            "the folder of a clone, a bare repository (NAME.git) or a file made by "
            "`git bundle create FILE --all`"
        )


class InvalidRevision(GitLoadError):
    """``--rev`` names something git does not know."""


class GitLogFailed(GitLoadError):
    """git stopped and the loader could not work around it."""


@dataclass(frozen=True)
class GitSource:
    """A repository ready for ``git -C path``: a clone, a bare repo, or a cached bundle clone."""

    path: Path
    name: str
    origin: str
    bundle: Path | None = None


# --------------------------------------------------------------------------- running git


def _git(
    cwd: Path, *args: str, env: dict[str, str] | None = None, check: bool = False
) -> subprocess.CompletedProcess[bytes]:
    try:
        done = subprocess.run(
            ["git", "-C", str(cwd), *args], capture_output=True, env=_env(env), check=False
        )
    except FileNotFoundError as exc:
        raise GitNotInstalled() from exc
    if check and done.returncode != 0:
        raise GitLogFailed(f"git {' '.join(args[:3])} failed in {cwd}: {_said(done.stderr)}")
    return done


def _env(extra: dict[str, str] | None) -> dict[str, str]:
    env = {**os.environ, "GIT_NO_LAZY_FETCH": "1", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    env.pop("GIT_DIR", None)
    env.pop("GIT_WORK_TREE", None)
    return {**env, **(extra or {})}


def _said(stderr: bytes) -> str:
    lines = [ln for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith("hint:")]
    return "; ".join(lines[-4:]) or "no message"


# --------------------------------------------------------------------------- repositories


def cache_root(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where bundle clones are kept: ``cache_dir``, else $REFLECT_CACHE_DIR, else the XDG cache."""
    if cache_dir is not None:
        return Path(cache_dir)
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "agent-reflection"


def repo_name(path: Path) -> str:
    """The default repo name: the basename without ``.git`` / ``.bundle``."""
    name = path.name
    for suffix in (".git", ".bundle"):
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
    return name


def open_repo(
    repo_path: str | os.PathLike[str],
    *,
    name: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> GitSource:
    """Check ``repo_path`` and make it usable by ``git -C``.

    A ``.bundle`` file (or any file) is cloned once with ``git clone --mirror`` into
    ``<cache>/git-bundles/<content hash>.git`` and reused while the bundle is unchanged.
    """
    path = Path(repo_path).expanduser().resolve()
    if not path.exists():
        raise GitRepoNotFound(Path(repo_path))
    if path.is_file():
        return _open_bundle(path, name=name, cache_dir=cache_dir)
    probe = _git(path, "rev-parse", "--is-bare-repository")
    if probe.returncode != 0:
        raise NotAGitRepository(path, _said(probe.stderr))
    bare = probe.stdout.strip() == b"true"
    top = path
    if not bare:
        shown = _git(path, "rev-parse", "--show-toplevel")
        if shown.returncode == 0 and shown.stdout.strip():
            top = Path(os.fsdecode(shown.stdout.strip()))
    return GitSource(path=path, name=name or repo_name(top), origin=str(path))


def _open_bundle(path: Path, *, name: str | None, cache_dir: Any) -> GitSource:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        head = fh.read(64)
        if not head.startswith(b"# v2 git bundle") and not head.startswith(b"# v3 git bundle"):
            raise NotAGitRepository(path, "the file is not a git bundle (no bundle header)")
        digest.update(head)
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    target = cache_root(cache_dir) / "git-bundles" / f"{digest.hexdigest()[:24]}.git"
    if not (target / "HEAD").exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".clone-", dir=target.parent))
        done = _git(target.parent, "clone", "--mirror", "--quiet", str(path), str(tmp / "r.git"))
        if done.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise NotAGitRepository(
                path, f"{_said(done.stderr)} (an incremental bundle needs its prerequisites)"
            )
        with contextlib.suppress(OSError):  # another process cloned it meanwhile
            (tmp / "r.git").rename(target)
        shutil.rmtree(tmp, ignore_errors=True)
    return GitSource(path=target, name=name or repo_name(path), origin=str(path), bundle=path)


def revisions(source: GitSource, rev: str | Sequence[str] | None) -> list[str]:
    """The revision arguments for ``git log``: ``rev`` checked, or :data:`DEFAULT_REVS`."""
    if rev is None:
        revs = list(DEFAULT_REVS)
        if _git(source.path, "rev-parse", "--verify", "-q", "HEAD^{commit}").returncode == 0:
            revs.append("HEAD")
        return revs
    revs = rev.split() if isinstance(rev, str) else list(rev)
    if not revs:
        raise InvalidRevision("--rev is empty: give a revision or range such as main or v1.0..main")
    for item in revs:
        if item.startswith("-"):
            raise InvalidRevision(
                f"--rev {item!r}: options are not revisions; give e.g. main~10..main"
            )
    check = _git(source.path, "rev-parse", "--revs-only", *revs, "--")
    if check.returncode != 0:
        raise InvalidRevision(
            f"--rev {' '.join(revs)!r} is not a revision or range of {source.origin} "
            f"(git said: {_said(check.stderr)}); list refs with `git -C REPO for-each-ref`"
        )
    return revs


def _widen_pipe(pipe: IO[bytes] | None) -> None:
    """Let git run ahead of the parser: a 1 MiB pipe instead of 64 KiB (Linux only)."""
    setpipe = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl is not None else None
    if pipe is None or setpipe is None:
        return
    with contextlib.suppress(OSError):
        fcntl.fcntl(pipe.fileno(), setpipe, PIPE_SIZE)


def _filters(since: str | None) -> list[str]:
    return [f"--since={since}"] if since else []


def count_commits(
    repo_path: str | os.PathLike[str] | GitSource,
    *,
    rev: str | Sequence[str] | None = None,
    since: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> int:
    """How many commits a load would read (``git rev-list --count``; cheap, for progress bars)."""
    source = (
        repo_path if isinstance(repo_path, GitSource) else open_repo(repo_path, cache_dir=cache_dir)
    )
    done = _git(source.path, "rev-list", "--count", *_filters(since), *revisions(source, rev), "--")
    return int(done.stdout.strip() or 0) if done.returncode == 0 else 0


# --------------------------------------------------------------------------- the walk

_TRAVERSE = re.compile(rb"Failed to traverse parents of commit ([0-9a-f]{40,64})")
_UNREADABLE = re.compile(
    rb"(?:Could not read|unable to read|bad object|loose object|unable to unpack) "
    rb"([0-9a-f]{40,64})"
)


@dataclass(frozen=True)
class WalkedCommit:
    commit: ParsedCommit
    files_available: bool


class _Walk:
    """``git log`` over ``revs``, resumed past missing objects (see the module docstring).

    Iterating yields every commit once. Commit objects that cannot be read end up in
    :attr:`unreadable`, commits whose file list could not be computed come with
    ``files_available = False`` and a line in :attr:`warnings`.
    """

    def __init__(self, source: GitSource, revs: list[str], since: str | None) -> None:
        self.source = source
        self.revs = revs
        self.since = since
        self.unreadable: dict[str, str] = {}  # sha -> git's message
        self.warnings: list[str] = []
        self._grafts: dict[str, tuple[str, ...]] = {}  # commit -> its real parents
        self._graft_file: Path | None = None
        # Parents seen but not (yet) emitted: where the walk continues, so where a commit
        # with an unreadable parent is found after git stopped.
        self._frontier: set[str] = set()

    def _env(self) -> dict[str, str] | None:
        return {"GIT_GRAFT_FILE": str(self._graft_file)} if self._graft_file else None

    @staticmethod
    def _base() -> list[str]:
        return ["-c", "advice.graftFileDeprecated=false", "-c", "core.quotePath=false"]

    def _emit(self, commit: ParsedCommit, files_available: bool = True) -> WalkedCommit:
        real = self._grafts.get(commit.sha)
        if real is not None:
            commit = dataclasses.replace(commit, parents=real)
        self._frontier.discard(commit.sha)
        self._frontier.update(commit.parents)
        return WalkedCommit(commit, files_available)

    def __iter__(self) -> Iterator[WalkedCommit]:
        with tempfile.TemporaryDirectory(prefix="reflect-git-") as tmp:
            emitted = 0
            while True:
                parser = LogParser()
                skip = [f"--skip={emitted}"] if emitted else []
                cmd = [*self._base(), "log", *LOG_FLAGS, f"--format={LOG_FORMAT}", *skip,
                       *_filters(self.since), *self.revs, "--"]  # fmt: skip
                with open(Path(tmp) / "stderr", "w+b") as err:
                    proc = self._spawn(cmd, err)
                    pipe = cast(io.BufferedReader, proc.stdout)
                    try:
                        while chunk := pipe.read1(READ_CHUNK):
                            for commit in parser.feed(chunk):
                                emitted += 1
                                yield self._emit(commit)
                    finally:
                        if proc.poll() is None:
                            proc.kill()
                        pipe.close()
                        rc = proc.wait()
                    err.seek(0)
                    stderr = err.read()
                if rc == 0:
                    for commit in parser.finish():
                        emitted += 1
                        yield self._emit(commit)
                    return
                # git stopped: the commit it was on is the one after the `emitted` complete
                # ones (a commit is complete only once the next one starts).
                state = (emitted, len(self._grafts))
                recovered = self._recover(emitted, Path(tmp))
                if recovered is not None:
                    emitted += 1
                    yield recovered
                if (emitted, len(self._grafts)) == state:
                    raise GitLogFailed(
                        f"git log stopped in {self.source.origin} after {emitted:,} commits "
                        f"and could not be resumed: {_said(stderr)}. Run `git fsck` there."
                    )

    def _spawn(self, cmd: list[str], err: IO[bytes]) -> subprocess.Popen[bytes]:
        try:
            proc = subprocess.Popen(
                ["git", "-C", str(self.source.path), *cmd],
                stdout=subprocess.PIPE, stderr=err, env=_env(self._env()),
            )  # fmt: skip
        except FileNotFoundError as exc:
            raise GitNotInstalled() from exc
        _widen_pipe(proc.stdout)
        return proc

    def _git(self, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            ["git", "-C", str(self.source.path), *self._base(), *args], input=stdin,
            capture_output=True, env=_env(self._env()), check=False,
        )  # fmt: skip

    def _recover(self, emitted: int, tmp: Path) -> WalkedCommit | None:
        """Load the next commit on its own, or graft past an unreadable commit object."""
        nxt = self._git("rev-list", f"--skip={emitted}", "-n1", *_filters(self.since),
                        *self.revs, "--")  # fmt: skip
        if nxt.returncode == 0:
            sha = nxt.stdout.decode().strip()
            return self._single(sha) if sha else None
        bad = {b.decode() for b in _UNREADABLE.findall(nxt.stderr)}
        if not bad:
            return None
        children = self._children_of(bad, nxt.stderr)
        if not children:
            return None
        for sha in sorted(bad):
            self.unreadable.setdefault(sha, _said(nxt.stderr))
        self._grafts.update(children)
        self._graft_file = tmp / "grafts"
        lines = [
            " ".join([child, *(p for p in parents if p not in self.unreadable)])
            for child, parents in self._grafts.items()
        ]
        self._graft_file.write_text("\n".join(lines) + "\n")
        return None

    def _children_of(self, bad: set[str], stderr: bytes) -> dict[str, tuple[str, ...]]:
        """Commits on the walk's frontier (or named by git) that have a parent in ``bad``."""
        candidates = set(self._frontier)
        candidates.update(b.decode() for b in _TRAVERSE.findall(stderr))
        tips = self._git("rev-parse", "--revs-only", *self.revs)
        candidates.update(tips.stdout.decode().replace("^", "").split())
        candidates -= bad
        candidates -= set(self._grafts)
        if not candidates:
            return {}
        shown = self._git("log", "--no-walk=unsorted", "--stdin", "--format=%H %P",
                          stdin="\n".join(sorted(candidates)).encode() + b"\n")  # fmt: skip
        children: dict[str, tuple[str, ...]] = {}
        for line in shown.stdout.decode().splitlines():
            sha, *parents = line.split()
            if bad.intersection(parents):
                children[sha] = tuple(parents)
        return children

    def _single(self, sha: str) -> WalkedCommit | None:
        """``sha`` loaded by itself: with its files if git can list them, else without."""
        common = ["log", "--no-walk", "-n1", "-z", "--date=raw", "--encoding=UTF-8"]
        full = self._git(*common, "--numstat", "-M", f"--format={LOG_FORMAT}", sha, "--")
        result = full
        if full.returncode != 0:
            result = self._git(*common, f"--format={LOG_FORMAT}", sha, "--")
            if result.returncode != 0:
                self.unreadable.setdefault(sha, _said(result.stderr))
                return None
        parser = LogParser()
        commits = parser.feed(result.stdout) + parser.finish()
        if len(commits) != 1:
            return None
        if full.returncode == 0:
            return self._emit(commits[0])
        self.warnings.append(
            f"{self.source.name}@{sha}: file list unavailable (missing or corrupt object: "
            f"{_said(full.stderr)}); commit loaded with files_available = false"
        )
        return self._emit(dataclasses.replace(commits[0], files=()), False)


# --------------------------------------------------------------------------- batches


class _Batch:
    """Column lists for one Arrow batch of ``commits`` and ``commit_files`` rows."""

    COMMIT_COLUMNS = (
        "repo", "sha", "parents", "author_name", "author_email", "author_time",
        "author_tz_offset", "committer_name", "committer_email", "committer_time",
        "committer_tz_offset", "subject", "body", "is_merge", "signals_version", "is_revert",
        "reverts_sha", "is_reapply", "pr_number", "cc_type", "cc_scope", "cc_breaking",
        "is_fix_like", "files_available", "load_id",
    )  # fmt: skip
    FILE_COLUMNS = ("repo", "sha", "path", "old_path", "added", "deleted", "binary", "load_id")

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
        repo, sha, load_id = self.repo, commit.sha, self.load_id
        self.commit_rows.append((
            repo, sha, list(commit.parents), commit.author_name, commit.author_email,
            commit.author_epoch, commit.author_tz_minutes, commit.committer_name,
            commit.committer_email, commit.committer_epoch, commit.committer_tz_minutes,
            commit.subject, commit.body, len(commit.parents) > 1, SIGNALS_VERSION, s.is_revert,
            s.reverts_sha, s.is_reapply, s.pr_number, s.cc_type, s.cc_scope, s.cc_breaking,
            s.is_fix_like, files_available, load_id,
        ))  # fmt: skip
        if not files_available or not commit.files:
            return
        seen: set[str] = set()
        for f in commit.files:
            if f.path in seen:  # two undecodable names that decode alike
                self.merged_paths += 1
                continue
            seen.add(f.path)
            self.file_rows.append(
                (repo, sha, f.path, f.old_path, f.added, f.deleted, f.binary, load_id)
            )

    def take(self) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        """The rows gathered so far (the batch starts empty again)."""
        rows = (self.commit_rows, self.file_rows)
        self.commit_rows, self.file_rows = [], []
        return rows


def _insert(
    con: duckdb.DuckDBPyConnection,
    commit_rows: list[tuple[Any, ...]],
    file_rows: list[tuple[Any, ...]],
) -> None:
    """Append one batch: two Arrow tables registered on ``con``, inserted by column name."""
    import pyarrow as pa

    ts, s, i32, b = pa.timestamp("s", tz="UTC"), pa.string(), pa.int32(), pa.bool_()
    commit_types = (
        s, s, pa.list_(s), s, s, ts, i32, s, s, ts, i32, s, s, b, i32,
        b, s, b, i32, s, s, b, b, b, pa.int64(),
    )  # fmt: skip
    file_types = (s, s, s, s, i32, i32, b, pa.int64())
    con.register("commits_batch", _arrow_table(commit_rows, _Batch.COMMIT_COLUMNS, commit_types))
    con.register("commit_files_batch", _arrow_table(file_rows, _Batch.FILE_COLUMNS, file_types))
    try:
        con.execute(read_sql("git/insert_batch.sql"))
    finally:
        con.unregister("commits_batch")
        con.unregister("commit_files_batch")


class _Writer:
    """Appends batches on a background thread, so DuckDB (which releases the GIL) works while
    git and the parser go on. The main thread does not touch ``con`` until :meth:`close`."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.error: BaseException | None = None
        self._queue: queue.Queue[tuple[list[Any], list[Any]] | None] = queue.Queue(maxsize=2)
        self._thread = threading.Thread(target=self._run, name="git-load-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            if self.error is None:
                try:
                    _insert(self.con, *item)
                except BaseException as exc:  # re-raised in the loading thread
                    self.error = exc

    def put(self, rows: tuple[list[Any], list[Any]]) -> None:
        self._raise()
        if rows[0]:
            self._queue.put(rows)

    def close(self) -> None:
        """Wait for every batch to be written; re-raise a write error."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        self._raise()

    def _raise(self) -> None:
        if self.error is not None:
            raise self.error


def _arrow_table(rows: list[tuple[Any, ...]], names: Sequence[str], types: Sequence[Any]) -> Any:
    import pyarrow as pa

    columns = list(zip(*rows, strict=True)) if rows else [() for _ in names]
    arrays = [pa.array(col, type=t) for col, t in zip(columns, types, strict=True)]
    return pa.Table.from_arrays(arrays, names=list(names))


# --------------------------------------------------------------------------- the load


def load_git_history(
    con: duckdb.DuckDBPyConnection,
    repo_path: str | os.PathLike[str],
    *,
    rev: str | Sequence[str] | None = None,
    since: str | None = None,
    name: str | None = None,
    progress: ProgressCallback | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    batch_commits: int = BATCH_COMMITS,
) -> LoadSummary:
    """Load the history of ``repo_path`` (a clone, a bare repo or a ``.bundle`` file).

    ``rev``: a revision or range (``v1.0..main``; several separated by spaces); default
    every branch, tag and remote branch (:data:`DEFAULT_REVS`) plus HEAD. ``since``: a date
    git understands (``2024-01-01``, ``2 weeks ago``). ``name``: the repo name stored in
    ``commits.repo`` (default: the basename without ``.git``/``.bundle``). ``progress`` is
    called with the number of commits just read.

    Commits already loaded for this repo name count as already present; file rows of a
    commit whose objects are missing are not loaded and its ``files_available`` is false.
    """
    source = open_repo(repo_path, name=name, cache_dir=cache_dir)
    revs = revisions(source, rev)
    with begin_load(con, "git", source.origin) as run:
        run.detail.update(repo=source.name, revs=revs, since=since, signals=SIGNALS_VERSION)
        if source.bundle is not None:
            run.detail["bundle_clone"] = str(source.path)
        known = {
            row[0] for row in con.execute(read_sql("git/known_shas.sql"), [source.name]).fetchall()
        }
        walk = _Walk(source, revs, since)
        batch = _Batch(source.name, run.load_id)
        unavailable: list[str] = []
        con.begin()
        writer = _Writer(con)
        try:
            for item in walk:
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
                        writer.put(batch.take())
                if progress is not None:
                    progress(1)
            writer.put(batch.take())
            writer.close()
            for sha, said in walk.unreadable.items():
                run.read += 1
                if sha in known:
                    run.already_present += 1
                    continue
                run.reject(
                    f"{source.name}@{sha}", None,
                    f"commit object {sha} is missing or corrupt (git said: {said}); commits "
                    "reachable only through it were not loaded. Repair with `git fsck` / "
                    "re-fetch, then load again",
                )  # fmt: skip
            con.commit()
        except BaseException:
            with contextlib.suppress(BaseException):
                writer.close()
            con.rollback()
            raise
        run.detail["files_unavailable_count"] = len(unavailable)
        run.detail["files_unavailable"] = unavailable[:DETAIL_LIMIT]
        run.detail["warnings"] = walk.warnings[:DETAIL_LIMIT] + [
            f"{source.name}@{sha}: rejected, commit object unreadable" for sha in walk.unreadable
        ]
        if batch.merged_paths:
            run.detail["merged_paths"] = batch.merged_paths
    return run.summary()
