"""Sidecars in git notes (refs/notes/reflection) load like sidecar files: real git and DuckDB."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from agent_reflection.experiments.registration import load_preregistration
from agent_reflection.load.git.history import load_git_history
from agent_reflection.load.git.notes import Note, load_notes, note_sidecars
from agent_reflection.load.git.repo import open_repo
from agent_reflection.load.sessions import load_git_sessions
from agent_reflection.load.sidecars.loader import load_sidecars
from agent_reflection.store.db import connect
from session_repo import add_note, commit, new_repo, session_sidecar
from sidecar_samples import write


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return new_repo(tmp_path / "shop")


@pytest.fixture
def con(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    return connect(tmp_path / "notes.duckdb")


def load(con: duckdb.DuckDBPyConnection, repo: Path):  # type: ignore[no-untyped-def]
    load_git_history(con, repo)
    return load_git_sessions(con, repo, load_preregistration())


def reflections(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    return con.execute(
        "SELECT session_id, source_file FROM reflections ORDER BY session_id"
    ).fetchall()


def test_note_sidecars_load_once_and_name_their_commit(
    repo: Path, con: duckdb.DuckDBPyConnection
) -> None:
    first = commit(repo, "add cart", "2024-01-02T10:00:00+00:00", {"cart.py": "x = 1\n"})
    second = commit(repo, "add pay", "2024-01-03T10:00:00+00:00", {"pay.py": "y = 1\n"})
    a = session_sidecar("s-a", "shop", "2024-01-02T09:00:00Z")
    b = session_sidecar("s-b", "shop", "2024-01-03T09:00:00Z")
    add_note(repo, first, a)
    add_note(repo, second, a, b)  # one note may name several sessions

    result = load(con, repo)
    notes = result.notes
    assert notes is not None and notes.reconciles
    assert (notes.read, notes.loaded, notes.already_present) == (3, 2, 1)
    assert [s for s, _ in reflections(con)] == ["s-a", "s-b"]
    # of s-a's two copies, the note of the lower commit id is the one stored
    assert reflections(con)[0][1] == f"refs/notes/reflection:shop@{min(first, second)}/sidecars/0"
    links = con.execute(
        "SELECT session_id, sha, link, confidence FROM session_commits ORDER BY ALL"
    ).fetchall()
    assert links == sorted(
        [("s-a", first, "note", 1.0), ("s-a", second, "note", 1.0), ("s-b", second, "note", 1.0)]
    )

    # again: the notes ref did not move, nothing is read; the derived rows are the same
    again = load(con, repo)
    assert again.notes is not None and again.notes.read == 0
    assert again.notes.detail["notes_skipped"] == "tip unchanged since the last load"
    assert con.execute("SELECT count(*) FROM reflections").fetchone() == (2,)
    assert con.execute("SELECT count(*) FROM session_commits").fetchone() == (3,)

    # a new note: only it is read
    third = commit(repo, "add ship", "2024-01-04T10:00:00+00:00", {"ship.py": "z = 1\n"})
    add_note(repo, third, session_sidecar("s-c", "shop", "2024-01-04T09:00:00Z"))
    later = load(con, repo)
    assert later.notes is not None
    assert (later.notes.read, later.notes.loaded, later.notes.detail["notes_read"]) == (1, 1, 1)
    assert [s for s, _ in reflections(con)] == ["s-a", "s-b", "s-c"]


def test_a_sidecar_in_a_file_and_in_a_note_is_one_record(
    repo: Path, con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    sha = commit(repo, "add cart", "2024-01-02T10:00:00+00:00", {"cart.py": "x = 1\n"})
    record = session_sidecar("s-a", "shop", "2024-01-02T09:00:00Z")
    load_sidecars(con, [write(tmp_path / "side" / "s.reflection.json", record)], workers=1)
    add_note(repo, sha, record)
    notes = load(con, repo).notes
    assert notes is not None and (notes.loaded, notes.already_present) == (0, 1)
    assert len(reflections(con)) == 1


def test_a_secret_in_a_note_is_redacted_as_in_the_file(
    repo: Path, con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """Notes pass the database's keyed redaction, as sidecar files do: one record, no secret."""
    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    sha = commit(repo, "add cart", "2024-01-02T10:00:00+00:00", {"cart.py": "x = 1\n"})
    record = session_sidecar("s-a", "shop", "2024-01-02T09:00:00Z")
    record["most_likely_wrong"]["description"] = f"the deploy token {token} is hard-coded"
    add_note(repo, sha, record)
    load(con, repo)
    (raw,) = con.execute("SELECT raw FROM reflections").fetchone() or ()
    assert token not in raw and "[REDACTED:github-token:" in raw
    # the same sidecar from its file afterwards: the same placeholder, so the same record
    loaded = load_sidecars(con, [write(tmp_path / "side" / "s.reflection.json", record)], workers=1)
    assert (loaded.loaded, loaded.already_present) == (0, 1)
    assert len(reflections(con)) == 1


def test_invalid_sidecars_and_foreign_notes_are_rejected_at_the_commit(
    repo: Path, con: duckdb.DuckDBPyConnection
) -> None:
    good = commit(repo, "one", "2024-01-02T10:00:00+00:00", {"a.py": "1\n"})
    bad = commit(repo, "two", "2024-01-03T10:00:00+00:00", {"b.py": "1\n"})
    foreign = commit(repo, "three", "2024-01-04T10:00:00+00:00", {"c.py": "1\n"})
    add_note(repo, good, session_sidecar("s-ok", "shop", "2024-01-02T09:00:00Z"))
    add_note(repo, bad, session_sidecar("s-bad", "shop", "2024-01-03T09:00:00Z", confidence=2))
    add_note(repo, foreign, body="reviewed-by: someone")
    notes = load(con, repo).notes
    assert notes is not None and notes.reconciles
    assert (notes.read, notes.loaded, notes.rejected) == (3, 1, 2)
    rejected = dict(
        con.execute("SELECT location, reason FROM rejected WHERE source = 'notes'").fetchall()
    )
    where = f"refs/notes/reflection:shop@{bad}/sidecars/0#/confidence"
    assert "a number in [0, 1], got 2" in rejected[where]
    foreign_note = rejected[f"refs/notes/reflection:shop@{foreign}"]
    assert "not a reflection note: invalid JSON" in foreign_note
    # the note of the rejected sidecar names no session: no link
    assert con.execute("SELECT session_id FROM session_commits").fetchall() == [("s-ok",)]
    # re-loading after a fixed note reads only the changed note
    add_note(repo, bad, session_sidecar("s-bad", "shop", "2024-01-03T09:00:00Z", confidence=0.2))
    fixed = load(con, repo).notes
    assert fixed is not None and (fixed.read, fixed.loaded) == (1, 1)


def test_a_lone_surrogate_escape_rejects_its_sidecar_not_the_load(
    repo: Path, con: duckdb.DuckDBPyConnection
) -> None:
    """``"\\udce9"`` is valid JSON but no text: DuckDB refuses to store it. The sidecar holding
    it is rejected at its field; the note's other sidecar loads (the whole load used to stop)."""
    sha = commit(repo, "one", "2024-01-02T10:00:00+00:00", {"a.py": "1\n"})
    odd = session_sidecar("s-odd", "shop", "2024-01-02T09:00:00Z")
    odd["most_likely_wrong"] = "the caf\udce9 path"
    ok = session_sidecar("s-ok", "shop", "2024-01-02T09:30:00Z")
    add_note(repo, sha, body=json.dumps({"notes_version": 1, "sidecars": [odd, ok]}))
    notes = load(con, repo).notes
    assert notes is not None and notes.reconciles
    assert (notes.read, notes.loaded, notes.rejected) == (2, 1, 1)
    (location,) = con.execute("SELECT location FROM rejected WHERE source = 'notes'").fetchone()
    assert location == f"refs/notes/reflection:shop@{sha}/sidecars/0#/most_likely_wrong"
    assert [s for s, _ in reflections(con)] == ["s-ok"]


def test_a_repo_without_notes_loads_as_before(repo: Path, con: duckdb.DuckDBPyConnection) -> None:
    commit(repo, "one", "2024-01-02T10:00:00+00:00", {"a.py": "1\n"})
    result = load(con, repo)
    assert result.notes is None and result.sessions is None  # no sidecar: nothing to derive
    assert con.execute("SELECT source FROM loads").fetchall() == [("git",)]
    assert con.execute("SELECT count(*) FROM session_commits").fetchone() == (0,)


def test_note_body_checks_name_the_note() -> None:
    note = Note("c" * 40, "b" * 40, json.dumps({"notes_version": 2, "sidecars": []}).encode())
    sidecars, problems = note_sidecars(note, "shop")
    assert sidecars == []
    assert problems[0].location.endswith("#/notes_version")
    assert "unsupported notes_version 2" in problems[0].reason


def reflect(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CI": "1"}
    env.pop("REFLECT_DB", None)
    return subprocess.run(
        [sys.executable, "-m", "agent_reflection", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.slow
def test_cli_reports_notes_and_sessions(repo: Path, tmp_path: Path) -> None:
    sha = commit(repo, "add cart", "2024-01-02T10:00:00+00:00", {"cart.py": "x = 1\n"})
    commit(repo, "later", "2024-03-02T10:00:00+00:00", {"z.py": "1\n"})
    add_note(repo, sha, session_sidecar("s-a", "shop", "2024-01-02T09:00:00Z"))
    db = tmp_path / "cli.duckdb"
    done = reflect("load", "git", str(repo), "--db", str(db), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "notes load" in done.stdout
    assert "sessions of shop: 1 linked commit(s) (1 note)" in done.stdout
    assert "1 right-so-far" in done.stdout
    as_json = reflect("load", "git", str(repo), "--db", str(db), "--json", cwd=tmp_path)
    doc = json.loads(as_json.stdout)
    assert doc["notes"]["read"] == 0 and doc["sessions"]["detail"]["links"] == {"note": 1}
    plain = new_repo(tmp_path / "plain")
    commit(plain, "one", "2024-01-02T10:00:00+00:00", {"a.py": "1\n"})
    quiet = reflect("load", "git", str(plain), "--db", str(db), cwd=tmp_path)
    assert quiet.returncode == 0, quiet.stderr
    assert "notes load" not in quiet.stdout and "sessions of" not in quiet.stdout
    assert len(quiet.stdout.splitlines()) == 1  # the git load line alone, as before


def test_notes_source_uses_the_open_repo(repo: Path) -> None:
    commit(repo, "one", "2024-01-02T10:00:00+00:00", {"a.py": "1\n"})
    con = connect(":memory:")
    assert load_notes(con, open_repo(repo)) is None


_NO_PANDAS = """
import sys
from agent_reflection.cli import main
try:
    main({argv!r})
except SystemExit as exit:
    assert not exit.code, exit.code
print("HEAVY=" + ",".join(m for m in ("pandas", "matplotlib", "scipy") if m in sys.modules))
"""


def test_loading_notes_and_sessions_does_not_import_pandas(repo: Path, tmp_path: Path) -> None:
    sha = commit(repo, "add cart", "2024-01-02T10:00:00+00:00", {"cart.py": "x = 1\n"})
    add_note(repo, sha, session_sidecar("s-a", "shop", "2024-01-02T09:00:00Z"))
    argv = ["load", "git", str(repo), "--db", str(tmp_path / "p.duckdb"), "--json"]
    done = subprocess.run(
        [sys.executable, "-c", _NO_PANDAS.format(argv=argv)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "CI": "1"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "HEAVY=", done.stdout
    assert json.loads(done.stdout.splitlines()[0])["sessions"]["detail"]["links"] == {"note": 1}
