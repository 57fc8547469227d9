"""Sidecars with the git object through the real loader: the new columns, the lists in ``raw``,
an older database gaining the columns, and older sidecars still loading unchanged."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from agent_reflection.load.sidecars.loader import load_sidecars
from agent_reflection.store.db import connect
from hook_harness import GitLab
from sidecar_samples import FIRST_RELEASE_DDL, sidecar, write

GIT = {
    "branch": "feature/x",
    "head_start": "1" * 40,
    "head_stop": "2" * 40,
    "commits": ["2" * 40],
    "uncommitted": [{"path": "src/a.py", "blob": "3" * 40}, {"path": "b.py", "blob": None}],
}


def test_an_older_database_gains_the_git_columns_and_both_kinds_of_sidecar_load(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.duckdb"
    old = duckdb.connect(str(path))
    old.execute(FIRST_RELEASE_DDL)  # the table as the first release made it
    old.close()
    con = connect(path)
    write(tmp_path / "s" / "old.reflection.json", sidecar(1))
    write(tmp_path / "s" / "new.reflection.json", sidecar(2, git=GIT))
    summary = load_sidecars(con, [tmp_path / "s"], workers=1)
    assert (summary.read, summary.loaded, summary.rejected) == (2, 2, 0)
    rows = con.execute(
        "SELECT session_id, git_branch, git_head_start, git_head_stop, "
        "json_extract(raw, '$.git.commits'), json_extract(raw, '$.git.uncommitted') "
        "FROM reflections ORDER BY session_id"
    ).fetchall()
    assert rows[0] == ("session-1", None, None, None, None, None)
    assert rows[1][:4] == ("session-2", "feature/x", "1" * 40, "2" * 40)
    assert [json.loads(v) for v in rows[1][4:]] == [GIT["commits"], GIT["uncommitted"]]
    again = load_sidecars(con, [tmp_path / "s"], workers=1)  # idempotent
    assert (again.loaded, again.already_present) == (0, 2)


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"head_start": "ABC"}, "/git/head_start"),
        ({"commits": ["2" * 39]}, "/git/commits/0"),
        ({"commits": ["2" * 40] * 201}, "/git/commits"),
        (
            {"uncommitted": [{"path": "a", "blob": "3" * 40}, {"path": "", "blob": None}]},
            "/git/uncommitted/1/path",
        ),
        ({"uncommitted": [{"path": "a", "blob": "x"}]}, "/git/uncommitted/0/blob"),
        ({"uncommitted": [{"path": "a"}]}, "/git/uncommitted/0/blob"),
        ({"branch": ""}, "/git/branch"),
        ({"extra": 1}, "/git/extra"),
    ],
)
def test_a_bad_git_object_is_rejected_naming_the_field(
    tmp_path: Path, change: dict[str, object], where: str
) -> None:
    con = connect(tmp_path / "db.duckdb")
    write(tmp_path / "s" / "bad.reflection.json", sidecar(1, git={**GIT, **change}))
    summary = load_sidecars(con, [tmp_path / "s"], workers=1)
    assert (summary.loaded, summary.rejected) == (0, 1)
    (location,) = con.execute("SELECT location FROM rejected").fetchone() or ("",)
    assert location.endswith(f"bad.reflection.json#{where}")


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_sidecars_the_hooks_wrote_load_with_their_git_facts(tmp_path: Path) -> None:
    lab = GitLab(tmp_path)
    repo = lab.init_repo(tmp_path / "repo", hooks=False)
    lab.start(repo, "sess-load")
    (repo / "a.py").write_text("a\n")
    made = lab.commit(repo, "during", "a.py")
    (repo / "b.py").write_text("b\n")
    record = lab.stop(repo, "sess-load")
    con = connect(tmp_path / "db.duckdb")
    summary = load_sidecars(con, [repo / ".reflection" / "sidecars"], workers=1)
    assert (summary.loaded, summary.rejected) == (1, 0)
    row = con.execute(
        "SELECT git_branch, git_head_stop, json_extract(raw, '$.git') FROM reflections"
    ).fetchone()
    assert row is not None and row[:2] == ("main", made)
    assert json.loads(row[2]) == record["git"]
