"""Re-loads of a git history through the real CLI: git stops at the tips the last complete
load recorded (``git_tips``), so a re-load lists only what is new.

Every test runs ``reflect load git`` in a subprocess on real git repositories. Whatever changed
since the last load (a ref, the database, an option, the recorded tips), the re-load must leave
the rows a ``--full`` re-load of a copy of the database leaves (``git_tips`` aside: a full load
keeps every tip it finds, an incremental one forgets the tips its new ones reach), and when
nothing changed it must read nothing: ``read 0 = loaded 0 + rejected 0 + already present 0``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from agent_reflection.load.git.repo import open_repo, pin_revisions
from conftest import run_git

NOTHING = "read 0 = loaded 0 + rejected 0 + already present 0"
#: The tables a git load (with notes and sessions) writes, compared without their load ids.
TABLES = (
    "commits",
    "commit_files",
    "git_notes",
    "git_notes_tips",
    "ai_notes",
    "reflections",
    "session_commits",
    "session_outcomes",
    "fix_inducing",
    "fix_changes",
)


def reflect(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    run_env = {**os.environ, "CI": "1", **(env or {})}
    run_env.pop("REFLECT_DB", None)
    done = subprocess.run(
        [sys.executable, "-m", "agent_reflection", *args],
        cwd=cwd,
        env=run_env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def load(repo: Path | str, db: Path, *options: str, env: dict[str, str] | None = None) -> str:
    return reflect("load", "git", str(repo), "--db", str(db), *options, cwd=db.parent, env=env)


def commit(repo: Path, name: str, message: str) -> str:
    (repo / name).write_text(message + "\n")
    run_git(repo, "add", name)
    run_git(repo, "commit", "-q", "-m", message)
    return run_git(repo, "rev-parse", "HEAD").strip()


def content(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of :data:`TABLES`, without load ids, sorted."""
    with duckdb.connect(str(db), read_only=True) as con:
        tables: dict[str, list[tuple[Any, ...]]] = {}
        for table in TABLES:
            columns = [
                row[0]
                for row in con.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
                    "ORDER BY ordinal_position",
                    [table],
                ).fetchall()
                if row[0] != "load_id"
            ]
            quoted = ", ".join(f'"{column}"' for column in columns)
            rows = con.execute(f"SELECT {quoted} FROM {table}").fetchall()
            tables[table] = sorted(rows, key=repr)
        return tables


def load_ids(db: Path) -> list[int]:
    with duckdb.connect(str(db), read_only=True) as con:
        return [row[0] for row in con.execute("SELECT load_id FROM loads ORDER BY 1").fetchall()]


def recorded_tips(db: Path) -> set[str]:
    with duckdb.connect(str(db), read_only=True) as con:
        return {row[0] for row in con.execute("SELECT sha FROM git_tips").fetchall()}


def counts(line: str) -> tuple[int, int, int, int]:
    """(read, loaded, rejected, already present) of a summary line."""
    tail = line.rsplit(": read ", 1)[1]
    numbers = [part.split()[-1] for part in tail.replace("=", "+").split("+")]
    read, loaded, rejected, present = (int(n.replace(",", "")) for n in numbers)
    return read, loaded, rejected, present


def git_line(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("git load "))


def assert_as_full(repo: Path | str, db: Path, *options: str) -> str:
    """Re-load ``repo`` into ``db``, and with ``--full`` into a copy of it: the same rows, the
    same commits loaded; the re-load's output."""
    twin = db.with_name("twin-" + db.name)
    shutil.copyfile(db, twin)
    out = load(repo, db, *options)
    full = load(repo, twin, *options, *(() if "--full" in options else ("--full",)))
    if "--json" not in options:
        assert counts(git_line(out))[1] == counts(git_line(full))[1], (out, full)
    assert content(db) == content(twin)
    twin.unlink()
    return out


@pytest.fixture
def settled(git_repo: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A repository of three commits and a tag, loaded once into ``db``."""
    commit(git_repo, "a", "Add a")
    commit(git_repo, "b", "fix: b")
    run_git(git_repo, "tag", "-a", "v1", "-m", "annotated")
    db = tmp_path / "g.duckdb"
    first = load(git_repo, db)
    assert first.startswith("git load 1 ") and "read 3 = loaded 3 " in first, first
    return git_repo, db


def test_nothing_changed_reads_nothing_and_writes_only_its_loads_row(
    settled: tuple[Path, Path],
) -> None:
    repo, db = settled
    before = content(db)
    out = load(repo, db)
    assert out.strip() == f"git load 2 from {repo.resolve()}: {NOTHING}", out
    assert content(db) == before and load_ids(db) == [1, 2]
    assert load(repo, db, "--silent") == ""
    assert content(db) == before and load_ids(db) == [1, 2, 3]


def test_a_new_commit_then_nothing(settled: tuple[Path, Path]) -> None:
    repo, db = settled
    commit(repo, "c", "Add c")
    out = assert_as_full(repo, db)
    assert "read 1 = loaded 1 " in out
    assert load(repo, db).strip().endswith(NOTHING)


@pytest.mark.slow
def test_a_force_pushed_branch_then_its_old_tip_collected(settled: tuple[Path, Path]) -> None:
    repo, db = settled
    old_tip = run_git(repo, "rev-parse", "HEAD").strip()
    run_git(repo, "tag", "-d", "v1")
    run_git(repo, "reset", "-q", "--hard", "HEAD~1")
    rewritten = commit(repo, "b2", "Rewrite b")
    out = assert_as_full(repo, db)
    assert "loaded 1 " in out
    with duckdb.connect(str(db), read_only=True) as con:
        assert (rewritten,) in con.execute("SELECT sha FROM commits").fetchall()
    assert load(repo, db).strip().endswith(NOTHING)
    # the old tip stays recorded while git has it; once collected, a re-load forgets it
    assert old_tip in recorded_tips(db)
    run_git(repo, "reflog", "expire", "--expire=now", "--all")
    run_git(repo, "gc", "-q", "--prune=now")
    assert_as_full(repo, db)
    assert old_tip not in recorded_tips(db)
    assert load(repo, db).strip().endswith(NOTHING)


@pytest.mark.parametrize(
    "make_ref",
    [
        pytest.param(["branch", "other", "HEAD~1"], id="new-branch-on-a-loaded-commit"),
        pytest.param(["tag", "v0", "HEAD~1"], id="new-lightweight-tag"),
        pytest.param(["update-ref", "refs/remotes/origin/main", "HEAD"], id="new-remote-ref"),
        pytest.param(["checkout", "-q", "--detach", "HEAD~1"], id="detached-head"),
        pytest.param(["update-ref", "refs/pull/1/head", "HEAD"], id="ref-outside-the-load"),
    ],
)
def test_a_ref_on_loaded_commits_lists_nothing(
    settled: tuple[Path, Path], make_ref: list[str]
) -> None:
    repo, db = settled
    run_git(repo, *make_ref)
    assert assert_as_full(repo, db).strip().endswith(NOTHING)
    assert load(repo, db).strip().endswith(NOTHING)


@pytest.mark.slow
def test_a_new_notes_ref_is_loaded_each_time(settled: tuple[Path, Path]) -> None:
    repo, db = settled
    note = json.dumps({"not": "a sidecar"})
    run_git(repo, "notes", "--ref=reflection", "add", "-m", note, "HEAD")
    out = assert_as_full(repo, db)
    assert "git-notes load" in out or "notes" in out, out
    # a repository with reflection notes prints their load each time
    again = load(repo, db)
    assert "notes" in again and git_line(again).endswith(NOTHING), again


def test_an_unread_notes_ref_lists_nothing(settled: tuple[Path, Path]) -> None:
    repo, db = settled
    run_git(repo, "notes", "add", "-m", "a plain note", "HEAD")  # refs/notes/commits
    assert assert_as_full(repo, db).strip().endswith(NOTHING)


@pytest.mark.slow
def test_another_repository_in_between(settled: tuple[Path, Path], tmp_path: Path) -> None:
    repo, db = settled
    other = tmp_path / "other"
    other.mkdir()
    run_git(other, "init", "-q", "-b", "main")
    commit(other, "x", "Other repo")
    assert load(other, db).startswith("git load 2 ")
    assert assert_as_full(repo, db).strip().endswith(NOTHING)
    assert assert_as_full(other, db).strip().endswith(NOTHING)
    with duckdb.connect(str(db), read_only=True) as con:
        repos = con.execute("SELECT repo, count(*) FROM commits GROUP BY 1 ORDER BY 1").fetchall()
    assert repos == [("other", 1), ("repo", 3)]


def test_a_deleted_database_loads_again(settled: tuple[Path, Path]) -> None:
    repo, db = settled
    db.unlink()
    out = load(repo, db)
    assert out.startswith("git load 1 ") and "read 3 = loaded 3 " in out, out


def test_a_touched_or_read_database_reads_nothing(settled: tuple[Path, Path]) -> None:
    repo, db = settled
    os.utime(db)  # same bytes, new modification time
    assert assert_as_full(repo, db).strip().endswith(NOTHING)
    with duckdb.connect(str(db), read_only=True) as con:
        con.execute("SELECT count(*) FROM commits").fetchone()
    assert load(repo, db).strip().endswith(NOTHING)


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        # a recorded id that is no commit of the repository is never handed to git
        pytest.param(
            "INSERT INTO git_tips (repo, sha, load_id) VALUES ('repo', repeat('0', 40), 1)",
            (0, 0, 0, 0),
            id="unknown-tip",
        ),
        # deleting a repo's commits retires its tips: the history is listed and loaded again
        pytest.param(
            "DELETE FROM commit_files; DELETE FROM commits", (3, 3, 0, 0), id="commits-deleted"
        ),
        # without tips git lists everything, which is already present
        pytest.param("DELETE FROM git_tips", (3, 0, 0, 3), id="tips-deleted"),
        # tips are per repo name: another name's tips do not stop this one
        pytest.param(
            "UPDATE git_tips SET repo = 'elsewhere'", (3, 0, 0, 3), id="tips-of-another-name"
        ),
    ],
)
def test_changed_tips_decide_what_is_listed(
    settled: tuple[Path, Path], damage: str, expected: tuple[int, int, int, int]
) -> None:
    repo, db = settled
    with duckdb.connect(str(db)) as con:
        con.execute(damage)
    assert counts(git_line(assert_as_full(repo, db))) == expected
    assert load(repo, db).strip().endswith(NOTHING)


def test_a_copy_of_the_database_re_loads_from_its_own_tips(
    settled: tuple[Path, Path], tmp_path: Path
) -> None:
    repo, db = settled
    copy = tmp_path / "copy.duckdb"
    shutil.copy2(db, copy)  # same bytes and times, another file
    out = load(repo, copy)
    assert out.startswith("git load 2 ") and out.strip().endswith(NOTHING), out
    assert content(copy) == content(db)


def test_two_databases_each_keep_their_tips(settled: tuple[Path, Path], tmp_path: Path) -> None:
    repo, db = settled
    second = tmp_path / "second.duckdb"
    assert load(repo, second).startswith("git load 1 ")
    assert load(repo, second).strip().endswith(NOTHING)
    assert load(repo, db).strip().endswith(NOTHING)
    assert recorded_tips(db) == recorded_tips(second)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        pytest.param(("--name", "renamed"), (3, 3, 0, 0), id="name"),
        pytest.param(("--full",), (3, 0, 0, 3), id="full"),
        pytest.param(("--json",), (0, 0, 0, 0), id="json"),
        pytest.param(("--rev", "main"), (0, 0, 0, 0), id="rev"),
        pytest.param(("--since", "2000-01-01"), (0, 0, 0, 0), id="since"),
        pytest.param(("--szz",), (0, 0, 0, 0), id="szz"),
    ],
)
def test_options_on_a_re_load(
    settled: tuple[Path, Path], options: tuple[str, ...], expected: tuple[int, int, int, int]
) -> None:
    repo, db = settled
    out = assert_as_full(repo, db, *options)
    if "--json" in options:
        summary = json.loads(out)["loads"][0]
        found = (summary["read"], summary["loaded"], summary["rejected"])
        assert (*found, summary["already_present"]) == expected
    else:
        assert counts(git_line(out)) == expected, out


@pytest.mark.slow
def test_a_subfolder_and_a_bundle(settled: tuple[Path, Path], tmp_path: Path) -> None:
    repo, db = settled
    (repo / "sub").mkdir()
    # a sub-folder of the clone is the same repository
    assert assert_as_full(repo / "sub", db).strip().endswith(NOTHING)
    bundle = tmp_path / "r.bundle"
    run_git(repo, "bundle", "create", str(bundle), "--all")
    cache = ("--cache-dir", str(tmp_path / "cache"))
    first = load(bundle, db, *cache)
    assert first.startswith("git load ") and "loaded 3 " in first, first  # another name: r
    assert load(bundle, db, *cache).strip().endswith(NOTHING)


def test_the_callers_git_dir_does_not_redirect_the_load(
    settled: tuple[Path, Path], tmp_path: Path
) -> None:
    """``GIT_DIR`` / ``GIT_WORK_TREE`` of the caller's environment (set inside a git hook, say)
    are dropped: git reads the repository named on the command line."""
    repo, db = settled
    elsewhere = {"GIT_DIR": str(tmp_path / "nowhere"), "GIT_WORK_TREE": str(tmp_path)}
    assert load(repo, db, env=elsewhere).strip().endswith(NOTHING)
    commit(repo, "c", "Add c")
    assert "read 1 = loaded 1 " in load(repo, db, env=elsewhere)


def test_a_load_starts_from_every_branch_tag_remote_and_head(settled: tuple[Path, Path]) -> None:
    repo, _ = settled
    run_git(repo, "update-ref", "refs/remotes/origin/main", "HEAD~1")
    run_git(repo, "update-ref", "refs/pull/1/head", "HEAD~2")  # not a branch, tag or remote
    _, pinned = pin_revisions(open_repo(repo), None)
    started = run_git(repo, "rev-parse", "--revs-only", "--branches", "--tags", "--remotes", "HEAD")
    assert set(pinned.include) == set(started.split())
    assert run_git(repo, "rev-parse", "refs/pull/1/head").strip() not in pinned.include


@pytest.mark.shared
@pytest.mark.slow
def test_flask_re_loads(shared_dir: Path, tmp_path: Path) -> None:
    """The flask history (a clone of the shared bundle): a no-change re-load reads nothing, and
    after a force-push of one branch and a new tag it loads what is new, as a full re-load of a
    copy does."""
    clone = tmp_path / "flask"
    bundle = shared_dir / "data" / "git" / "flask.bundle"
    subprocess.run(["git", "clone", "-q", str(bundle), str(clone)], check=True, capture_output=True)
    run_git(clone, "checkout", "-q", "-B", "work", "origin/main")  # the bundle names no HEAD
    db = tmp_path / "flask.duckdb"
    first = load(clone, db)
    total = len(run_git(clone, "rev-list", "--branches", "--tags", "--remotes").split())
    assert f"read {total:,} = loaded {total:,} " in first, first
    assert load(clone, db).strip().endswith(NOTHING)
    run_git(clone, "reset", "-q", "--hard", "HEAD~3")
    commit(clone, "rewritten.txt", "Rewrite the last three commits")
    run_git(clone, "tag", "reload-test", "HEAD~10")
    out = assert_as_full(clone, db)
    assert "read 1 = loaded 1 + rejected 0 + already present 0" in out, out
    assert load(clone, db).strip().endswith(NOTHING)
