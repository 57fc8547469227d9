"""Incremental git re-loads (recorded tips), and loads that do not import pandas.

Real git repositories built in the test; every re-load is checked against what git itself says
is new, and the counts reconcile: read = loaded + rejected + already present, where ``read`` is
the commits git listed (none behind a tip an earlier complete load recorded).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from agent_reflection.load.git.history import load_git_history
from agent_reflection.store.db import connect
from conftest import run_git
from sidecar_samples import sidecar
from sidecar_samples import write as write_json


def commit(repo: Path, name: str, message: str, when: str | None = None) -> str:
    (repo / name).write_text(message + "\n")
    run_git(repo, "add", name)
    env = {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when} if when else None
    run_git(repo, "commit", "-q", "-m", message, env=env)
    return run_git(repo, "rev-parse", "HEAD").strip()


def loaded(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {row[0] for row in con.execute("SELECT sha FROM commits").fetchall()}


def reachable(repo: Path) -> set[str]:
    return set(run_git(repo, "rev-list", "--branches", "--tags", "--remotes").split())


def tips(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {row[0] for row in con.execute("SELECT sha FROM git_tips").fetchall()}


@pytest.fixture
def con(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    return connect(tmp_path / "inc.duckdb")


def test_nothing_changed_reads_nothing(git_repo: Path, con: duckdb.DuckDBPyConnection) -> None:
    for i in range(3):
        commit(git_repo, f"f{i}", f"Commit {i}")
    run_git(git_repo, "tag", "-a", "v1", "-m", "annotated tag")  # a tag object, peeled
    first = load_git_history(con, git_repo)
    assert (first.read, first.loaded) == (4, 4)
    head = run_git(git_repo, "rev-parse", "HEAD").strip()
    assert tips(con) == {head}  # the branch, the tag and HEAD all peel to one commit
    again = load_git_history(con, git_repo)
    assert (again.read, again.loaded, again.rejected, again.already_present) == (0, 0, 0, 0)
    assert again.detail["excluded_tips"] == 1 and again.reconciles


def test_new_commits_and_a_new_branch(git_repo: Path, con: duckdb.DuckDBPyConnection) -> None:
    load_git_history(con, git_repo)
    new_main = commit(git_repo, "a", "Main moves on")
    run_git(git_repo, "checkout", "-q", "-b", "feature", "HEAD~1")
    feature = [commit(git_repo, f"b{i}", f"Feature {i}") for i in range(2)]
    run_git(git_repo, "branch", "alias", "main")  # a new ref on a commit being loaded
    summary = load_git_history(con, git_repo)
    assert (summary.read, summary.loaded, summary.already_present) == (3, 3, 0)
    assert loaded(con) == reachable(git_repo)
    assert {new_main, *feature} <= loaded(con)
    # The old main tip is reached by the new one, so it is no longer recorded.
    assert tips(con) == {new_main, feature[-1]}


def test_force_pushed_branch_keeps_old_commits_and_loads_new(
    git_repo: Path, con: duckdb.DuckDBPyConnection
) -> None:
    base = run_git(git_repo, "rev-parse", "HEAD").strip()
    old = [commit(git_repo, f"o{i}", f"Old {i}") for i in range(2)]
    load_git_history(con, git_repo)
    run_git(git_repo, "reset", "-q", "--hard", base)  # rewrite main: the old commits go away
    new = [commit(git_repo, f"n{i}", f"New {i}") for i in range(3)]
    run_git(git_repo, "reflog", "expire", "--expire=now", "--all")
    run_git(git_repo, "gc", "-q", "--prune=now")  # and git forgets them
    assert run_git(git_repo, "cat-file", "-t", new[0]).strip() == "commit"
    assert subprocess.run(["git", "-C", str(git_repo), "cat-file", "-e", old[-1]]).returncode
    summary = load_git_history(con, git_repo)
    # The only recorded tip is gone from the repository, so nothing is excluded: git lists the
    # base commit again (already present) and the three new ones.
    assert (summary.read, summary.loaded, summary.already_present) == (4, 3, 1)
    assert summary.detail["excluded_tips"] == 0
    assert loaded(con) == {base, *old, *new}  # old commits stay, new ones are in
    assert old[-1] not in tips(con) and new[-1] in tips(con)
    assert load_git_history(con, git_repo).read == 0


def test_force_push_with_the_old_tip_still_present(
    git_repo: Path, con: duckdb.DuckDBPyConnection
) -> None:
    old = commit(git_repo, "o", "Old")
    load_git_history(con, git_repo)
    run_git(git_repo, "commit", "-q", "--amend", "-m", "Old, reworded")
    amended = run_git(git_repo, "rev-parse", "HEAD").strip()
    summary = load_git_history(con, git_repo)
    assert (summary.read, summary.loaded) == (1, 1)
    assert {old, amended} <= loaded(con) and {old, amended} <= tips(con)


def test_since_loads_record_no_tips_and_a_full_load_fills_the_gap(
    git_repo: Path, con: duckdb.DuckDBPyConnection
) -> None:
    old = commit(git_repo, "a", "Old", when="2020-01-01T00:00:00+00:00")
    new = commit(git_repo, "b", "New", when="2024-06-01T00:00:00+00:00")
    recent = load_git_history(con, git_repo, since="2023-01-01")
    assert (recent.read, recent.loaded) == (1, 1)
    assert tips(con) == set() and recent.detail["tips_recorded"] == 0
    # Without tips the full load lists everything; what is loaded counts as already present.
    full = load_git_history(con, git_repo)
    assert (full.read, full.loaded, full.already_present) == (3, 2, 1)
    assert loaded(con) == reachable(git_repo) and tips(con) == {new}
    newer = commit(git_repo, "c", "Newer", when="2024-07-01T00:00:00+00:00")
    again = load_git_history(con, git_repo, since="2023-01-01")
    assert (again.read, again.loaded) == (1, 1) and newer in loaded(con)
    assert old in loaded(con)


def test_a_range_records_no_tips(git_repo: Path, con: duckdb.DuckDBPyConnection) -> None:
    shas = [commit(git_repo, f"f{i}", f"Commit {i}") for i in range(3)]
    part = load_git_history(con, git_repo, rev=f"{shas[0]}..main")
    assert (part.loaded, tips(con)) == (2, set())
    rest = load_git_history(con, git_repo)
    assert (rest.read, rest.loaded, rest.already_present) == (4, 2, 2)
    assert loaded(con) == reachable(git_repo)


def test_deleted_rows_retire_their_tips(git_repo: Path, con: duckdb.DuckDBPyConnection) -> None:
    commit(git_repo, "a", "One more")
    load_git_history(con, git_repo)
    con.execute("DELETE FROM commit_files")
    con.execute("DELETE FROM commits")
    again = load_git_history(con, git_repo)
    assert (again.read, again.loaded, again.detail["excluded_tips"]) == (2, 2, 0)


def test_commit_made_during_a_load_is_found_next_time(
    git_repo: Path, con: duckdb.DuckDBPyConnection
) -> None:
    seen: list[str] = []

    def commit_while_loading(_: int) -> None:
        if not seen:
            seen.append(commit(git_repo, "late", "Made while the load ran"))

    load_git_history(con, git_repo, progress=commit_while_loading)
    assert seen[0] not in loaded(con) and seen[0] not in tips(con)
    after = load_git_history(con, git_repo)
    assert (after.read, after.loaded) == (1, 1) and seen[0] in loaded(con)


# ------------------------------------------------------------------ no pandas on a load path

_NO_PANDAS = """
import sys
from agent_reflection.cli import main
try:
    main({argv!r})
except SystemExit as exit:
    assert not exit.code, exit.code
heavy = sorted(m for m in ("pandas", "matplotlib", "scipy") if m in sys.modules)
print("HEAVY=" + ",".join(heavy))
print("PYARROW=" + str("pyarrow" in sys.modules))
"""


def _run_in_process(argv: list[str], cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _NO_PANDAS.format(argv=argv)],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={**_env(), "CI": "1"},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("REFLECT_DB", None)
    return env


def test_load_git_does_not_import_pandas(git_repo: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "p.duckdb")
    out = _run_in_process(["load", "git", str(git_repo), "--db", db, "--json"], tmp_path)
    assert "HEAVY=\n" in out, out
    assert json.loads(out.splitlines()[0])["loaded"] == 1


def test_load_git_with_szz_imports_neither_pandas_nor_pyarrow(
    git_repo: Path, tmp_path: Path
) -> None:
    """SZZ's rows reach DuckDB as JSON column lists, as the git load's do: pyarrow's import
    (with the ``pyarrow.dataset`` DuckDB loads to scan a table) was most of a small load's SZZ."""
    for body, message in (("1", "add f"), ("2", "fix: f returned the wrong value")):
        (git_repo / "app.py").write_text(f"def f():\n    return {body}\n")
        run_git(git_repo, "add", "app.py")
        run_git(git_repo, "commit", "-q", "-m", message)
    db = tmp_path / "p.duckdb"
    out = _run_in_process(["load", "git", str(git_repo), "--szz", "--db", str(db)], tmp_path)
    assert "HEAVY=\n" in out and "PYARROW=False" in out, out
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT method, lines, path FROM fix_inducing").fetchall()
    changes = con.execute("SELECT path, code_lines_deleted FROM fix_changes").fetchall()
    con.close()
    assert rows == [("blame", 1, "app.py")] and changes == [("app.py", 1)]


def test_load_sidecars_does_not_import_pandas(tmp_path: Path) -> None:
    for i in range(2):
        write_json(tmp_path / "s" / f"{i}.reflection.json", sidecar(i))
    db = str(tmp_path / "p.duckdb")
    out = _run_in_process(["load", "sidecars", str(tmp_path / "s"), "--db", db], tmp_path)
    assert "HEAVY=\n" in out, out
    assert "loaded 2" in out


def test_pandas_works_after_a_load_in_the_same_process(git_repo: Path, tmp_path: Path) -> None:
    code = (
        "from agent_reflection.store.db import connect\n"
        "from agent_reflection.load.git.history import load_git_history\n"
        f"con = connect({str(tmp_path / 'q.duckdb')!r})\n"
        f"load_git_history(con, {str(git_repo)!r})\n"
        "import pandas\n"
        "frame = con.execute('SELECT count(*) AS n FROM commits').df()\n"
        "print(int(frame['n'][0]), con.execute('SELECT ?', [pandas.Timestamp(0)]).fetchone())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, env=_env()
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("1 ")


#: Text that a JSON transport could mangle: quotes, backslashes, control characters, a BOM,
#: non-BMP characters, JSON-looking text and what looks like an escape sequence.
AWKWARD = 'fix(core): "quoted" \\back\\slash \\u0041 \x01\x1f\t é 漢字 😀 \ufeff {"a": [1]}'


def test_every_value_comes_through_the_batches_as_git_gives_it(
    git_repo: Path, tmp_path: Path
) -> None:
    """Rows go to DuckDB as JSON documents of column lists: each value must arrive unchanged
    (compared with git's own output per commit), NULLs stay NULL, several batches and one."""
    commit(git_repo, "a", f"{AWKWARD} (#12)\n\nBody {AWKWARD}\n\nThis reverts commit abcdef1.")
    (git_repo / "bin.dat").write_bytes(b"\0\1\2")
    (git_repo / 'sp ace é"q.txt').write_text("x\n")
    run_git(git_repo, "add", "bin.dat", 'sp ace é"q.txt')
    run_git(git_repo, "mv", "a", "b")
    env = {"GIT_AUTHOR_NAME": 'Zoë "Q" \\ O\'Brien', "GIT_AUTHOR_EMAIL": "z@ex\u00e4mple.com"}
    run_git(git_repo, "commit", "-q", "-m", "Rename, binary, odd path", env=env)
    fields = ("%H", "%P", "%an", "%ae", "%at", "%cn", "%ce", "%ct", "%s", "%b")
    expected = {}
    for rev in run_git(git_repo, "rev-list", "HEAD").split():
        shown = run_git(git_repo, "show", "-s", "--format=" + "%x00".join(fields), rev)
        sha, parents, an, ae, at, cn, ce, ct, subject, body = shown.removesuffix("\n").split("\0")
        expected[sha] = (parents.split(), an, ae, int(at), cn, ce, int(ct), subject, body)
    for batch_commits in (1, 1000):
        with connect(tmp_path / f"{batch_commits}.duckdb") as db:
            load_git_history(db, git_repo, batch_commits=batch_commits)
            got = {
                row[0]: row[1:]
                for row in db.execute(
                    "SELECT sha, parents, author_name, author_email, epoch(author_time)::BIGINT, "
                    "committer_name, committer_email, epoch(committer_time)::BIGINT, subject, "
                    "body FROM commits"
                ).fetchall()
            }
            assert got == expected
            signals = db.execute(
                "SELECT reverts_sha, pr_number, cc_type, cc_scope, load_id FROM commits "
                "WHERE subject LIKE 'fix(core)%'"
            ).fetchone()
            assert signals == ("abcdef1", 12, "fix", "core", 1)
            files = set(
                db.execute(
                    'SELECT path, old_path, added, deleted, "binary", load_id FROM commit_files '
                    "WHERE sha = (SELECT sha FROM commits WHERE subject LIKE 'Rename%')"
                ).fetchall()
            )
            assert files == {
                ("b", "a", 0, 0, False, 1),
                ("bin.dat", None, None, None, True, 1),
                ('sp ace é"q.txt', None, 1, 0, False, 1),
            }


def test_progress_total_counts_only_new_commits(
    git_repo: Path, con: duckdb.DuckDBPyConnection
) -> None:
    from agent_reflection.load.git.history import count_new_commits
    from agent_reflection.load.git.repo import open_repo

    source = open_repo(git_repo)
    commit(git_repo, "a", "Two")
    assert count_new_commits(con, source) == 2
    load_git_history(con, git_repo)
    assert count_new_commits(con, source) == 0
    commit(git_repo, "b", "Three")
    calls: list[int] = []
    assert (
        count_new_commits(con, source)
        == 1
        == load_git_history(con, git_repo, progress=calls.append).read
    )
    assert calls == [1] and count_new_commits(con, source, full=True) == 3


def test_a_walk_leaves_no_process_or_file_whether_read_to_its_end_or_stopped(
    git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A load into a new database lists the whole history and one into the same database only
    what is new; the walk's git process is reaped and its temporary folder (git's stderr, the
    graft file) removed both when it is read to its end and when its reader stops early."""
    import tempfile

    from agent_reflection.load.git.repo import open_repo
    from agent_reflection.load.git.walk import GitWalk

    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    for i in range(3):
        commit(git_repo, f"s{i}", f"Commit {i}")
    with connect(tmp_path / "new.duckdb") as db:
        first = load_git_history(db, git_repo)
        assert (first.read, first.loaded) == (4, 4) and loaded(db) == reachable(git_repo)
    commit(git_repo, "s3", "Commit 3")
    with connect(tmp_path / "new.duckdb") as db:
        second = load_git_history(db, git_repo)
        assert (second.read, second.loaded, second.already_present) == (1, 1, 0)
        assert loaded(db) == reachable(git_repo)
    assert list(temp.iterdir()) == []
    spawned: list[subprocess.Popen[bytes]] = []
    popen = subprocess.Popen

    def recording(*args: object, **kwargs: object) -> subprocess.Popen[bytes]:
        spawned.append(popen(*args, **kwargs))  # type: ignore[call-overload]
        return spawned[-1]

    monkeypatch.setattr(subprocess, "Popen", recording)
    walk = iter(GitWalk(open_repo(git_repo), ["HEAD"], None))
    assert next(walk).commit.subject == "Commit 3"
    assert [p.name for p in temp.iterdir()] != [] and spawned[-1].returncode is None
    walk.close()  # the reader stops early
    assert list(temp.iterdir()) == [] and spawned[-1].returncode is not None
    assert len(list(GitWalk(open_repo(git_repo), ["HEAD"], None))) == 5
    assert list(temp.iterdir()) == [] and all(p.returncode is not None for p in spawned)


def test_the_load_peels_the_notes_refs_with_its_tips(git_repo: Path, tmp_path: Path) -> None:
    """The load's ``detail["notes_tips"]``: the commit of each notes ref the repository has
    (read in the load's one ``git cat-file``), which the notes loaders take instead of asking
    git again."""
    from agent_reflection.load.git.notes import NOTES_REFS

    assert set(NOTES_REFS) == {"refs/notes/ai", "refs/notes/whogitit", "refs/notes/reflection"}
    with connect(tmp_path / "a.duckdb") as con:
        assert load_git_history(con, git_repo).detail["notes_tips"] == {}
        run_git(git_repo, "notes", "--ref", "reflection", "add", "-m", "{}", "HEAD")
        tip = run_git(git_repo, "rev-parse", "refs/notes/reflection").strip()
        assert load_git_history(con, git_repo).detail["notes_tips"] == {
            "refs/notes/reflection": tip
        }
