"""Names that are not UTF-8 (a Latin-1 byte in a file, folder or repository name): what the
file system and git are handed stays their bytes; what a record holds is their text
(:func:`agent_reflection.names.name_text`). Each load here used to stop on the name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_reflection.experiments.agent_vs_human.analysis import blame_surviving_lines
from agent_reflection.experiments.p2.sheet import read_commit
from agent_reflection.load.git.history import load_git_history
from agent_reflection.load.git.repo import open_repo
from agent_reflection.load.git.szz import load_fix_inducing
from agent_reflection.load.labels import load_labels
from agent_reflection.load.sidecars.loader import load_sidecars
from agent_reflection.load.transcripts import load_transcripts
from agent_reflection.names import lone_surrogate, name_text, record_text
from agent_reflection.store.db import connect
from conftest import run_git, run_reflect
from sidecar_samples import sidecar, write
from test_load_transcripts import line

LATIN = os.fsdecode(b"caf\xe9")  # how Python hands the name over: a lone surrogate


def repo_with(repo: Path, *commits: tuple[str, str, str]) -> Path:
    """A new repository at ``repo`` with one commit per (file, text, message)."""
    repo.mkdir(parents=True)
    run_git(repo, "init", "-q", "-b", "main")
    for name, text, message in commits:
        (repo / name).write_text(text)
        run_git(repo, "add", "--", name)
        run_git(repo, "commit", "-q", "-m", message)
    return repo


def test_name_text_reads_each_byte_that_is_not_utf_8_as_u_fffd() -> None:
    assert name_text(LATIN) == name_text(b"caf\xe9") == "caf\ufffd"
    assert name_text(Path("/tmp") / "caf\u00e9.py") == "/tmp/caf\u00e9.py"  # UTF-8 as it is


def test_a_sidecar_file_named_so_loads_beside_the_others(tmp_path: Path) -> None:
    folder = tmp_path / "sidecars"
    write(folder / f"{LATIN}-1.reflection.json", sidecar(1))
    write(folder / "plain-2.reflection.json", sidecar(2))
    con = connect(tmp_path / "s.duckdb")
    summary = load_sidecars(con, [folder])
    assert (summary.read, summary.loaded, summary.rejected) == (2, 2, 0)
    files = sorted(r[0] for r in con.execute("SELECT source_file FROM reflections").fetchall())
    assert files == [
        name_text(folder / f"{LATIN}-1.reflection.json"),
        str(folder / "plain-2.reflection.json"),
    ]


def test_a_repository_in_a_folder_named_so_and_its_worktree_load_with_szz(tmp_path: Path) -> None:
    repo = repo_with(
        tmp_path / LATIN / "repo",
        ("app.py", "def f():\n    return 1\n", "add f"),
        ("app.py", "def f():\n    return 2\n", "fix: f returned the wrong value"),
    )
    worktree = tmp_path / "wt"
    run_git(repo, "worktree", "add", "-q", str(worktree))  # its git dir lies under the name
    for where in (repo, worktree):
        con = connect(tmp_path / f"{where.name}.duckdb")
        load_git_history(con, where, name="r")
        szz = load_fix_inducing(con, where, name="r")
        assert (szz.loaded, szz.rejected) == (1, 0)
        (origin,) = con.execute("SELECT origin FROM loads WHERE source = 'git-szz'").fetchone()
        assert origin == name_text(where)
        assert con.execute("SELECT method, lines FROM fix_inducing").fetchall() == [("blame", 1)]
        con.close()


def test_a_transcript_named_so_loads(tmp_path: Path) -> None:
    path = tmp_path / f"{LATIN}.jsonl"
    path.write_text(line("user", "u1", None, "go") + "\n")
    con = connect(tmp_path / "t.duckdb")
    summary = load_transcripts(con, [tmp_path])
    assert (summary.read, summary.loaded, summary.rejected) == (1, 1, 0)
    files = {r[0] for r in con.execute("SELECT DISTINCT source_file FROM messages").fetchall()}
    assert files == {name_text(path.resolve())}


def test_the_p2_sheet_and_agent_vs_human_read_a_file_named_so(tmp_path: Path) -> None:
    """The loaded name is its text (U+FFFD); git is asked by its bytes: the sheet shows the
    file's diff (it showed none) and its surviving lines are counted (they were not)."""
    name = os.fsdecode(b"caf\xe9.py")
    repo = repo_with(
        tmp_path / "repo", (name, "a = 1\nb = 2\n", "add"), (name, "a = 1\nb = 3\n", "fix b")
    )
    head = run_git(repo, "rev-parse", "HEAD").strip()
    source = open_repo(repo)
    view = read_commit(source, head, non_code_paths=(), on_paths=["caf\ufffd.py"])
    assert view.paths == ("caf\ufffd.py",) and "+b = 3" in view.diff
    survivors = blame_surviving_lines(source, head, ["caf\ufffd.py"])
    assert sorted(survivors.values()) == [1, 1]  # a = 1 from the first commit, b = 3 the fix


SHA = "0123456789abcdef0123456789abcdef01234567"
LOADS = {
    "labels": ("jsonl", json.dumps({"confidence": 0.3, "correct": True}) + "\n", ()),
    "board": (
        "csv",
        "key,summary,status,created,resolved\nT-1,do it,Done,2024-01-01,2024-01-02\n",
        ("--format", "csv", "--map", "task_ref=key"),
    ),
    "runs": (
        "jsonl",
        json.dumps(
            {
                "task_id": "T1",
                "session_id": "s1",
                "status": "completed",
                "started_at": "2024-01-01T00:00:00Z",
                "finished_at": "2024-01-01T00:01:00Z",
            }
        )
        + "\n",
        (),
    ),
    "ci": (
        "xml",
        '<testsuite name="s" tests="1" failures="0" timestamp="2024-01-01T00:00:00">'
        '<testcase classname="a" name="t" time="0.1"/></testsuite>\n',
        ("--repo", "o/r", "--sha", SHA),
    ),
}


@pytest.mark.parametrize("kind", sorted(LOADS))
def test_a_file_named_so_loads_through_the_cli(kind: str, tmp_path: Path) -> None:
    suffix, text, options = LOADS[kind]
    path = tmp_path / f"{LATIN}-{kind}.{suffix}"
    path.write_text(text)
    done = run_reflect(
        "load", kind, str(path), *options, "--db", str(tmp_path / "x.duckdb"), cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "read 1 = loaded 1 + rejected 0" in done.stdout, done.stdout


def test_name_text_leaves_text_as_it_is_under_any_locale(tmp_path: Path) -> None:
    """A message quoting a name may hold any text: under the C locale without UTF-8 mode,
    where ``os.fsencode`` would refuse "é", the text is returned as it is."""
    code = (
        "from agent_reflection.names import name_text; print(ascii(name_text('caf\\xe9 report')))"
    )
    env = {**os.environ, "LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "'caf\\xe9 report'"


def test_lone_surrogate_names_the_first_place_and_escapes_a_key() -> None:
    assert lone_surrogate({"a": ["ok", {"b": "x\udce9"}], "c": "\ud800"}) == "/a/1/b"
    where = lone_surrogate({"k\ud800": 1})
    assert where == "/k\\ud800" and where.encode("utf-8")  # a location a record can hold
    assert lone_surrogate({"a": [1, 2.0, None, True, "\u00e9\U0001f600"]}) is None


def test_a_repository_folder_named_so_gets_its_text_as_the_repo_name(tmp_path: Path) -> None:
    repo = repo_with(tmp_path / LATIN, ("app.py", "x = 1\n", "fix: x"))
    con = connect(tmp_path / "r.duckdb")
    load_git_history(con, repo)
    assert load_fix_inducing(con, repo).loaded == 1
    assert con.execute("SELECT DISTINCT repo FROM commits").fetchall() == [("caf\ufffd",)]
    assert con.execute("SELECT DISTINCT status FROM loads").fetchall() == [("ok",)]


def test_an_empty_file_named_so_warns_and_the_load_finishes(tmp_path: Path) -> None:
    path = tmp_path / f"{LATIN}.jsonl"
    path.write_text("")
    con = connect(tmp_path / "l.duckdb")
    summary = load_labels(con, path)
    assert summary.read == 0 and "nothing to read" in summary.detail["warnings"][0]
    (status, detail) = con.execute("SELECT status, detail FROM loads").fetchone()
    assert status == "ok" and "caf\ufffd.jsonl" in detail


def test_record_text_keeps_text_and_reads_every_lone_surrogate_as_u_fffd() -> None:
    assert record_text("caf\u00e9 \U0001f600") == "caf\u00e9 \U0001f600"
    assert record_text(f"{LATIN} report") == "caf\ufffd report"  # os.fsdecode's escape
    assert record_text("x\ud800 and \udce9") == "x\ufffd and \ufffd"  # from JSON: no byte


def test_lone_surrogate_reads_a_document_deeper_than_the_recursion_limit() -> None:
    deep: list[object] = []
    inner = deep
    for _ in range(sys.getrecursionlimit() + 100):
        nested: list[object] = []
        inner.append(nested)
        inner = nested
    inner.append("bad\udce9")
    found = lone_surrogate(deep)
    assert found is not None and found.endswith("/0/0/0")


def test_a_reply_log_in_a_folder_named_so_loads(tmp_path: Path) -> None:
    from agent_reflection.in_loop.replies import load_reflection_replies
    from test_escalation_replies import write_log

    log = write_log(tmp_path / LATIN)
    con = connect(tmp_path / "r.duckdb")
    summary = load_reflection_replies(con, [log])
    assert (summary.read, summary.loaded, summary.rejected) == (4, 4, 0)
    files = {r[0] for r in con.execute("SELECT source_file FROM reflection_replies").fetchall()}
    assert files == {name_text(log.resolve())}


def test_a_given_repository_name_is_stored_as_its_text(tmp_path: Path) -> None:
    repo = repo_with(tmp_path / "repo", ("a.py", "x = 1\n", "add a"))
    con = connect(tmp_path / "n.duckdb")
    load_git_history(con, repo, name=LATIN)
    assert con.execute("SELECT DISTINCT repo FROM commits").fetchall() == [("caf\ufffd",)]


def test_reflect_serve_s_database_in_a_folder_named_so_is_refused_with_the_fix(
    tmp_path: Path,
) -> None:
    from agent_reflection.errors import ReflectionError
    from agent_reflection.serve.cycle_source import load_telemetry

    made = tmp_path / "plain" / "live.duckdb"
    made.parent.mkdir()
    connect(made).close()
    live = (tmp_path / LATIN) / "live.duckdb"
    made.parent.rename(live.parent)  # DuckDB cannot create it there: made, then moved
    with pytest.raises(ReflectionError, match="not UTF-8: rename the folder"):
        load_telemetry(connect(tmp_path / "c.duckdb"), live)


def test_a_database_path_named_so_is_refused_with_the_fix(tmp_path: Path) -> None:
    (tmp_path / "x.jsonl").write_text(json.dumps({"confidence": 0.5, "correct": True}) + "\n")
    done = run_reflect(
        "load",
        "labels",
        str(tmp_path / "x.jsonl"),
        "--db",
        str(tmp_path / LATIN / "x.duckdb"),
        cwd=tmp_path,
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert "DuckDB opens files by UTF-8 names" in done.stderr
    assert "choose a --db path" in done.stderr
