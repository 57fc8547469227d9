"""Find and check the repository a git load reads: a clone, a bare repo or a bundle.

A ``.bundle`` cannot be read by ``git log`` directly: it is cloned once with
``git clone --mirror`` into a cache folder and reused while its content is unchanged. Every
git call runs without a shell, with lazy fetching of missing objects disabled.

A loaded repository is someone else's: nothing in its config or attributes may run here.
:func:`git_argv` is the one place a git command line is made for it: no system or global
config, no ``GIT_*`` variable from the caller's environment, :data:`SAFE_CONFIG` over the
repository's own config, every filter driver the repository configures switched off, and
``--no-textconv`` / ``--no-ext-diff`` for the commands that would run a textconv or external
diff driver its attributes name (see docs/git.md).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Final

from agent_reflection.errors import ReflectionError
from agent_reflection.names import name_text

#: Environment variable naming the cache folder for cloned bundles.
CACHE_ENV = "REFLECT_CACHE_DIR"
#: What is loaded when no ``rev`` is given: every branch, tag and remote-tracking branch, plus
#: HEAD when it resolves (a detached HEAD). Not ``--all``: that would also load refs/stash and
#: refs/notes commits, which are not history.
DEFAULT_REVS = ("--branches", "--tags", "--remotes")


#: ``-c`` settings on every git command line: they win over the repository's config, and each
#: turns off a way git runs a program (fsmonitor on reading the index, hooks, a pager, the
#: signature checker ``log.showSignature`` calls).
SAFE_CONFIG: Final = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "log.showSignature=false",
)
#: Options per subcommand that keep it from running the textconv or external diff driver a
#: ``.gitattributes`` names (``diff.<driver>.textconv``, ``diff.<driver>.command``).
_NO_DRIVERS: Final = ("--no-textconv", "--no-ext-diff")
SUBCOMMAND_GUARDS: Final = {
    "blame": ("--no-textconv",),
    "log": _NO_DRIVERS,
    "show": _NO_DRIVERS,
    "diff": _NO_DRIVERS,
    "diff-tree": _NO_DRIVERS,
}
#: The repository's filter driver keys (``filter.<driver>.<key>``) and the value that turns
#: each off (an empty command is no filter; ``required`` would make that an error).
_FILTER_OFF: Final = {"clean": "", "smudge": "", "process": "", "required": "false"}


def git_env(extra: dict[str, str] | None) -> dict[str, str]:
    """``os.environ`` without any ``GIT_*`` variable (they can name programs, config and the
    repository; ``git -C`` names it), no system or global config, lazy fetching and prompts
    off, the C locale, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_NO_LAZY_FETCH="1",
        GIT_TERMINAL_PROMPT="0",
        LC_ALL="C",
    )
    return {**env, **(extra or {})}


def git_argv(cwd: Path, *args: str) -> list[str]:
    """The command line of ``git -C cwd ARGS`` that runs nothing the repository configures
    (see the module docstring). ``args`` may start with ``-c key=value`` pairs."""
    at = 0
    while at + 1 < len(args) and args[at] == "-c":
        at += 2
    guards = SUBCOMMAND_GUARDS.get(args[at], ()) if at < len(args) else ()
    overrides = [*SAFE_CONFIG, *_trusted_directories(), *_filters_off(str(cwd))]
    return [
        "git",
        *(item for setting in overrides for item in ("-c", setting)),
        "-C",
        str(cwd),
        *args[: at + 1],
        *guards,
        *args[at + 1 :],
    ]


@lru_cache(maxsize=1)
def _trusted_directories() -> tuple[str, ...]:
    """The user's own ``safe.directory`` entries (system and global config, which a load
    does not read otherwise), as ``-c`` settings: git's check on repositories owned by
    another user keeps the answers the user gave it."""
    found: list[str] = []
    for scope in ("--system", "--global"):
        try:
            done = subprocess.run(
                ["git", "config", scope, "-z", "--get-all", "safe.directory"],
                capture_output=True,
                cwd=os.sep,  # no repository: its config is not read
                check=False,
            )
        except FileNotFoundError as exc:
            raise GitNotInstalled() from exc
        # each value's own bytes (a folder's name need not be UTF-8): handed back to git as is
        found += [v for v in os.fsdecode(done.stdout).split("\0") if v]
    return tuple(f"safe.directory={value}" for value in found)


@lru_cache(maxsize=64)
def _filters_off(cwd: str) -> tuple[str, ...]:
    """``key=value`` settings that switch off each filter driver the repository at ``cwd``
    configures (its config is read, never run; once per repository and process)."""
    try:
        done = subprocess.run(
            ["git", "-C", cwd, "config", "--list", "--name-only", "-z"],
            capture_output=True,
            env=git_env(None),
            check=False,
        )
    except FileNotFoundError as exc:
        raise GitNotInstalled() from exc
    settings = []
    # each name's own bytes: a driver named with bytes that are not UTF-8 is switched off too
    for name in os.fsdecode(done.stdout).split("\0"):
        section, _, rest = name.partition(".")
        driver, _, key = rest.rpartition(".")
        if section.lower() == "filter" and driver and key.lower() in _FILTER_OFF:
            settings.append(f"filter.{driver}.{key}={_FILTER_OFF[key.lower()]}")
    return tuple(settings)


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


class InvalidSince(GitLoadError):
    """``--since`` is text git reads as "now" (git takes any unknown date for the present), or
    a time to come: the load would list no commit."""

    def __init__(self, since: str) -> None:
        super().__init__(
            f"--since {since!r}: git reads it as now or later, so no commit would load. Give a "
            "date (2024-01-01) or a span git knows ('6 months ago', '2 weeks ago')"
        )


def check_since(source: GitSource, since: str) -> None:
    """Raise :class:`InvalidSince` when git dates ``since`` at the present or later (git's
    date parser returns the current time for text it cannot read, without a warning)."""
    before = time.time()
    done = git(source.path, "rev-parse", f"--since={since}")
    found = re.fullmatch(rb"--max-age=(-?\d+)\s*", done.stdout)
    if found is not None and int(found.group(1)) >= int(before):
        raise InvalidSince(since)


class GitLogFailed(GitLoadError):
    """git stopped and the loader could not work around it."""


@dataclass(frozen=True)
class GitSource:
    """A repository ready for ``git -C path``: a clone, a bare repo, or a cached bundle clone."""

    path: Path
    name: str
    origin: str
    bundle: Path | None = None
    #: Whether the repository is a shallow clone, as git said when it was opened (None: not
    #: asked; a bundle's clone).
    shallow: bool | None = None


def git(
    cwd: Path,
    *args: str,
    env: dict[str, str] | None = None,
    check: bool = False,
    input: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    try:
        done = subprocess.run(
            git_argv(cwd, *args),
            input=input,
            capture_output=True,
            env=git_env(env),
            check=False,
        )
    except FileNotFoundError as exc:
        raise GitNotInstalled() from exc
    if check and done.returncode != 0:
        raise GitLogFailed(f"git {' '.join(args[:3])} failed in {cwd}: {said(done.stderr)}")
    return done


def batch_objects(out: bytes) -> Iterator[tuple[str, bytes]]:
    """``git cat-file --batch`` output: ``<id> <type> <size>\\n<bytes>\\n`` per object found;
    a ``<query> missing`` (or ``ambiguous``) line is skipped."""
    at = 0
    while at < len(out):
        end = out.index(b"\n", at)
        header = out[at:end].decode().split()
        at = end + 1
        if len(header) != 3:  # "<query> missing" or "<query> ambiguous": nothing follows
            continue
        size = int(header[2])
        yield header[0], out[at : at + size]
        at += size + 1


def said(stderr: bytes) -> str:
    lines = [ln for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith("hint:")]
    return "; ".join(lines[-4:]) or "no message"


def cache_root(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where bundle clones are kept: ``cache_dir``, else $REFLECT_CACHE_DIR, else the XDG cache;
    made absolute (git runs in other folders: a relative path would name another place)."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser().absolute()
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser().absolute()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return (Path(xdg) / "agent-reflection").absolute()


def repo_name(path: Path) -> str:
    """The default repo name: the basename without ``.git`` / ``.bundle`` (its text: a folder
    named with bytes that are not UTF-8 gives U+FFFD for them)."""
    name = name_text(path.name)
    for suffix in (".git", ".bundle"):
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
    return name


def open_repo(
    repo_path: str | os.PathLike[str] | GitSource,
    *,
    name: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> GitSource:
    """Check ``repo_path`` and make it usable by ``git -C`` (a :class:`GitSource` is returned
    as it is, renamed when ``name`` is given).

    A ``.bundle`` file (or any file) is cloned once with ``git clone --mirror`` into
    ``<cache>/git-bundles/<content hash>.git`` and reused while the bundle is unchanged.
    """
    if isinstance(repo_path, GitSource):
        return dataclasses.replace(repo_path, name=name) if name else repo_path
    path = Path(repo_path).expanduser().resolve()
    if not path.exists():
        raise GitRepoNotFound(Path(repo_path))
    if path.is_file():
        return _open_bundle(path, name=name, cache_dir=cache_dir)
    # One process answers all three; in a bare repository git prints the first two answers,
    # then fails on --show-toplevel (there is no work tree).
    probe = git(
        path, "rev-parse", "--is-bare-repository", "--is-shallow-repository", "--show-toplevel"
    )
    answers = probe.stdout.splitlines()
    if len(answers) < 2 or answers[0] not in (b"true", b"false"):
        raise NotAGitRepository(path, said(probe.stderr))
    bare, shallow = answers[0] == b"true", answers[1] == b"true"
    top = path
    if not bare and probe.returncode == 0 and len(answers) > 2 and answers[2].strip():
        top = Path(os.fsdecode(answers[2].strip()))
    # git runs at the top level: paths are repo-relative whatever folder was given.
    name = name_text(name) if name else repo_name(top)
    return GitSource(path=top, name=name, origin=str(path), shallow=shallow)


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
        done = git(target.parent, "clone", "--mirror", "--quiet", str(path), str(tmp / "r.git"))
        if done.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise NotAGitRepository(
                path, f"{said(done.stderr)} (an incremental bundle needs its prerequisites)"
            )
        with contextlib.suppress(OSError):  # another process cloned it meanwhile
            (tmp / "r.git").rename(target)
        shutil.rmtree(tmp, ignore_errors=True)
    name = name_text(name) if name else repo_name(path)
    return GitSource(path=target, name=name, origin=str(path), bundle=path)


def revisions(source: GitSource, rev: str | Sequence[str] | None) -> list[str]:
    """The revision arguments for ``git log``: ``rev`` checked, or :data:`DEFAULT_REVS`."""
    if rev is None:
        revs = list(DEFAULT_REVS)
        if git(source.path, "rev-parse", "--verify", "-q", "HEAD^{commit}").returncode == 0:
            revs.append("HEAD")
        return revs
    return _checked_revisions(source, rev)[0]


def _checked_revisions(
    source: GitSource, rev: str | Sequence[str]
) -> tuple[list[str], subprocess.CompletedProcess[bytes]]:
    """``rev`` as revision arguments, and ``git rev-parse --revs-only`` of them (its check)."""
    revs = rev.split() if isinstance(rev, str) else list(rev)
    if not revs:
        raise InvalidRevision("--rev is empty: give a revision or range such as main or v1.0..main")
    for item in revs:
        if item.startswith("-"):
            raise InvalidRevision(
                f"--rev {item!r}: options are not revisions; give e.g. main~10..main"
            )
    check = git(source.path, "rev-parse", "--revs-only", *revs, "--")
    if check.returncode != 0:
        raise InvalidRevision(
            f"--rev {' '.join(revs)!r} is not a revision or range of {source.origin} "
            f"(git said: {said(check.stderr)}); list refs with `git -C REPO for-each-ref`"
        )
    return revs, check


def filters(since: str | None) -> list[str]:
    return [f"--since={since}"] if since else []


@dataclass(frozen=True)
class ResolvedRevs:
    """``revs`` pinned to commit ids before the walk: what it starts from and what it excludes.

    Walking the pinned ids (not ``--branches``) means a commit made while the load runs is
    neither loaded nor recorded as loaded: the next load finds it.
    """

    include: tuple[str, ...]
    exclude: tuple[str, ...]


def resolve_revisions(source: GitSource, revs: Sequence[str]) -> ResolvedRevs:
    """``git rev-parse --revs-only``: ``^id`` entries are exclusions (ranges), the rest tips."""
    done = git(source.path, "rev-parse", "--revs-only", *revs, "--")
    if done.returncode != 0:
        raise InvalidRevision(
            f"{' '.join(revs)!r} is not a revision or range of {source.origin} "
            f"(git said: {said(done.stderr)})"
        )
    return _resolved(done.stdout)


def pin_revisions(
    source: GitSource, rev: str | Sequence[str] | None
) -> tuple[list[str], ResolvedRevs]:
    """:func:`revisions` and :func:`resolve_revisions` of them, in one git process where one
    answers both: the default revisions when HEAD is a commit (``HEAD^{commit}`` resolves only
    then; an unborn HEAD takes the two steps), or a ``rev`` whose check is its resolution."""
    if rev is None:
        done = git(source.path, "rev-parse", "--revs-only", *DEFAULT_REVS, "HEAD^{commit}", "--")
        if done.returncode == 0:
            return [*DEFAULT_REVS, "HEAD"], _resolved(done.stdout)
        revs = revisions(source, None)
        return revs, resolve_revisions(source, revs)
    revs, check = _checked_revisions(source, rev)
    return revs, _resolved(check.stdout)


#: What ``git rev-parse`` prints for a ref it cannot read (a broken name such as
#: ``refs/heads/with space`` written directly): git itself warns and skips such a ref.
_NULL_IDS = frozenset({"0" * 40, "0" * 64})


def _resolved(stdout: bytes) -> ResolvedRevs:
    words = [w for w in stdout.decode().split() if w.lstrip("^") not in _NULL_IDS]
    include = tuple(dict.fromkeys(w for w in words if not w.startswith("^")))
    exclude = tuple(dict.fromkeys(w[1:] for w in words if w.startswith("^")))
    return ResolvedRevs(include, exclude)


def existing_commits(source: GitSource, names: Sequence[str]) -> dict[str, str]:
    """``names`` (ids, tags) that name a commit the repository has -> that commit's id.

    One ``git cat-file`` call; tag objects are peeled, names git does not know are left out.
    """
    if not names:
        return {}
    query = "".join(f"{name}^{{commit}}\n" for name in names).encode()
    done = git(source.path, "cat-file", "--batch-check=%(objectname) %(objecttype)", input=query)
    found: dict[str, str] = {}
    lines = done.stdout.decode().splitlines()
    if len(lines) != len(names):  # git answers one line per query; anything else: trust none
        return found
    for name, line in zip(names, lines, strict=True):
        sha, _, kind = line.partition(" ")
        if kind == "commit":
            found[name] = sha
    return found
