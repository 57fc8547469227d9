"""Loading real git histories (tiny repos built here, and the flask bundle) into DuckDB."""

from __future__ import annotations

import re
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

from agent_reflection.load.git.history import count_new_commits, load_git_history
from agent_reflection.load.git.repo import (
    GitLogFailed,
    GitRepoNotFound,
    InvalidRevision,
    NotAGitRepository,
    open_repo,
)
from agent_reflection.store.db import connect
from conftest import run_git


def commit(repo: Path, message: str, *extra: str, when: str | None = None) -> str:
    env = {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when} if when else None
    run_git(repo, "commit", "-q", "-m", message, *extra, env=env)
    return run_git(repo, "rev-parse", "HEAD").strip()


def write(repo: Path, name: str, text: str | bytes) -> None:
    path = repo / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    run_git(repo, "add", name)


def rows(con: duckdb.DuckDBPyConnection, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    return con.execute(sql, list(params)).fetchall()


def commit_row(con: duckdb.DuckDBPyConnection, sha: str) -> dict[str, Any]:
    cur = con.execute("SELECT * FROM commits WHERE sha = ?", [sha])
    names = [d[0] for d in cur.description]
    row = cur.fetchone()
    assert row is not None, f"{sha} not loaded"
    return dict(zip(names, row, strict=True))


def snapshot(con: duckdb.DuckDBPyConnection) -> tuple[list[Any], list[Any]]:
    return (
        rows(con, "SELECT * FROM commits ORDER BY repo, sha"),
        rows(con, "SELECT * FROM commit_files ORDER BY repo, sha, path"),
    )


@pytest.fixture
def con(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    return connect(tmp_path / "test.duckdb")


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


# ----------------------------------------------------------------------------- basics


def test_commits_files_and_time_zones(git_repo: Path, con: duckdb.DuckDBPyConnection) -> None:
    write(git_repo, "src/app.py", "a\nb\nc\n")
    sha = commit(git_repo, "feat(app): add app\n\nLonger body.\n", when="2024-01-02T03:04:05+05:30")
    summary = load_git_history(con, git_repo)
    assert summary.reconciles and (summary.read, summary.loaded) == (2, 2)
    row = commit_row(con, sha)
    assert row["repo"] == "repo"
    assert row["author_time"] == datetime(2024, 1, 1, 21, 34, 5, tzinfo=UTC)
    assert row["author_tz_offset"] == 330
    assert (row["subject"], row["body"].strip()) == ("feat(app): add app", "Longer body.")
    assert (row["cc_type"], row["cc_scope"], row["is_merge"]) == ("feat", "app", False)
    assert row["author_email"] == "author@example.com"
    assert row["committer_name"] == "Test Committer"
    assert row["files_available"] is True
    assert rows(
        con, 'SELECT path, added, deleted, "binary" FROM commit_files WHERE sha = ?', sha
    ) == [("src/app.py", 3, 0, False)]
    loads = rows(con, "SELECT source, rows_read, rows_loaded, status FROM loads")
    assert loads == [("git", 2, 2, "ok")]


def test_negative_time_zone(git_repo: Path, con: duckdb.DuckDBPyConnection) -> None:
    write(git_repo, "x", "1\n")
    sha = commit(git_repo, "west", when="2024-06-01T12:00:00-08:00")
    load_git_history(con, git_repo)
    row = commit_row(con, sha)
    assert row["committer_tz_offset"] == -480
    assert row["committer_time"] == datetime(2024, 6, 1, 20, 0, tzinfo=UTC)


def test_merge_and_revert_of_merge(git_repo: Path, con: duckdb.DuckDBPyConnection) -> None:
    run_git(git_repo, "checkout", "-q", "-b", "feature")
    write(git_repo, "feature.txt", "f\n")
    commit(git_repo, "Add feature")
    run_git(git_repo, "checkout", "-q", "main")
    write(git_repo, "main.txt", "m\n")
    main_tip = commit(git_repo, "Work on main")
    run_git(
        git_repo,
        "merge",
        "-q",
        "--no-ff",
        "feature",
        "-m",
        "Merge pull request #42 from someone/feature\n\nFix the feature",
    )
    merge = run_git(git_repo, "rev-parse", "HEAD").strip()
    run_git(git_repo, "revert", "--no-edit", "-m", "1", merge)
    revert = run_git(git_repo, "rev-parse", "HEAD").strip()

    load_git_history(con, git_repo)
    m = commit_row(con, merge)
    assert m["is_merge"] is True and m["parents"] == [main_tip, m["parents"][1]]
    assert (m["pr_number"], m["is_fix_like"]) == (42, True)
    assert rows(con, "SELECT count(*) FROM commit_files WHERE sha = ?", merge) == [(0,)]
    r = commit_row(con, revert)
    body = run_git(git_repo, "log", "-1", "--format=%b", revert)
    assert "reversing" in body  # git wrote a merge revert
    assert (r["is_revert"], r["reverts_sha"], r["is_reapply"]) == (True, merge, False)


def test_reapply_is_revert_of_revert(git_repo: Path, con: duckdb.DuckDBPyConnection) -> None:
    write(git_repo, "a.txt", "a\n")
    original = commit(git_repo, "Add a")
    run_git(git_repo, "revert", "--no-edit", original)
    revert = run_git(git_repo, "rev-parse", "HEAD").strip()
    run_git(git_repo, "revert", "--no-edit", revert)
    again = run_git(git_repo, "rev-parse", "HEAD").strip()
    load_git_history(con, git_repo)
    r1, r2 = commit_row(con, revert), commit_row(con, again)
    assert (r1["is_revert"], r1["reverts_sha"], r1["is_reapply"]) == (True, original, False)
    assert (r2["is_revert"], r2["reverts_sha"], r2["is_reapply"]) == (True, revert, True)


def test_rename_binary_and_empty_commit(git_repo: Path, con: duckdb.DuckDBPyConnection) -> None:
    write(git_repo, "old name.txt", "".join(f"line {i}\n" for i in range(20)))
    commit(git_repo, "Add file")
    (git_repo / "dir").mkdir()
    run_git(git_repo, "mv", "old name.txt", "dir/new\tname.txt")
    write(git_repo, "dir/new\tname.txt", "".join(f"line {i}\n" for i in range(21)))
    renamed = commit(git_repo, "Rename file")
    write(git_repo, "logo.bin", bytes(range(256)) * 4)
    binary = commit(git_repo, "Add logo")
    empty = commit(git_repo, "Nothing", "--allow-empty")
    load_git_history(con, git_repo)
    assert rows(
        con, "SELECT path, old_path, added, deleted FROM commit_files WHERE sha = ?", renamed
    ) == [("dir/new\tname.txt", "old name.txt", 1, 0)]
    assert rows(
        con, 'SELECT path, added, deleted, "binary" FROM commit_files WHERE sha = ?', binary
    ) == [("logo.bin", None, None, True)]
    assert rows(con, "SELECT count(*) FROM commit_files WHERE sha = ?", empty) == [(0,)]
    assert commit_row(con, empty)["files_available"] is True


def _write_raw_commit(repo: Path, message: bytes, *, encoding: str | None = None) -> str:
    """A commit object written byte for byte (git commit would re-encode a bad message)."""
    tree = run_git(repo, "write-tree").strip()
    parent = run_git(repo, "rev-parse", "HEAD").strip()
    header = f"tree {tree}\nparent {parent}\n".encode()
    header += b"author Zo\xeb Latin <z@example.com> 1700000000 +0100\n"
    header += b"committer c <c@example.com> 1700000000 +0100\n"
    if encoding:
        header += f"encoding {encoding}\n".encode()
    out = subprocess.run(
        ["git", "hash-object", "-t", "commit", "-w", "--stdin"],
        input=header + b"\n" + message,
        cwd=repo,
        capture_output=True,
        check=True,
    )
    sha = out.stdout.decode().strip()
    run_git(repo, "update-ref", "refs/heads/main", sha)
    return sha


def test_non_utf8_messages(git_repo: Path, con: duckdb.DuckDBPyConnection) -> None:
    undeclared = _write_raw_commit(git_repo, b"caf\xe9 au lait\n\nbody \xff\xfe end\n")
    declared = _write_raw_commit(
        git_repo, "Fix café\n\nnaïve\n".encode("latin-1"), encoding="ISO-8859-1"
    )
    summary = load_git_history(con, git_repo)
    assert summary.loaded == 3 and summary.rejected == 0
    u = commit_row(con, undeclared)
    assert u["subject"] == "caf\ufffd au lait"
    assert u["body"].strip() == "body \ufffd\ufffd end"
    assert u["author_name"] == "Zo\ufffd Latin"
    d = commit_row(con, declared)  # git re-encodes a declared encoding to UTF-8
    assert (d["subject"], d["body"].strip(), d["is_fix_like"]) == ("Fix café", "naïve", True)
    assert d["author_tz_offset"] == 60


# ----------------------------------------------------------------------------- idempotency


def test_load_twice_is_identical(git_repo: Path, con: duckdb.DuckDBPyConnection) -> None:
    for i in range(5):
        write(git_repo, f"f{i}.txt", f"{i}\n")
        commit(git_repo, f"Commit {i}")
    first = load_git_history(con, git_repo)
    before = snapshot(con)
    second = load_git_history(con, git_repo)
    assert snapshot(con) == before
    assert rows(con, "SELECT count(*), count(DISTINCT (repo, sha, path)) FROM commit_files") == [
        (6, 6)
    ]
    assert (first.loaded, first.already_present) == (6, 0)
    # Incremental: git lists nothing behind the tips the first load recorded.
    assert (second.read, second.loaded, second.already_present) == (0, 0, 0)
    again = load_git_history(con, git_repo, full=True)  # full: list everything again
    assert snapshot(con) == before
    assert (again.read, again.loaded, again.already_present) == (6, 0, 6)
    assert second.reconciles


def test_incremental_load_adds_only_new_commits(
    git_repo: Path, con: duckdb.DuckDBPyConnection
) -> None:
    load_git_history(con, git_repo)
    run_git(git_repo, "checkout", "-q", "-b", "side")
    write(git_repo, "side.txt", "s\n")
    side = commit(git_repo, "Side work")
    run_git(git_repo, "checkout", "-q", "main")
    write(git_repo, "main.txt", "m\n")
    commit(git_repo, "Main work")
    run_git(git_repo, "merge", "-q", "--no-ff", "side", "-m", "Merge side")
    summary = load_git_history(con, git_repo)
    # Only the three new commits are listed: the first commit is behind the recorded tip.
    assert (summary.read, summary.loaded, summary.already_present) == (3, 3, 0)
    assert rows(con, "SELECT count(*) FROM commits") == [(4,)]
    loads = rows(con, "SELECT load_id FROM commits WHERE sha = ?", side)
    assert loads == [(summary.load_id,)]


def test_repos_side_by_side_and_name(
    git_repo: Path, tmp_path: Path, con: duckdb.DuckDBPyConnection
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    run_git(other, "init", "-q", "-b", "main")
    write(other, "o.txt", "o\n")
    commit(other, "Other repo")
    load_git_history(con, git_repo)
    load_git_history(con, other)
    load_git_history(con, git_repo, name="renamed")
    got = rows(con, "SELECT repo, count(*) FROM commits GROUP BY repo ORDER BY repo")
    assert got == [("other", 1), ("renamed", 1), ("repo", 1)]


def test_bare_repo_and_bundle(
    git_repo: Path, tmp_path: Path, con: duckdb.DuckDBPyConnection, cache: Path
) -> None:
    run_git(git_repo, "tag", "v1")
    run_git(git_repo, "checkout", "-q", "-b", "topic")
    write(git_repo, "t.txt", "t\n")
    commit(git_repo, "Topic")
    bare = tmp_path / "mirror.git"
    run_git(tmp_path, "clone", "-q", "--bare", str(git_repo), str(bare))
    bundle = tmp_path / "proj.bundle"
    run_git(git_repo, "bundle", "create", str(bundle), "--all")

    assert load_git_history(con, bare).loaded == 2
    s = load_git_history(con, bundle, cache_dir=cache)
    assert (s.loaded, s.detail["repo"]) == (2, "proj")
    assert len(list((cache / "git-bundles").iterdir())) == 1
    again = load_git_history(con, bundle, cache_dir=cache)  # reuses the cached clone
    assert (again.read, again.loaded) == (0, 0)
    assert rows(con, "SELECT repo, count(*) FROM commits GROUP BY repo ORDER BY repo") == [
        ("mirror", 2),
        ("proj", 2),
    ]


def test_rev_range_and_since(git_repo: Path, con: duckdb.DuckDBPyConnection) -> None:
    shas = [
        commit(git_repo, f"C{i}", "--allow-empty", when=f"2024-0{i}-01T00:00:00+00:00")
        for i in range(1, 5)
    ]
    assert count_new_commits(con, open_repo(git_repo), rev=f"{shas[1]}..main", full=True) == 2
    s = load_git_history(con, git_repo, rev=f"{shas[1]}..main")
    assert s.loaded == 2
    assert {r[0] for r in rows(con, "SELECT sha FROM commits")} == set(shas[2:])
    s2 = load_git_history(con, git_repo, since="2024-02-15")
    assert (s2.read, s2.loaded, s2.already_present) == (2, 0, 2)
    s3 = load_git_history(con, git_repo)  # the rest: C1, C2 and the initial commit
    assert (s3.loaded, s3.already_present) == (3, 2)


def test_default_revs_skip_stash_but_take_detached_head(
    git_repo: Path, con: duckdb.DuckDBPyConnection
) -> None:
    write(git_repo, "README.md", "changed\n")
    run_git(git_repo, "stash", "-q")
    write(git_repo, "d.txt", "d\n")
    run_git(git_repo, "checkout", "-q", "--detach")
    detached = commit(git_repo, "Detached work")
    load_git_history(con, git_repo)
    shas = {r[0] for r in rows(con, "SELECT sha FROM commits")}
    assert detached in shas and len(shas) == 2  # initial + detached; no stash commits


# ----------------------------------------------------------------------------- bad input


def test_nonexistent_path(tmp_path: Path, con: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(GitRepoNotFound, match=r"no such file or folder.*git clone"):
        load_git_history(con, tmp_path / "nope")


def test_not_a_repository(tmp_path: Path, con: duckdb.DuckDBPyConnection) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    with pytest.raises(NotAGitRepository, match="plain is not a git repository"):
        load_git_history(con, folder)
    junk = tmp_path / "junk.bundle"
    junk.write_bytes(b"\x00garbage")
    with pytest.raises(NotAGitRepository, match="not a git bundle"):
        load_git_history(con, junk, cache_dir=tmp_path / "c")
    assert rows(con, "SELECT count(*) FROM loads") == [(0,)]


def test_bad_revision(git_repo: Path, con: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(InvalidRevision, match="no-such-branch"):
        load_git_history(con, git_repo, rev="no-such-branch")
    with pytest.raises(InvalidRevision, match="options are not revisions"):
        load_git_history(con, git_repo, rev="--output=/tmp/x")


def _object_file(repo: Path, sha: str) -> Path:
    return repo / ".git" / "objects" / sha[:2] / sha[2:]


def test_missing_blob_marks_files_unavailable(
    git_repo: Path, con: duckdb.DuckDBPyConnection
) -> None:
    shas = []
    for i in range(4):
        write(git_repo, f"f{i}.txt", f"v{i}\n")
        shas.append(commit(git_repo, f"C{i}"))
    blob = run_git(git_repo, "rev-parse", f"{shas[1]}:f1.txt").strip()
    _object_file(git_repo, blob).unlink()
    summary = load_git_history(con, git_repo)
    assert (summary.read, summary.loaded, summary.rejected) == (5, 5, 0)
    assert summary.detail["files_unavailable"] == [shas[1]]
    assert any(shas[1] in w and "files_available = false" in w for w in summary.detail["warnings"])
    assert commit_row(con, shas[1])["files_available"] is False
    assert rows(con, "SELECT count(*) FROM commit_files WHERE sha = ?", shas[1]) == [(0,)]
    for sha in (shas[0], shas[2], shas[3]):
        assert commit_row(con, sha)["files_available"] is True
        assert rows(con, "SELECT count(*) FROM commit_files WHERE sha = ?", sha) == [(1,)]


def test_missing_tree_marks_the_commits_needing_it(
    git_repo: Path, con: duckdb.DuckDBPyConnection
) -> None:
    shas = []
    for i in range(4):
        write(git_repo, f"d{i}/f.txt", f"v{i}\n")
        shas.append(commit(git_repo, f"C{i}"))
    tree = run_git(git_repo, "rev-parse", f"{shas[1]}^{{tree}}").strip()
    _object_file(git_repo, tree).unlink()
    summary = load_git_history(con, git_repo)
    assert summary.reconciles and summary.loaded == 5
    # C1's own diff and C2's diff against C1 both need the missing tree.
    assert sorted(summary.detail["files_unavailable"]) == sorted([shas[1], shas[2]])
    assert commit_row(con, shas[3])["files_available"] is True


def test_corrupt_commit_is_rejected_and_the_rest_loads(
    git_repo: Path, con: duckdb.DuckDBPyConnection
) -> None:
    base = run_git(git_repo, "rev-parse", "HEAD").strip()
    shas = []
    for i in range(3):
        write(git_repo, f"f{i}.txt", f"v{i}\n")
        shas.append(commit(git_repo, f"C{i}"))
    run_git(git_repo, "checkout", "-q", "-b", "side", base)
    write(git_repo, "s.txt", "s\n")
    side = commit(git_repo, "Side")
    bad = _object_file(git_repo, shas[0])
    bad.chmod(0o644)
    bad.write_bytes(b"this is not zlib")
    summary = load_git_history(con, git_repo)
    assert summary.reconciles
    assert (summary.read, summary.loaded, summary.rejected) == (5, 4, 1)
    loaded = {r[0] for r in rows(con, "SELECT sha FROM commits")}
    assert loaded == {base, shas[1], shas[2], side}
    assert commit_row(con, shas[1])["parents"] == [shas[0]]  # real parents, not the graft
    ((location, reason),) = rows(con, "SELECT location, reason FROM rejected")
    assert location == f"repo@{shas[0]}"
    assert "missing or corrupt" in reason and "git fsck" in reason


def _partial_clone(origin: Path, target: Path, commits: int) -> Path:
    for i in range(commits):
        write(origin, f"f{i}.txt", f"v{i}\n")
        commit(origin, f"C{i}")
    run_git(origin, "config", "uploadpack.allowFilter", "true")
    run_git(
        origin.parent,
        "clone",
        "-q",
        "--bare",
        "--filter=blob:none",
        f"file://{origin}",
        str(target),
    )
    assert "true" in run_git(target, "config", "remote.origin.promisor")
    return target


def test_partial_clone_loads_without_fetching(
    git_repo: Path, tmp_path: Path, con: duckdb.DuckDBPyConnection
) -> None:
    clone = _partial_clone(git_repo, tmp_path / "partial.git", 3)
    summary = load_git_history(con, clone)
    assert (summary.read, summary.loaded, summary.rejected) == (4, 4, 0)
    assert summary.detail["files_unavailable_count"] == 4  # no blob was fetched
    assert rows(con, "SELECT count(*) FROM commit_files") == [(0,)]
    assert all("promisor" in w for w in summary.detail["warnings"])


def test_many_missing_objects_switch_to_headers_only(
    git_repo: Path, tmp_path: Path, con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_reflection.load.git import walk as git_walk

    monkeypatch.setattr(git_walk, "MAX_FILE_RECOVERIES", 2)
    clone = _partial_clone(git_repo, tmp_path / "partial.git", 6)
    summary = load_git_history(con, clone)
    assert (summary.read, summary.loaded) == (7, 7)
    assert rows(con, "SELECT count(*) FROM commits WHERE NOT files_available") == [(7,)]
    assert any("partial clone" in w for w in summary.detail["warnings"])
    assert len(summary.detail["warnings"]) == 3  # two recoveries, then one switch notice


def test_unrecoverable_failure_names_the_repo(
    git_repo: Path, con: duckdb.DuckDBPyConnection
) -> None:
    head = run_git(git_repo, "rev-parse", "HEAD").strip()
    _object_file(git_repo, head).unlink()  # the tip itself is gone
    with pytest.raises((GitLogFailed, InvalidRevision)) as err:
        load_git_history(con, git_repo, rev="main")
    assert str(git_repo) in str(err.value)
    assert rows(con, "SELECT count(*) FROM commits") == [(0,)]


# ----------------------------------------------------------------------------- real data


@pytest.fixture(scope="module")
def flask_clone(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("flask") / "flask.git"
    bundle = shared_dir / "data" / "git" / "flask.bundle"
    subprocess.run(["git", "clone", "-q", "--mirror", str(bundle), str(target)], check=True)
    return target


@pytest.mark.shared
@pytest.mark.slow
def test_flask_bundle(
    shared_dir: Path, flask_clone: Path, tmp_path: Path, con: duckdb.DuckDBPyConnection
) -> None:
    bundle = shared_dir / "data" / "git" / "flask.bundle"
    expected = int(run_git(flask_clone, "rev-list", "--count", "--branches", "--tags").strip())
    assert expected == int(run_git(flask_clone, "rev-list", "--count", "--all").strip())
    calls: list[int] = []
    summary = load_git_history(con, bundle, cache_dir=tmp_path / "c", progress=calls.append)
    assert summary.reconciles and summary.rejected == 0
    assert summary.read == summary.loaded == expected == sum(calls)
    assert rows(con, "SELECT count(*), count(DISTINCT sha) FROM commits WHERE repo = 'flask'") == [
        (expected, expected)
    ]
    merges = int(run_git(flask_clone, "rev-list", "--count", "--merges", "--all").strip())
    assert rows(con, "SELECT count(*) FROM commits WHERE is_merge") == [(merges,)]

    # A revert found by asking git itself, checked against what was loaded.
    log = run_git(
        flask_clone, "log", "--all", "--grep=This reverts commit", "--format=%H%x00%B%x01"
    )
    reverts = [entry.strip("\n").split("\x00", 1) for entry in log.split("\x01") if entry.strip()]
    assert reverts, "flask has reverts"
    for sha, message in reverts:
        written = re.search(r"This reverts commit ([0-9a-f]{7,40})", message)
        assert written is not None
        row = commit_row(con, sha)
        assert (row["is_revert"], row["reverts_sha"]) == (True, written.group(1))
    pr_merges = run_git(
        flask_clone,
        "log",
        "--all",
        "--merges",
        "-1",
        "--grep=^Merge pull request #",
        "--format=%H%x00%s",
    )
    sha, subject = pr_merges.strip().split("\x00")
    number = int(re.match(r"Merge pull request #(\d+)", subject).group(1))  # type: ignore[union-attr]
    assert commit_row(con, sha)["pr_number"] == number
    numstat = run_git(flask_clone, "log", "--all", "-M", "--numstat", "--format=")
    files = sum(1 for line in numstat.splitlines() if line.count("\t") >= 2)
    assert rows(con, "SELECT count(*) FROM commit_files")[0][0] == files
    duplicates = (
        "SELECT count(*) FROM (SELECT repo, sha, path FROM commit_files GROUP BY ALL "
        "HAVING count(*) > 1)"
    )
    assert rows(con, duplicates) == [(0,)]  # the natural key holds

    again = load_git_history(con, bundle, cache_dir=tmp_path / "c")
    assert (again.read, again.already_present, again.loaded) == (0, 0, 0)
    assert again.detail["excluded_tips"] > 0
    full = load_git_history(con, bundle, cache_dir=tmp_path / "c", full=True)
    assert (full.read, full.already_present, full.loaded) == (expected, expected, 0)
    shutil.rmtree(tmp_path / "c")


def test_user_config_does_not_change_the_stream(
    git_repo: Path, con: duckdb.DuckDBPyConnection
) -> None:
    write(git_repo, "docs/guide.md", "a\n")
    write(git_repo, "src/x.py", "b\n")
    sha = commit(git_repo, "Two folders")
    for key, value in [
        ("diff.relative", "true"),
        ("log.showSignature", "true"),
        ("diff.renames", "false"),
        ("color.ui", "always"),
    ]:
        run_git(git_repo, "config", key, value)
    summary = load_git_history(con, git_repo / "docs")  # a sub-folder of the clone
    assert summary.detail["repo"] == "repo"
    got = rows(con, "SELECT path FROM commit_files WHERE sha = ? ORDER BY path", sha)
    assert got == [("docs/guide.md",), ("src/x.py",)]


def test_load_repo_makes_each_load_and_returns_its_summary(
    git_repo: Path, con: duckdb.DuckDBPyConnection
) -> None:
    """``load_repo``: the history, SZZ only when asked, notes and sessions only when the
    repository has them; a :class:`GitSource` already opened keeps its name."""
    from agent_reflection.load.git.loader import load_repo

    write(git_repo, "a.py", "x = 1\n")
    run_git(git_repo, "add", "a.py")
    commit(git_repo, "Add a")
    write(git_repo, "a.py", "x = 2\n")
    run_git(git_repo, "add", "a.py")
    commit(git_repo, "fix: a was wrong")
    loaded = load_repo(con, git_repo, szz=True)
    assert (loaded.history.source, loaded.history.read, loaded.history.loaded) == ("git", 3, 3)
    assert loaded.szz is not None and loaded.szz.source == "git-szz"
    assert rows(con, "SELECT count(*) FROM fix_changes") == [(1,)]
    assert (loaded.ai_notes, loaded.notes, loaded.sessions) == ((), None, None)
    again = load_repo(con, open_repo(git_repo, name="renamed"))
    assert again.szz is None and again.history.detail["repo"] == "renamed"
    assert (again.history.read, again.history.loaded) == (3, 3)
    run_git(git_repo, "notes", "--ref", "reflection", "add", "-m", "{}", "HEAD")
    noted = load_repo(con, git_repo)
    assert noted.history.read == 0 and noted.notes is not None and noted.notes.source == "notes"
