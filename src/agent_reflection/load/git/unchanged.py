"""A re-load with nothing new, answered without opening the database.

After a plain ``reflect load git`` (no ``--rev``, ``--since`` or ``--szz``) that leaves the
repository *settled* — the load was complete, every ref it started from is a recorded tip, and
it loaded no notes, derived no sessions and warned about nothing — the CLI writes
:func:`state_path` (``<db>.git-state.json``) beside the database with:

* the database file's identity as that load left it: device, inode, size, modification and
  change times (ns) and a CRC-32 of its first 12 KiB (DuckDB's headers, whose checkpoint
  counter moves at every checkpoint), taken after a ``CHECKPOINT`` while the load still held
  the file's lock, and written only if the file still has it after the connection closed;
* the repository: the folder given, ``--name``, every ref and HEAD (``git show-ref --head``),
  whether it is shallow, its git dir, its graft and shallow files, read before the load pinned
  its revisions; and the recorded tips no ref names, which must still be commits;
* the loader: every file of the installed package (path, size, times), DuckDB's package folder
  and the ``GIT_*`` environment.

A later plain load whose every item still matches would, on the full path, list nothing, load no
notes and derive no sessions: :func:`check_unchanged` then returns the load that wrote the state,
and the CLI reports ``unchanged since load N`` with the counts that path prints (all zero)
without importing DuckDB. Anything different, missing or unreadable takes the full path.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import zlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agent_reflection.load.git.env import git_env

#: Bumped when the state file's content changes meaning: an older file is then ignored.
STATE_FORMAT = 1
#: Bytes of the database file hashed: DuckDB's main header and its two database headers.
HEADER_BYTES = 3 * 4096
#: The notes refs a load reads (git-ai, whogitit, reflection sidecars): a repository with any of
#: them takes the full path, whose notes and sessions steps print their own lines.
NOTES_REFS = ("refs/notes/ai", "refs/notes/whogitit", "refs/notes/reflection")
#: Above this many recorded tips that no ref names, the state is not written (each is checked on
#: git's command line).
MAX_OTHER_TIPS = 1000
#: The ref namespaces a default load starts from (``--branches --tags --remotes``), and HEAD.
START_PREFIXES = ("refs/heads/", "refs/tags/", "refs/remotes/")


@dataclass(frozen=True)
class FileIdentity:
    """What changes when a file is written, replaced or touched."""

    device: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int
    header_crc: int


@dataclass(frozen=True)
class RefSnapshot:
    """A repository's refs as git lists them, and the ids a default load starts from."""

    #: sha256 of ``git show-ref --head``, the git dir, shallow answer and graft/shallow files.
    digest: str
    #: Ids of the branches, tags, remote branches and HEAD (as ``git rev-parse`` gives them).
    starts: frozenset[str]
    #: Whether one of :data:`NOTES_REFS` exists.
    has_notes: bool


@dataclass(frozen=True)
class ReloadState:
    """The content of :func:`state_path`: what must all match for a re-load to be skipped."""

    db: FileIdentity
    origin: str
    name_option: str | None
    refs: str
    code: str
    load_id: int
    #: Recorded tips no ref names (see :attr:`.history.GitLoad.other_tips`): each must exist.
    other_tips: list[str]


def state_path(db_file: Path) -> Path:
    """``<db>.git-state.json``, beside the database file."""
    return db_file.with_name(db_file.name + ".git-state.json")


def file_identity(path: Path) -> FileIdentity | None:
    """``path``'s identity; None when it is missing, or a DuckDB write-ahead log lies beside it
    (a write not yet checkpointed, or one in progress)."""
    try:
        stat = os.stat(path)
        with open(path, "rb") as fh:
            header = fh.read(HEADER_BYTES)
    except OSError:
        return None
    if os.path.exists(f"{path}.wal"):
        return None
    return FileIdentity(
        stat.st_dev,
        stat.st_ino,
        stat.st_size,
        stat.st_mtime_ns,
        stat.st_ctime_ns,
        zlib.crc32(header),
    )


class RefProbe:
    """``git show-ref --head`` and ``git rev-parse`` (shallow?, git dir, ``commits`` peeled),
    started at once and side by side; :meth:`snapshot` reads them."""

    def __init__(self, folder: Path, commits: Sequence[str] = ()) -> None:
        self.commits = len(commits)
        self.processes: list[subprocess.Popen[bytes]] = []
        commands = [
            ["show-ref", "--head"],
            ["rev-parse", "--is-shallow-repository", "--absolute-git-dir"]
            + [f"{sha}^{{commit}}" for sha in commits],
        ]
        with contextlib.suppress(OSError):  # no git: snapshot() says None
            for command in commands:
                self.processes.append(
                    subprocess.Popen(
                        ["git", "-C", str(folder), *command],
                        stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL,
                        env=git_env(None),
                    )
                )

    def snapshot(self) -> RefSnapshot | None:
        """The refs; None when git failed (no refs at all, not a repository) or one of the
        commits is not a commit there."""
        outputs = [process.communicate()[0] for process in self.processes]
        if len(outputs) != 2 or any(process.returncode for process in self.processes):
            return None
        listed, place = outputs
        answers = place.decode("utf-8", "surrogateescape").splitlines()
        if len(answers) != 2 + self.commits:
            return None
        # the peeled commits only have to exist: the digest is the same with or without them
        digest = hashlib.sha256(listed + b"\0" + "\n".join(answers[:2]).encode())
        git_dir = Path(answers[1])
        for extra in (git_dir / "shallow", git_dir / "info" / "grafts"):
            digest.update(f"\0{extra.name}:{_stat_key(extra)}".encode())
        starts: set[str] = set()
        names: set[str] = set()
        for line in listed.decode("utf-8", "surrogateescape").splitlines():
            sha, _, name = line.partition(" ")
            names.add(name)
            if name == "HEAD" or name.startswith(START_PREFIXES):
                starts.add(sha)
        has_notes = any(ref in names for ref in NOTES_REFS)
        return RefSnapshot(digest.hexdigest(), frozenset(starts), has_notes)


def ref_snapshot(folder: Path, commits: Sequence[str] = ()) -> RefSnapshot | None:
    """The refs of the repository at ``folder`` (see :class:`RefProbe`)."""
    return RefProbe(folder, commits).snapshot()


def _stat_key(path: Path) -> str:
    try:
        stat = os.stat(path)
    except OSError:
        return "absent"
    return f"{stat.st_ino}/{stat.st_size}/{stat.st_mtime_ns}/{stat.st_ctime_ns}"


def code_identity() -> str:
    """sha256 of every file of the package (path, size, mtime, ctime), DuckDB's package folder
    and the ``GIT_*`` environment: a new version, an edited source or SQL file, another DuckDB
    or another git setting takes the full path."""
    digest = hashlib.sha256()
    _digest_tree(Path(__file__).resolve().parents[2], digest)
    duckdb_dirs = (os.path.join(entry, "duckdb") for entry in sys.path if entry)
    duckdb_dir = next((d for d in duckdb_dirs if os.path.isdir(d)), None)
    digest.update(f"duckdb:{duckdb_dir}:{_stat_key(Path(duckdb_dir or '-'))}\0".encode())
    for key in sorted(k for k in os.environ if k.startswith("GIT_")):
        digest.update(f"{key}={os.environ[key]}\0".encode())
    return digest.hexdigest()


def _digest_tree(folder: Path | str, digest: Any) -> None:
    with os.scandir(folder) as listing:
        entries = sorted(listing, key=lambda entry: entry.name)
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            if entry.name != "__pycache__":
                _digest_tree(entry.path, digest)
            continue
        stat = entry.stat()
        key = f"{entry.path}:{stat.st_size}/{stat.st_mtime_ns}/{stat.st_ctime_ns}\0"
        digest.update(key.encode())


def repo_folder(repo: str) -> Path | None:
    """The folder ``repo`` names, resolved as the loader resolves it; None for a file (a
    bundle, read through a cache clone) or a path that does not exist."""
    path = Path(repo).expanduser().resolve()
    return path if path.is_dir() else None


@dataclass(frozen=True)
class ReloadCheck:
    """What :func:`check_unchanged` found: the state after which nothing changed (None: take
    the full path) and the refs it read (None when it did not get that far)."""

    state: ReloadState | None
    refs: RefSnapshot | None = None


def check_unchanged(db_file: Path, repo: str, name: str | None) -> ReloadCheck:
    """Whether nothing changed since the load that wrote the state file of ``db_file``
    (database file, code, options, refs)."""
    folder = repo_folder(repo)
    state = _read_state(state_path(db_file))
    if folder is None or state is None:
        return ReloadCheck(None)
    if (state.origin, state.name_option) != (str(folder), name):
        return ReloadCheck(None)
    if state.db != file_identity(db_file) or state.code != code_identity():
        return ReloadCheck(None)
    refs = ref_snapshot(folder, state.other_tips)
    if refs is None or refs.has_notes or refs.digest != state.refs:
        return ReloadCheck(None, refs)
    return ReloadCheck(state, refs)


def _read_state(path: Path) -> ReloadState | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.pop("format") != STATE_FORMAT:
            return None
        return ReloadState(**{**data, "db": FileIdentity(**data["db"])})
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None  # missing, damaged or from another version: the full path decides


def record_settled(
    db_file: Path,
    repo: str,
    name: str | None,
    *,
    identity: FileIdentity | None,
    refs: RefSnapshot | None,
    started_from: Sequence[str],
    other_tips: Sequence[str],
    load_id: int,
) -> bool:
    """After a settled load (see the module docstring): write the state file when the database
    still has ``identity`` (taken under the load's lock) and the repository's refs, read before
    the load pinned its revisions, name the commits it started from (``started_from``);
    otherwise remove any state file. Whether it was written.

    Refs read before the load are enough: a ref that moved before the load pinned its
    revisions makes ``started_from`` differ; one that moved after makes the next re-load's
    refs differ from the recorded ones; a notes ref that appeared before the notes were read
    made the load print their load (not settled). ``other_tips`` were checked by the load."""
    target = state_path(db_file)
    folder = repo_folder(repo)
    if (
        len(other_tips) > MAX_OTHER_TIPS
        or identity is None
        or folder is None
        or refs is None
        or refs.has_notes
        or refs.starts != frozenset(started_from)
        or file_identity(db_file) != identity
    ):
        forget(db_file)
        return False
    state = ReloadState(
        identity, str(folder), name, refs.digest, code_identity(), load_id, list(other_tips)
    )
    document: dict[str, Any] = {"format": STATE_FORMAT, **asdict(state)}
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, target)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        forget(db_file)
        return False
    return True


def probe_refs(repo: str) -> RefProbe | None:
    """Start reading the refs of ``repo`` for :func:`record_settled`, before the load pins its
    revisions (git runs while the load starts; None: not a folder)."""
    folder = repo_folder(repo)
    return RefProbe(folder) if folder is not None else None


def forget(db_file: Path) -> None:
    """Remove the state file of ``db_file`` (the next re-load takes the full path)."""
    with contextlib.suppress(OSError):
        state_path(db_file).unlink()
