"""Tasks kept as files in a real git repository: status history from one git log pass."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from agent_reflection.load.board.loader import load_board
from agent_reflection.load.board.model import ParseOptions
from agent_reflection.load.board.source import BoardFormatError
from agent_reflection.store.db import connect
from conftest import run_git


def _commit(repo: Path, day: int, message: str) -> None:
    stamp = f"2024-02-{day:02d}T12:00:00+01:00"
    env = {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-q", "-m", message, env=env)


def _at(day: int) -> datetime:
    return datetime(2024, 2, day, 11, tzinfo=UTC)


def _md(status: str) -> str:
    return f"---\ntitle: Login page\nstatus: {status}\n---\n\n# Login\n\nBody text.\n"


@pytest.fixture
def task_repo(git_repo: Path) -> Path:
    tasks = git_repo / "tasks"
    tasks.mkdir()
    (tasks / "login.md").write_text(_md("todo"))
    _commit(git_repo, 1, "add login task")
    (tasks / "login.md").write_text(_md("doing"))
    (tasks / "api.json").write_text(json.dumps({"title": "API", "status": "open"}, indent=2))
    _commit(git_repo, 2, "start login, add api")
    (tasks / "login.md").write_text(_md("done"))
    (git_repo / "README.md").write_text("changed outside the folder\n")
    _commit(git_repo, 3, "login done")
    (tasks / "api.json").rename(tasks / "api-v2.json")
    (tasks / "notes.yaml").write_text("status: closed\n")
    (tasks / "plain.md").write_text("# Just a heading\n")
    (tasks / "script.py").write_text("# a comment, not a title\n")
    _commit(git_repo, 4, "rename api, add notes")
    (tasks / "login.md").write_text(_md("reopened"))
    (tasks / "notes.yaml").unlink()
    (tasks / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    _commit(git_repo, 5, "reopen login, drop notes, add image")
    return git_repo


@pytest.fixture
def db(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    con = connect(tmp_path / "board.duckdb")
    yield con
    con.close()


def test_task_files_history(task_repo: Path, db: duckdb.DuckDBPyConnection) -> None:
    summary = load_board(db, task_repo, "git-files")
    assert (summary.read, summary.loaded, summary.rejected) == (6, 5, 1)
    rows = db.execute(
        "SELECT task_ref, title, status, created_at, completed_at, updated_on, source, category"
        " FROM tasks ORDER BY 1"
    ).fetchall()
    assert rows == [
        ("tasks/api-v2.json", "API", "open", _at(2), None, _at(4), "git-files", "task"),
        ("tasks/login.md", "Login page", "reopened", _at(1), _at(3), _at(5), "git-files", "task"),
        ("tasks/notes.yaml", None, "closed", _at(4), _at(4), _at(5), "git-files", "task"),
        ("tasks/plain.md", "Just a heading", None, _at(4), None, _at(4), "git-files", "task"),
        ("tasks/script.py", None, None, _at(4), None, _at(4), "git-files", "task"),
    ]
    login = db.execute(
        "SELECT \"at\", kind, detail FROM task_events WHERE task_ref = 'tasks/login.md'"
        ' ORDER BY "at", kind'
    ).fetchall()
    assert login == [
        (_at(1), "created", ""),
        (_at(1), "status_changed", " -> todo"),
        (_at(2), "status_changed", "todo -> doing"),
        (_at(3), "status_changed", "doing -> done"),
        (_at(5), "status_changed", "done -> reopened"),
    ]
    others = db.execute(
        "SELECT task_ref, kind, detail FROM task_events WHERE task_ref <> 'tasks/login.md'"
        " AND kind IN ('renamed', 'deleted') ORDER BY 1"
    ).fetchall()
    assert others == [
        ("tasks/api-v2.json", "renamed", "tasks/api.json -> tasks/api-v2.json"),
        ("tasks/notes.yaml", "deleted", ""),
    ]
    location, reason = db.execute("SELECT location, reason FROM rejected").fetchone()  # type: ignore[misc]
    assert location.endswith(":tasks/img.png") and "binary" in reason


def test_reload_and_new_commits(task_repo: Path, db: duckdb.DuckDBPyConnection) -> None:
    load_board(db, task_repo, "git-files")
    before = db.execute("SELECT * FROM tasks ORDER BY ALL").fetchall()
    again = load_board(db, task_repo, "git-files")
    assert (again.loaded, again.already_present, again.rejected) == (0, 5, 1)
    assert db.execute("SELECT * FROM tasks ORDER BY ALL").fetchall() == before
    (task_repo / "tasks" / "api-v2.json").write_text('{"title": "API", "status": "Done"}\n')
    _commit(task_repo, 6, "api done")
    third = load_board(db, task_repo, "git-files")
    assert (third.loaded, third.already_present) == (1, 4)
    row = db.execute("SELECT status, completed_at FROM tasks WHERE task_ref = 'tasks/api-v2.json'")
    assert row.fetchone() == ("Done", _at(6))


def test_other_folder_and_not_a_repo(
    task_repo: Path, tmp_path: Path, db: duckdb.DuckDBPyConnection
) -> None:
    summary = load_board(db, task_repo, "git-files", ParseOptions(path_filter="data/"))
    assert (summary.read, summary.loaded) == (0, 0)
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(BoardFormatError, match="not a git repository"):
        load_board(db, plain, "git-files")


def test_bare_clone_and_spaces_in_paths(
    git_repo: Path, tmp_path: Path, db: duckdb.DuckDBPyConnection
) -> None:
    folder = git_repo / "data"
    folder.mkdir()
    (folder / "my task é.yaml").write_text("title: spaced\nstatus: open\n")
    _commit(git_repo, 1, "add")
    (folder / "my task é.yaml").write_text("title: spaced\nstatus: Completed\n")
    _commit(git_repo, 2, "finish")
    bare = tmp_path / "bare.git"
    run_git(tmp_path, "clone", "-q", "--bare", str(git_repo), str(bare))
    summary = load_board(db, bare, "git-files", ParseOptions(path_filter="data/"))
    assert (summary.read, summary.loaded) == (1, 1)
    row = db.execute("SELECT task_ref, title, status, created_at, completed_at FROM tasks")
    assert row.fetchone() == ("data/my task é.yaml", "spaced", "Completed", _at(1), _at(2))


def test_a_remote_url_that_is_not_utf_8_names_the_origin_by_its_text(
    task_repo: Path, db: duckdb.DuckDBPyConnection
) -> None:
    """git config values are bytes: a remote named with a Latin-1 byte gives the tasks'
    origin with U+FFFD for it (reading it as UTF-8 stopped the load)."""
    run_git(task_repo, "config", "remote.origin.url", os.fsdecode(b"https://h/caf\xe9.git"))
    summary = load_board(db, task_repo, "git-files")
    assert summary.loaded == 5
    origins = {r[0] for r in db.execute("SELECT DISTINCT origin FROM tasks").fetchall()}
    assert origins == {"https://h/caf\ufffd.git"}
