"""Loading someone else's clone runs nothing it configures (issue 34, item 2).

The repository below sets every way a git config or ``.gitattributes`` can make git run a
program (textconv, external diff, clean/smudge/process filters, fsmonitor, hooks, pager,
signature checking), each touching its own file in a folder outside the repository. The test
first shows the traps are live (plain git runs them), then runs every git command the loaders
run, through the loaders and through the one home of git command lines, and finds no file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_reflection.load.board.loader import load_board
from agent_reflection.load.git.repo import git, git_argv, git_env
from agent_reflection.store.db import connect
from conftest import run_git, run_reflect
from session_repo import commit, new_repo

pytestmark = pytest.mark.adversarial

HOOKS = ("pre-commit", "post-checkout", "reference-transaction", "post-index-change", "pre-push")


def hostile_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A repository with a fix commit (for SZZ) and a task file history (for the board loader),
    then the hostile config; and the folder where each trap leaves its file."""
    pwned = tmp_path / "pwned"
    pwned.mkdir()
    repo = new_repo(tmp_path / "clone")
    commit(
        repo,
        "add parser",
        "2024-01-01T00:00:00Z",
        {"src/parse.py": "def parse(x):\n    return x + 1\n", "tasks/a.md": "status: open\n"},
    )
    commit(
        repo,
        "Fix off-by-one in parse",
        "2024-01-02T00:00:00Z",
        {"src/parse.py": "def parse(x):\n    return x\n", "tasks/a.md": "status: done\n"},
    )
    (repo / ".gitattributes").write_text("* diff=evil filter=evil merge=evil\n")
    commit(repo, "attributes", "2024-01-03T00:00:00Z")
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text("* diff=evil filter=evil\n")

    def trap(name: str, tail: str = "") -> str:
        return f"sh -c 'touch {pwned}/{name}{tail}' --"

    hooks = repo / ".git" / "evil-hooks"
    hooks.mkdir()
    for hook in HOOKS:
        (hooks / hook).write_text(f"#!/bin/sh\ntouch {pwned}/hook-{hook}\n")
        (hooks / hook).chmod(0o755)
    config = {
        "diff.evil.textconv": f"sh -c 'touch {pwned}/textconv; cat \"$1\"' --",
        "diff.evil.command": trap("ext-diff"),
        "diff.external": trap("diff-external"),
        "filter.evil.clean": f"sh -c 'touch {pwned}/clean; cat'",
        "filter.evil.smudge": f"sh -c 'touch {pwned}/smudge; cat'",
        "filter.evil.process": trap("process"),
        "filter.evil.required": "true",
        "core.fsmonitor": trap("fsmonitor"),
        "core.hooksPath": str(hooks),
        "core.pager": trap("pager"),
        "log.showSignature": "true",
        "gpg.program": trap("gpg"),
        "merge.evil.driver": trap("merge"),
    }
    for key, value in config.items():
        run_git(repo, "config", key, value)
    (repo / "src" / "parse.py").write_text("changed in the work tree\n")  # index refresh, clean
    return repo, pwned


def left(pwned: Path) -> list[str]:
    return sorted(p.name for p in pwned.iterdir())


def test_the_traps_are_live(tmp_path: Path) -> None:
    """Without the safe configuration git runs the repository's programs."""
    repo, pwned = hostile_repo(tmp_path)
    plain = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path)}
    for args in (["blame", "HEAD~1", "--", "src/parse.py"], ["diff", "HEAD"]):
        subprocess.run(["git", "-C", str(repo), *args], env=plain, capture_output=True)
    # blame runs the filter (process, taking precedence over smudge) and would run textconv
    assert {"fsmonitor", "process"} <= set(left(pwned)), left(pwned)


#: Every git subcommand the loaders run (load/git/, load/board/task_files.py), as they call it,
#: and the commands that read the work tree (where filters and fsmonitor would run).
LOADER_COMMANDS = [
    ["blame", "--porcelain", "-w", "HEAD~1", "--", "src/parse.py"],
    ["log", "-p", "-M", "--numstat", "--format=%H", "--all"],
    ["log", "--reverse", "-p", "--unified=0", "--", "tasks/"],
    ["diff-tree", "-r", "-p", "-M", "HEAD", "HEAD~1"],
    ["show", "HEAD~1"],
    ["diff", "HEAD~1"],
    ["status", "--porcelain"],
    ["rev-parse", "--is-bare-repository", "--is-shallow-repository", "--show-toplevel"],
    ["rev-list", "--all"],
    ["for-each-ref"],
    ["notes", "--ref", "reflection", "list"],
    ["config", "--get", "remote.origin.url"],
]


@pytest.mark.parametrize("args", LOADER_COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_every_loader_git_command_runs_nothing_from_the_repository(
    tmp_path: Path, args: list[str]
) -> None:
    repo, pwned = hostile_repo(tmp_path)
    git(repo, *args)
    done = git(repo, "cat-file", "--batch", input=b"HEAD:src/parse.py\n")
    assert done.returncode == 0 and b"return x" in done.stdout
    assert left(pwned) == []


def test_load_git_with_szz_and_the_board_loader_run_nothing(tmp_path: Path) -> None:
    repo, pwned = hostile_repo(tmp_path)
    db_path = tmp_path / "out.duckdb"
    env = {
        **os.environ,
        "CI": "1",
        # the caller's environment cannot add config or an external diff either
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "core.fsmonitor",
        "GIT_CONFIG_VALUE_0": f"touch {pwned}/env-fsmonitor",
        "GIT_EXTERNAL_DIFF": f"touch {pwned}/env-external-diff",
    }
    env.pop("REFLECT_DB", None)
    done = run_reflect(
        "load", "git", str(repo), "--szz", "--db", str(db_path), cwd=tmp_path, env=env
    )
    assert done.returncode == 0, done.stderr
    con = connect(db_path)
    try:
        assert con.execute("SELECT count(*) FROM commits").fetchone() == (3,)
        # SZZ blamed the fix's deleted line back to the first commit: the blame path ran
        assert con.execute("SELECT count(*) FROM fix_inducing").fetchone()[0] >= 1  # type: ignore[index]
        load_board(con, repo, "git-files")
        assert con.execute("SELECT status FROM tasks").fetchall() == [("done",)]
    finally:
        con.close()
    assert left(pwned) == []


def test_a_ref_with_a_broken_name_is_skipped_as_git_skips_it(tmp_path: Path) -> None:
    """Issue 34, item 11: ``refs/heads/with space`` written directly (git warns "ignoring ref
    with broken name") used to fail the whole load ("bad object 0000…")."""
    repo = new_repo(tmp_path / "clone")
    sha = commit(repo, "one", "2024-01-01T00:00:00Z", {"a.txt": "a\n"})
    commit(repo, "two", "2024-01-02T00:00:00Z", {"a.txt": "b\n"})
    (repo / ".git" / "refs" / "heads" / "with space").write_text(sha + "\n")
    db_path = tmp_path / "out.duckdb"
    done = run_reflect("load", "git", str(repo), "--db", str(db_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    con = connect(db_path)
    try:
        assert con.execute("SELECT count(*) FROM commits").fetchone() == (2,)
    finally:
        con.close()


def test_an_szz_load_stores_its_counts_with_each_batch(tmp_path: Path) -> None:
    """Issue 34, item 11: a git-szz load interrupted after storing fixes said 0 rows in
    ``loads``; each batch's counts now commit with its rows."""
    from agent_reflection.load.git.history import load_git_history
    from agent_reflection.load.git.szz import load_fix_inducing

    repo = new_repo(tmp_path / "clone")
    commit(repo, "add", "2024-01-01T00:00:00Z", {"a.py": "x = 1\ny = 2\nz = 3\n"})
    commit(repo, "Fix x", "2024-01-02T00:00:00Z", {"a.py": "x = 10\ny = 2\nz = 3\n"})
    commit(repo, "Fix y", "2024-01-03T00:00:00Z", {"a.py": "x = 10\ny = 20\nz = 3\n"})
    commit(repo, "Fix z", "2024-01-04T00:00:00Z", {"a.py": "x = 10\ny = 20\nz = 30\n"})
    con = connect(tmp_path / "out.duckdb")
    try:
        load_git_history(con, repo)
        seen: list[int] = []

        def after_batch(_fixes: int) -> None:  # what a crash right now would leave in loads
            ((loaded,),) = con.execute(
                "SELECT rows_loaded FROM loads WHERE source = 'git-szz'"
            ).fetchall()
            seen.append(int(loaded))

        summary = load_fix_inducing(con, repo, batch_fixes=1, workers=1, progress=after_batch)
    finally:
        con.close()
    assert summary.loaded == 3
    assert seen == [1, 2, 3]


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="giving the clone to another user needs root")
def test_git_ownership_check_keeps_the_users_safe_directory(tmp_path: Path) -> None:
    """The load reads no global config, yet a clone owned by another user that the user
    trusted with ``safe.directory`` (global config) still loads; an untrusted one does not."""
    repo = new_repo(tmp_path / "theirs")
    commit(repo, "one", "2024-01-01T00:00:00Z", {"a.txt": "a\n"})
    for path in [repo, *repo.rglob("*")]:
        os.lchown(path, 4321, 4321)
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "CI": "1", "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}
    env.pop("GIT_CONFIG_GLOBAL", None)

    def load(db: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "agent_reflection", "load", "git", str(repo), "--db", db],
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )

    refused = load(str(tmp_path / "a.duckdb"))
    assert refused.returncode != 0 and "dubious ownership" in refused.stderr
    (home / ".gitconfig").write_text(f"[safe]\n\tdirectory = {repo}\n")
    trusted = load(str(tmp_path / "b.duckdb"))
    assert trusted.returncode == 0, trusted.stderr


def test_a_filter_driver_named_with_a_latin_1_byte_is_switched_off_too(tmp_path: Path) -> None:
    """The repository's config names a filter driver with a byte that is not UTF-8: the
    loader's settings switch that driver off by its own bytes (read as text, U+FFFD, they
    named another driver and left this one as the repository set it)."""
    repo, pwned = hostile_repo(tmp_path)
    name = os.fsdecode(b"caf\xe9")
    run_git(repo, "config", f"filter.{name}.process", f"sh -c 'touch {pwned}/latin' --")
    argv = git_argv(repo, "config", "--get", f"filter.{name}.process")
    assert f"filter.{name}.process=" in argv
    done = subprocess.run(argv, capture_output=True, env=git_env(None), check=False)
    assert done.stdout == b"\n"  # git reads the switched-off (empty) command
