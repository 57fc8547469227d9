"""A no-change ``reflect load git`` answered from the state file beside the database.

Every test runs the real CLI in a subprocess on real git repositories. Whenever something
changed (a ref, the database, an option, the state file), the run must take the full path and
leave the database exactly as the full path leaves a copy of it that has no state file; when
nothing changed, the run must print the counts the full path prints and leave the file alone.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from agent_reflection.load.git.unchanged import (
    code_identity,
    file_identity,
    ref_snapshot,
    state_path,
)
from conftest import run_git

UNCHANGED = re.compile(
    r"^git load from (?P<origin>.+): unchanged since load (?P<load>\d+): "
    r"read 0 = loaded 0 \+ rejected 0 \+ already present 0$"
)
#: The tables a git load (with notes and sessions) writes, compared without their load ids.
TABLES = (
    "commits",
    "commit_files",
    "git_tips",
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


def load(repo: Path | str, db: Path, *options: str) -> str:
    return reflect("load", "git", str(repo), "--db", str(db), *options, cwd=db.parent)


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


def without_load_ids(text: str) -> str:
    return re.sub(r" load \d+ from ", " load N from ", text).replace("twin-", "")


def full_path_twin(db: Path) -> Path:
    """A copy of ``db`` without a state file beside it: a load into it takes the full path."""
    twin = db.with_name("twin-" + db.name)
    shutil.copyfile(db, twin)
    assert not state_path(twin).exists()
    return twin


def assert_full_path(repo: Path | str, db: Path, *options: str) -> str:
    """Load ``repo`` into ``db`` and into a state-less copy: both take the full path, print the
    same and leave the same rows."""
    twin = full_path_twin(db)
    out = load(repo, db, *options)
    assert "unchanged since" not in out, out
    assert without_load_ids(out) == without_load_ids(load(repo, twin, *options))
    assert content(db) == content(twin)
    twin.unlink()
    state_path(twin).unlink(missing_ok=True)
    return out


@pytest.fixture
def settled(git_repo: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A repository of three commits and a tag, loaded once into ``db`` (the state written)."""
    commit(git_repo, "a", "Add a")
    commit(git_repo, "b", "fix: b")
    run_git(git_repo, "tag", "-a", "v1", "-m", "annotated")
    db = tmp_path / "g.duckdb"
    first = load(git_repo, db)
    assert first.startswith("git load 1 ") and "read 3 = loaded 3 " in first, first
    assert state_path(db).exists()
    return git_repo, db


def test_nothing_changed_answers_from_the_state_without_touching_the_database(
    settled: tuple[Path, Path],
) -> None:
    repo, db = settled
    before = file_identity(db)
    twin = full_path_twin(db)
    out = load(repo, db)
    match = UNCHANGED.match(out.strip())
    assert match is not None, out
    assert match["origin"] == str(repo.resolve()) and match["load"] == "1"
    # the full path prints the same counts, and finds nothing to write but its loads row
    full = load(repo, twin)
    assert full.strip().endswith("read 0 = loaded 0 + rejected 0 + already present 0"), full
    assert content(db) == content(twin)
    assert file_identity(db) == before and load_ids(db) == [1]
    assert load(repo, db, "--silent") == ""
    # again after the full path's re-load of the twin wrote its own state
    assert UNCHANGED.match(load(repo, twin).strip())


def test_a_new_commit_then_nothing(settled: tuple[Path, Path]) -> None:
    repo, db = settled
    commit(repo, "c", "Add c")
    out = assert_full_path(repo, db)
    assert "read 1 = loaded 1 " in out
    again = load(repo, db)
    assert UNCHANGED.match(again.strip()) and "since load 2" in again, again


def recorded_tips(db: Path) -> set[str]:
    with duckdb.connect(str(db), read_only=True) as con:
        return {row[0] for row in con.execute("SELECT sha FROM git_tips").fetchall()}


@pytest.mark.slow
def test_a_force_pushed_branch_then_its_old_tip_collected(settled: tuple[Path, Path]) -> None:
    repo, db = settled
    old_tip = run_git(repo, "rev-parse", "HEAD").strip()
    run_git(repo, "tag", "-d", "v1")
    run_git(repo, "reset", "-q", "--hard", "HEAD~1")
    rewritten = commit(repo, "b2", "Rewrite b")
    out = assert_full_path(repo, db)
    assert "loaded 1 " in out
    with duckdb.connect(str(db), read_only=True) as con:
        assert (rewritten,) in con.execute("SELECT sha FROM commits").fetchall()
    assert UNCHANGED.match(load(repo, db).strip())
    # the old tip stays recorded while git has it; once collected, a re-load forgets it
    assert old_tip in recorded_tips(db)
    run_git(repo, "reflog", "expire", "--expire=now", "--all")
    run_git(repo, "gc", "-q", "--prune=now")
    assert_full_path(repo, db)
    assert old_tip not in recorded_tips(db)
    assert UNCHANGED.match(load(repo, db).strip())


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
def test_any_ref_change_takes_the_full_path(
    settled: tuple[Path, Path], make_ref: list[str]
) -> None:
    repo, db = settled
    run_git(repo, *make_ref)
    assert_full_path(repo, db)
    assert UNCHANGED.match(load(repo, db).strip())


@pytest.mark.slow
def test_a_new_notes_ref_takes_the_full_path_every_time(settled: tuple[Path, Path]) -> None:
    repo, db = settled
    note = json.dumps({"not": "a sidecar"})
    run_git(repo, "notes", "--ref=reflection", "add", "-m", note, "HEAD")
    out = assert_full_path(repo, db)
    assert "git-notes load" in out or "notes" in out, out
    # a repository with reflection notes prints their load each time: never skipped
    assert "unchanged since" not in assert_full_path(repo, db)
    assert not state_path(db).exists()


def test_an_unread_notes_ref_changes_the_refs(settled: tuple[Path, Path]) -> None:
    repo, db = settled
    run_git(repo, "notes", "add", "-m", "a plain note", "HEAD")  # refs/notes/commits
    assert_full_path(repo, db)
    assert UNCHANGED.match(load(repo, db).strip())


@pytest.mark.slow
def test_the_database_written_by_another_load(settled: tuple[Path, Path], tmp_path: Path) -> None:
    repo, db = settled
    other = tmp_path / "other"
    other.mkdir()
    run_git(other, "init", "-q", "-b", "main")
    commit(other, "x", "Other repo")
    assert load(other, db).startswith("git load 2 ")  # the state is now the other repo's
    assert_full_path(repo, db)
    assert UNCHANGED.match(load(repo, db).strip())
    assert "unchanged since" not in assert_full_path(other, db)


def test_a_deleted_database_loads_again(settled: tuple[Path, Path]) -> None:
    repo, db = settled
    db.unlink()
    out = load(repo, db)
    assert out.startswith("git load 1 ") and "read 3 = loaded 3 " in out, out


def test_a_write_ahead_log_or_a_touched_file_takes_the_full_path(
    settled: tuple[Path, Path],
) -> None:
    repo, db = settled
    wal = db.with_name(db.name + ".wal")
    wal.write_bytes(b"")
    assert file_identity(db) is None
    wal.unlink()
    os.utime(db)  # same bytes, new modification time
    assert_full_path(repo, db)
    # a read-only look leaves the file as it was
    with duckdb.connect(str(db), read_only=True) as con:
        con.execute("SELECT count(*) FROM commits").fetchone()
    assert UNCHANGED.match(load(repo, db).strip())


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda text: "{not json", id="garbage"),
        pytest.param(lambda text: text.replace('"format": 1', '"format": 0'), id="old-format"),
        pytest.param(lambda text: text.replace('"load_id"', '"load"'), id="missing-key"),
        pytest.param(lambda text: re.sub(r'"refs": "\w+"', '"refs": "0"', text), id="other-refs"),
    ],
)
def test_a_stale_or_damaged_state_file(settled: tuple[Path, Path], damage: Any) -> None:
    repo, db = settled
    state = state_path(db)
    state.write_text(damage(state.read_text()))
    assert_full_path(repo, db)
    assert UNCHANGED.match(load(repo, db).strip())


def test_a_state_copied_to_another_database(settled: tuple[Path, Path], tmp_path: Path) -> None:
    repo, db = settled
    copy = tmp_path / "copy.duckdb"
    shutil.copy2(db, copy)  # same bytes and times, another file
    shutil.copy2(state_path(db), state_path(copy))
    out = load(repo, copy)
    assert "unchanged since" not in out and "read 0 = " in out


def test_two_databases_each_keep_their_state(settled: tuple[Path, Path], tmp_path: Path) -> None:
    repo, db = settled
    second = tmp_path / "second.duckdb"
    assert load(repo, second).startswith("git load 1 ")
    assert UNCHANGED.match(load(repo, second).strip())
    assert UNCHANGED.match(load(repo, db).strip())


@pytest.mark.parametrize(
    "options",
    [
        pytest.param(("--name", "renamed"), id="name"),
        pytest.param(("--full",), id="full"),
        pytest.param(("--json",), id="json"),
        pytest.param(("--rev", "main"), id="rev"),
        pytest.param(("--since", "2000-01-01"), id="since"),
        pytest.param(("--szz",), id="szz"),
    ],
)
def test_options_take_the_full_path(settled: tuple[Path, Path], options: tuple[str, ...]) -> None:
    repo, db = settled
    assert_full_path(repo, db, *options)


@pytest.mark.slow
def test_a_subfolder_and_a_bundle(settled: tuple[Path, Path], tmp_path: Path) -> None:
    repo, db = settled
    (repo / "sub").mkdir()
    # the folder given is part of the state: a sub-folder of the same clone is loaded in full
    assert_full_path(repo / "sub", db)
    assert UNCHANGED.match(load(repo / "sub", db).strip())
    bundle = tmp_path / "r.bundle"
    run_git(repo, "bundle", "create", str(bundle), "--all")
    cache = ("--cache-dir", str(tmp_path / "cache"))
    first = load(bundle, db, *cache)
    assert "unchanged since" not in first and "unchanged since" not in load(bundle, db, *cache)


def test_git_settings_and_the_code_are_part_of_the_state(
    settled: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, db = settled
    before = code_identity()
    monkeypatch.setenv("GIT_NAMESPACE", "elsewhere")  # git would list other refs
    assert code_identity() != before
    out = reflect(
        "load", "git", str(repo), "--db", str(db), cwd=db.parent, env={"GIT_NAMESPACE": "x"}
    )
    assert "unchanged since" not in out


def test_ref_snapshot_lists_where_a_load_starts(settled: tuple[Path, Path]) -> None:
    repo, _ = settled
    snapshot = ref_snapshot(repo)
    assert snapshot is not None and not snapshot.has_notes
    started = run_git(repo, "rev-parse", "--revs-only", "--branches", "--tags", "--remotes", "HEAD")
    assert snapshot.starts == frozenset(started.split())
    assert ref_snapshot(repo.parent / "missing") is None


@pytest.mark.shared
@pytest.mark.slow
def test_flask_re_loads(shared_dir: Path, tmp_path: Path) -> None:
    """The flask history (a clone of the shared bundle): a no-change re-load answers from the
    state, and after a force-push of one branch and a new tag the full path loads what is new,
    as it does into a state-less copy."""
    clone = tmp_path / "flask"
    bundle = shared_dir / "data" / "git" / "flask.bundle"
    subprocess.run(["git", "clone", "-q", str(bundle), str(clone)], check=True, capture_output=True)
    run_git(clone, "checkout", "-q", "-B", "work", "origin/main")  # the bundle names no HEAD
    db = tmp_path / "flask.duckdb"
    first = load(clone, db)
    total = len(run_git(clone, "rev-list", "--branches", "--tags", "--remotes").split())
    assert f"read {total:,} = loaded {total:,} " in first, first
    assert UNCHANGED.match(load(clone, db).strip())
    run_git(clone, "reset", "-q", "--hard", "HEAD~3")
    commit(clone, "rewritten.txt", "Rewrite the last three commits")
    run_git(clone, "tag", "unchanged-test", "HEAD~10")
    out = assert_full_path(clone, db)
    assert "read 1 = loaded 1 + rejected 0 + already present 0" in out, out
    assert UNCHANGED.match(load(clone, db).strip())
