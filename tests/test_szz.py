"""SZZ at load time: line filters, tiny real repos for each rule, and flask against PyDriller."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tokenize
from pathlib import Path
from typing import Any

import duckdb
import pytest

from agent_reflection.load.git.history import load_git_history
from agent_reflection.load.git.repo import GitLoadError, open_repo
from agent_reflection.load.git.szz import (
    BULK_MIN_FILES,
    BULK_MIN_LINES,
    COMMITS_PER_FIX_FOR_A_GRAPH,
    FixRef,
    GitSession,
    PrivateCommitGraph,
    account_file,
    blame_lines,
    commit_facts,
    diff_fix,
    diff_fixes,
    load_fix_inducing,
    parse_diff_tree,
)
from agent_reflection.load.git.szz_lines import (
    Hunk,
    account_hunk,
    cosmetic_lines,
    file_kind,
    is_version_line,
    ranges,
)
from agent_reflection.store.db import connect
from conftest import run_git

# ----------------------------------------------------------------------------- helpers


def commit(repo: Path, message: str, when: str = "2024-01-01T00:00:00+00:00") -> str:
    run_git(repo, "add", "-A")
    env = {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    run_git(repo, "commit", "-q", "--allow-empty", "-m", message, env=env)
    return run_git(repo, "rev-parse", "HEAD").strip()


def write(repo: Path, name: str, text: str) -> None:
    path = repo / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def rows(con: duckdb.DuckDBPyConnection, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    return con.execute(sql, list(params)).fetchall()


def inducing(con: duckdb.DuckDBPyConnection, fix: str) -> list[tuple[Any, ...]]:
    return rows(
        con,
        "SELECT introducing_sha, path, lines, method FROM fix_inducing WHERE fix_sha = ? "
        "ORDER BY ALL",
        fix,
    )


def changes(con: duckdb.DuckDBPyConnection, fix: str) -> dict[str, tuple[Any, ...]]:
    found = rows(
        con,
        "SELECT path, kind, is_code, code_lines_added, code_lines_deleted, cosmetic_lines_added,"
        " cosmetic_lines_deleted FROM fix_changes WHERE fix_sha = ?",
        fix,
    )
    return {r[0]: r[1:] for r in found}


def szz(con: duckdb.DuckDBPyConnection, repo: Path, **kw: Any) -> Any:
    load_git_history(con, repo)
    summary = load_fix_inducing(con, repo, **kw)
    assert summary.reconciles
    return summary


def reflect(*args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI in a subprocess (no progress bars: CI is set)."""
    env = {**os.environ, "CI": "1"}
    env.pop("REFLECT_DB", None)
    return subprocess.run(
        [sys.executable, "-m", "agent_reflection", *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture
def con(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    return connect(tmp_path / "szz.duckdb")


# ----------------------------------------------------------------------------- pure filters


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("src/flask/app.py", "code"),
        ("CHANGES.rst", "changelog"),
        ("CHANGELOG.md", "changelog"),
        ("docs/conf.py", "docs"),
        ("README.md", "docs"),
        ("uv.lock", "lockfile"),
        ("package-lock.json", "lockfile"),
        ("requirements/dev.txt", "lockfile"),
        ("requirements-dev.txt", "lockfile"),
        ("LICENSE.txt", "license"),
        ("src/logo.png", "media"),
        (".gitignore", "meta"),
        ("package.json", "code"),
        ("pyproject.toml", "code"),
        ("src/newsletter.py", "code"),  # "news" prefix only as a whole word
        ("src/history_view.py", "code"),
        ("src/news.py", "code"),
        ("LICENSE_APACHE", "license"),
    ],
)
def test_file_kind(path: str, kind: str) -> None:
    assert file_kind(path) == kind


def test_python_cosmetic_lines_are_comments_docstrings_and_blanks() -> None:
    source = (
        '"""Module doc."""\n'  # 1 doc
        "import os  # why\n"  # 2 code with a comment
        "\n"  # 3 blank
        "# a comment\n"  # 4
        "def f(\n"  # 5
        "    a,\n"  # 6
        "\n"  # 7 blank inside brackets
        "):\n"  # 8
        '    """Multi-line\n'  # 9 doc
        "    docstring.\n"  # 10 doc
        '    """\n'  # 11 doc
        '    return "{}".format(a)\n'  # 12 code: a string that is not a statement
        "x = '''\n"  # 13 code: a string value spanning lines
        "text\n"  # 14 code
        "'''\n"  # 15 code
    )
    assert cosmetic_lines(source, "m.py") == frozenset({1, 3, 4, 7, 9, 10, 11})


def test_python_scanner_survives_unclosed_strings_and_continuations() -> None:
    assert cosmetic_lines('x = """never closed\n# c\n', "bad.py") == frozenset({2})
    source = 'x = 1 + \\\n    "not a docstring"\n"doc"  # c\nf("a",\n  "b")\n'
    assert cosmetic_lines(source, "m.py") == frozenset({3})
    # a continuation ended by a comment: the next line still continues it; a blank line
    # between ends it, so a string after the blank line is documentation again
    assert cosmetic_lines('foo \\# c\n"""d"""\n', "m.py") == frozenset()
    assert cosmetic_lines('foo \\# c\n\n"""d"""\n', "m.py") == frozenset({2, 3})
    assert cosmetic_lines('f(x) \\\n\n"""d"""\n', "m.py") == frozenset({2, 3})
    assert cosmetic_lines('x = (1,\n\n"""d""")\n', "m.py") == frozenset({2})


def test_scan_up_to_a_line_gives_the_same_answer_for_those_lines() -> None:
    source = 'x = 1\n"""A docstring\n\nspanning the cut."""\ny = """\n# in a string\n"""\n'
    full = cosmetic_lines(source, "m.py")
    assert full == frozenset({2, 3, 4})
    for upto in range(1, 9):
        assert cosmetic_lines(source, "m.py", upto) == {n for n in full if n <= upto}
    js = "a();\n/* open\nstill */\nb();\n"
    assert cosmetic_lines(js, "x.js", 2) == frozenset({2})


def test_block_comments_in_c_like_and_markup() -> None:
    js = "a();\n/* one\n   two */\nb(); /* open\nstill */ c();\n// line\n"
    assert cosmetic_lines(js, "x.js") == frozenset({2, 3, 6})
    html = "<p>\n<!-- note\n-->\n{# jinja #}\n"
    assert cosmetic_lines(html, "t.html") == frozenset({2, 3, 4})
    assert cosmetic_lines("a\n\n# not a comment here\n", "x.unknown") == frozenset({2})


def test_account_hunk_pairs_whitespace_only_changes() -> None:
    hunk = Hunk(
        old_start=10,
        deleted=("if x:", "  y = 1", "# gone", "z = 2"),
        new_start=10,
        added=("if x:  ", "    y = 1", "z = 3"),
    )
    got = account_hunk(hunk, old_cosmetic=frozenset({12}), new_cosmetic=frozenset())
    # "if x:" and "y = 1" only changed whitespace; line 12 is a comment; "z = 2" -> "z = 3"
    assert got.blame == (13,)
    assert (got.code_deleted, got.cosmetic_deleted) == (1, 3)
    assert (got.code_added, got.cosmetic_added) == (1, 2)


@pytest.mark.parametrize(
    ("deleted", "added", "markup", "text_lines"),
    [
        pytest.param(
            ('    click.option("--flatten", help="Flatten nested JSON objets"),',),
            ('    click.option("--flatten", help="Flatten nested JSON objects"),',),
            False,
            2,
            id="help-string",
        ),
        pytest.param(
            ("{'title': 'Hedgedogs', 'n': 1}", 'x = "a \\"quoted\\" wrod"'),
            ('x = "a \\"quoted\\" word"', "{'title': 'Hedgehogs', 'n': 1}"),
            False,
            4,
            id="escaped-quotes-and-reordered-lines",
        ),
        pytest.param(("last_pk = 1",), ("last_pkk = 1",), False, 0, id="a-name-is-code"),
        pytest.param(('f("a", b)',), ('f("a", c)',), False, 0, id="a-string-and-a-name"),
        pytest.param(('f("a")', "g()"), ('f("b")',), False, 2, id="one-pair-of-three"),
        pytest.param(
            ("    <li><em>There are no messages so far.</em>",),
            ("    <li><em>There's no message so far.</em>",),
            True,
            2,
            id="markup-prose",
        ),
        pytest.param(
            ("    <li><em>There are no messages so far.</em>",),
            ("    <li><em>There's no message so far.</em>",),
            False,
            0,
            id="prose-outside-markup-is-code",
        ),
        pytest.param(('<a href="/x">',), ('<a hreff="/x">',), True, 0, id="a-markup-attribute"),
    ],
)
def test_account_hunk_counts_lines_changed_only_inside_text(
    deleted: tuple[str, ...], added: tuple[str, ...], markup: bool, text_lines: int
) -> None:
    hunk = Hunk(old_start=1, deleted=deleted, new_start=1, added=added)
    got = account_hunk(hunk, frozenset(), frozenset(), markup)
    assert got.text_lines == text_lines
    assert got.text_lines <= got.code_added + got.code_deleted
    assert got.blame == tuple(range(1, len(deleted) + 1))  # text-only lines are still blamed


def test_ranges() -> None:
    assert ranges([5, 3, 4, 9, 10, 12, 4]) == [(3, 5), (9, 10), (12, 12)]


def test_parse_diff_tree_renames_and_binaries() -> None:
    raw = (
        b":100644 100644 " + b"a" * 40 + b" " + b"b" * 40 + b" R090\0old.py\0new.py\0"
        b":000000 100644 " + b"0" * 40 + b" " + b"c" * 40 + b" A\0img.png\0\0"
        b"diff --git a/old.py b/new.py\nsimilarity index 90%\nrename from old.py\n"
        b"rename to new.py\n--- a/old.py\n+++ b/new.py\n@@ -3 +3 @@\n-x = 1\n+x = 2\n"
        b"@@ -7,0 +8,2 @@\n+a\n+b\n"
        b"diff --git a/img.png b/img.png\nnew file mode 100644\nBinary files /dev/null and "
        b"b/img.png differ\n"
    )
    first, second = parse_diff_tree(raw)
    assert (first.path, first.old_path, first.status, first.binary) == (
        "new.py",
        "old.py",
        "R",
        False,
    )
    assert first.hunks == (Hunk(3, ("x = 1",), 3, ("x = 2",)), Hunk(8, (), 8, ("a", "b")))
    assert (second.old_blob, second.new_blob, second.binary) == (None, "c" * 40, True)


# ----------------------------------------------------------------------------- tiny real repos


def test_blames_the_commit_that_wrote_the_changed_line(
    git_repo: Path, con: duckdb.DuckDBPyConnection
) -> None:
    write(git_repo, "app.py", "def f():\n    return 1\n\n\ndef g():\n    return 2\n")
    a = commit(git_repo, "Add f and g", when="2024-01-01T00:00:00+00:00")
    write(git_repo, "app.py", "def f():\n    return 1\n\n\ndef g():\n    return 20\n")
    b = commit(git_repo, "Tune g", when="2024-01-03T00:00:00+00:00")
    write(git_repo, "app.py", "def f():\n    return 10\n\n\ndef g():\n    return 20\n")
    fix = commit(git_repo, "Fix f", when="2024-01-11T12:00:00+00:00")
    szz(con, git_repo)
    assert inducing(con, fix) == [(a, "app.py", 1, "blame")]
    gap, merge, bulk = rows(
        con,
        "SELECT gap_days, introducing_is_merge, introducing_is_bulk FROM fix_inducing "
        "WHERE fix_sha = ?",
        fix,
    )[0]
    assert (gap, merge, bulk) == (10.5, False, False)
    assert changes(con, fix) == {"app.py": ("code", True, 1, 1, 0, 0)}
    assert b not in {r[0] for r in rows(con, "SELECT introducing_sha FROM fix_inducing")}


def test_whitespace_comment_and_docstring_lines_are_not_blamed(
    git_repo: Path, con: duckdb.DuckDBPyConnection
) -> None:
    write(git_repo, "m.py", 'def f(x):\n    """Old doc."""\n    # old note\n    return x\n')
    commit(git_repo, "Add f")
    write(git_repo, "m.py", 'def f(x):\n    """New doc."""\n    # new note\n      return x\n')
    fix = commit(git_repo, "Fix docs and indentation of f")
    szz(con, git_repo)
    assert inducing(con, fix) == [(None, None, 0, "no-deleted-lines")]
    # docstring, comment and the re-indented return: 3 cosmetic lines each side, no code
    assert changes(con, fix) == {"m.py": ("code", True, 0, 0, 3, 3)}


def test_docs_changelog_and_lockfiles_are_not_blamed(
    git_repo: Path, con: duckdb.DuckDBPyConnection
) -> None:
    write(git_repo, "CHANGES.rst", "v1\n- a\n")
    write(git_repo, "docs/guide.md", "old words\n")
    write(git_repo, "uv.lock", "pin = 1\n")
    commit(git_repo, "Docs")
    write(git_repo, "CHANGES.rst", "v1\n- b\n")
    write(git_repo, "docs/guide.md", "new words\n")
    write(git_repo, "uv.lock", "pin = 2\n")
    fix = commit(git_repo, "Fix typo in docs")
    szz(con, git_repo)
    assert inducing(con, fix) == [(None, None, 0, "no-code-files")]
    assert changes(con, fix) == {
        "CHANGES.rst": ("changelog", False, 0, 0, 1, 1),
        "docs/guide.md": ("docs", False, 0, 0, 1, 1),
        "uv.lock": ("lockfile", False, 0, 0, 1, 1),
    }


def test_add_only_fix_has_no_candidate(git_repo: Path, con: duckdb.DuckDBPyConnection) -> None:
    write(git_repo, "a.py", "x = 1\n")
    commit(git_repo, "Add a")
    write(git_repo, "a.py", "x = 1\nif x is None:\n    raise ValueError\n")
    fix = commit(git_repo, "Fix missing check")
    szz(con, git_repo)
    assert inducing(con, fix) == [(None, None, 0, "no-deleted-lines")]
    assert changes(con, fix) == {"a.py": ("code", True, 2, 0, 0, 0)}


def test_ignore_revs_file_is_honoured(git_repo: Path, tmp_path: Path) -> None:
    write(git_repo, "s.py", "name = 'a'\nother = 'b'\n")
    original = commit(git_repo, "Add s")
    write(git_repo, "s.py", 'name = "a"\nother = "b"\n')
    restyle = commit(git_repo, "Use double quotes")
    write(git_repo, "s.py", 'name = "A"\nother = "b"\n')
    fix = commit(git_repo, "Fix name")

    # a user's own blame.ignoreRevsFile does not change the result: only the repo's file counts
    private = tmp_path / "my-ignores"
    private.write_text(f"{restyle}\n")
    run_git(git_repo, "config", "blame.ignoreRevsFile", str(private))
    plain = connect(tmp_path / "plain.duckdb")
    szz(plain, git_repo)
    assert inducing(plain, fix) == [(restyle, "s.py", 1, "blame")]

    write(git_repo, ".git-blame-ignore-revs", f"# style only\n{restyle}\n")
    commit(git_repo, "Ignore the restyle in blame")
    ignoring = connect(tmp_path / "ignoring.duckdb")
    summary = szz(ignoring, git_repo)
    assert summary.detail["ignore_revs"] == 1
    assert inducing(ignoring, fix) == [(original, "s.py", 1, "blame")]


def test_merge_and_bulk_candidates_are_marked(
    git_repo: Path, con: duckdb.DuckDBPyConnection
) -> None:
    write(git_repo, "c.py", "value = 0\n")
    commit(git_repo, "Add c")
    run_git(git_repo, "checkout", "-q", "-b", "side")
    write(git_repo, "c.py", "value = 1\n")
    commit(git_repo, "Side sets 1")
    run_git(git_repo, "checkout", "-q", "main")
    write(git_repo, "c.py", "value = 2\n")
    commit(git_repo, "Main sets 2")
    subprocess.run(["git", "merge", "-q", "side"], cwd=git_repo, capture_output=True, check=False)
    write(git_repo, "c.py", "value = 3\n")  # the conflict resolved with a new line
    merge = commit(git_repo, "Merge side")
    for i in range(BULK_MIN_FILES):
        write(git_repo, f"pkg/m{i}.py", f"n = {i}\n")
    bulk = commit(git_repo, "Vendor pkg")
    write(git_repo, "c.py", "value = 4\n")
    write(git_repo, "pkg/m0.py", "n = -1\n")
    fix = commit(git_repo, "Fix values")
    szz(con, git_repo)
    got = rows(
        con,
        "SELECT introducing_sha, path, introducing_is_merge, introducing_is_bulk FROM "
        "fix_inducing WHERE fix_sha = ? ORDER BY path",
        fix,
    )
    assert got == [(merge, "c.py", True, False), (bulk, "pkg/m0.py", False, True)]


def test_bulk_by_changed_lines(git_repo: Path) -> None:
    write(git_repo, "big.py", "".join(f"v{i} = {i}\n" for i in range(BULK_MIN_LINES)))
    big = commit(git_repo, "Add a big module")
    write(git_repo, "small.py", "".join(f"v{i} = {i}\n" for i in range(BULK_MIN_LINES - 1)))
    small = commit(git_repo, "Add a module one line short of bulk")
    git = GitSession(git_repo, None)
    facts = commit_facts(git, [big, small])
    assert (facts[big].lines, facts[big].is_bulk) == (BULK_MIN_LINES, True)
    assert (facts[small].files, facts[small].is_bulk) == (1, False)
    git.close()


def test_rename_blames_the_old_path_and_root_fix(git_repo: Path, tmp_path: Path) -> None:
    repo = tmp_path / "fresh"
    repo.mkdir()
    run_git(repo, "init", "-q", "-b", "main")
    write(repo, "old.py", "".join(f"line_{i} = {i}\n" for i in range(20)))
    root = commit(repo, "Fix everything from the start")
    run_git(repo, "mv", "old.py", "new.py")
    write(repo, "new.py", (repo / "new.py").read_text().replace("line_3 = 3", "line_3 = 33"))
    fix = commit(repo, "Fix line 3 and rename")
    con = connect(tmp_path / "r.duckdb")
    szz(con, repo)
    assert inducing(con, fix) == [(root, "new.py", 1, "blame")]
    assert inducing(con, root) == [(None, None, 0, "root-commit")]
    assert rows(con, "SELECT old_path FROM fix_changes WHERE fix_sha = ?", fix) == [("old.py",)]


def test_awkward_paths_reach_the_rows_as_the_git_load_stores_them(
    git_repo: Path, con: duckdb.DuckDBPyConnection
) -> None:
    """Quotes, a backslash, a tab, a newline, a non-BMP character and a byte that is not UTF-8
    in file names: SZZ's rows (one JSON document per batch) hold the names ``commit_files``
    holds, the path of the blamed lines included."""
    names = [
        b'qu"ote.py',
        b"back\\slash.py",
        b"tab\there.py",
        b"new\nline.py",
        "emoji-\U0001f600.py".encode(),
        b"lat\xe9n.py",
    ]
    for name in names:
        (git_repo / os.fsdecode(name)).write_text("a = 1\nb = 2\n")
    introducing = commit(git_repo, "Add the files")
    for name in names:
        (git_repo / os.fsdecode(name)).write_text("a = 1\nb = 3\n")
    fix = commit(git_repo, "Fix b in every file")
    szz(con, git_repo)
    stored = rows(con, "SELECT path FROM commit_files WHERE sha = ? ORDER BY path", fix)
    assert len(stored) == len(names)
    assert rows(con, "SELECT path FROM fix_changes WHERE fix_sha = ? ORDER BY path", fix) == stored
    assert inducing(con, fix) == sorted((introducing, path, 1, "blame") for (path,) in stored)
    assert ("lat\ufffdn.py",) in stored and ("emoji-\U0001f600.py",) in stored


def test_a_revert_gets_diff_facts_but_nothing_is_blamed(
    git_repo: Path, con: duckdb.DuckDBPyConnection
) -> None:
    write(git_repo, "m.py", 'def f(x):\n    """Doc."""\n    return x\n')
    commit(git_repo, "Add f")
    write(git_repo, "m.py", 'def f(x):\n    """Longer doc."""\n    return x\n')
    doc = commit(git_repo, "Expand the doc of f")
    run_git(git_repo, "revert", "--no-edit", doc)
    revert = run_git(git_repo, "rev-parse", "HEAD").strip()
    write(git_repo, "m.py", 'def f(x):\n    """Doc."""\n    return x + 1\n')
    code = commit(git_repo, "Return x + 1")
    run_git(git_repo, "revert", "--no-edit", code)
    code_revert = run_git(git_repo, "rev-parse", "HEAD").strip()
    summary = szz(con, git_repo)
    assert (summary.read, summary.loaded) == (2, 2)  # the two reverts; no fix-like commit
    # the docstring-only revert changes no code line; the other one changes one each side
    assert changes(con, revert) == {"m.py": ("code", True, 0, 0, 1, 1)}
    assert changes(con, code_revert) == {"m.py": ("code", True, 1, 1, 0, 0)}
    assert rows(con, "SELECT count(*) FROM fix_inducing") == [(0,)]  # fix_inducing: fixes only
    again = load_fix_inducing(con, git_repo)
    assert (again.loaded, again.already_present) == (0, 2)


@pytest.mark.parametrize(
    ("line", "is_version"),
    [
        ("__version__ = '0.7.2-dev'", True),
        ("    version='0.7.2-dev',", True),
        ('version = "3.2"', True),
        ('  "version": "1.0.0",', True),
        ("VERSION = (1, 2)", False),  # a tuple of numbers: not a version string
        ("version = compute_version()", False),
        ("    return 'x'", False),
    ],
)
def test_version_lines(line: str, is_version: bool) -> None:
    assert is_version_line(line) is is_version


def test_a_version_bump_counts_its_version_lines(
    git_repo: Path, con: duckdb.DuckDBPyConnection
) -> None:
    write(git_repo, "pkg/__init__.py", "__version__ = '0.7.1'\n\n\ndef f():\n    return 1\n")
    write(git_repo, "setup.py", "setup(\n    name='pkg',\n    version='0.7.1',\n)\n")
    commit(git_repo, "Release 0.7.1")
    write(git_repo, "pkg/__init__.py", "__version__ = '0.7.2-dev'\n\n\ndef f():\n    return 1\n")
    write(git_repo, "setup.py", "setup(\n    name='pkg',\n    version='0.7.2-dev',\n)\n")
    bump = commit(git_repo, "In case we need another bugfix release")
    write(git_repo, "pkg/__init__.py", "__version__ = '0.7.2'\n\n\ndef f():\n    return 2\n")
    fix = commit(git_repo, "Fix f and release 0.7.2")
    szz(con, git_repo)
    version = "SELECT path, version_lines FROM fix_changes WHERE fix_sha = ? ORDER BY path"
    assert rows(con, version, bump) == [("pkg/__init__.py", 2), ("setup.py", 2)]
    assert rows(con, version, fix) == [("pkg/__init__.py", 2)]  # of its 4 code lines


def test_a_typo_fix_counts_its_text_only_lines(
    git_repo: Path, con: duckdb.DuckDBPyConnection
) -> None:
    option = 'opt = option("--flatten", help="Flatten JSON {}")\n'
    write(git_repo, "cli.py", option.format("objets") + "last_pk = 1\n")
    write(git_repo, "t/page.html", "<ul>\n  <li><em>There are no messages so far.</em>\n</ul>\n")
    commit(git_repo, "Add flatten")
    write(git_repo, "cli.py", option.format("objects") + "last_pk = 1\n")
    write(git_repo, "t/page.html", "<ul>\n  <li><em>There's no message so far.</em>\n</ul>\n")
    spelling = commit(git_repo, "Fixed spelling of objects")
    write(git_repo, "cli.py", option.format("objects") + "last_pkk = 1\n")
    name = commit(git_repo, "Fixed typo with last_pk")
    szz(con, git_repo)
    text = "SELECT path, code_lines_added + code_lines_deleted, text_lines FROM fix_changes"
    assert rows(con, text + " WHERE fix_sha = ? ORDER BY path", spelling) == [
        ("cli.py", 2, 2),
        ("t/page.html", 2, 2),
    ]
    assert rows(con, text + " WHERE fix_sha = ?", name) == [("cli.py", 2, 0)]
    # text-only lines are still blamed: the typo's line came from "Add flatten"
    assert [r[2] for r in inducing(con, spelling)] == [1, 1]


def _history(repo: Path, fixes: int) -> None:
    write(repo, "h.py", "".join(f"v{i} = {i}\n" for i in range(fixes)))
    commit(repo, "Add h")
    for i in range(fixes):
        text = (repo / "h.py").read_text().replace(f"v{i} = {i}\n", f"v{i} = {i + 100}\n")
        write(repo, "h.py", text)
        commit(repo, f"Fix v{i}")


def _other_files(repo: Path, stem: str, commits: int) -> None:
    """``commits`` commits that each add a file and touch nothing else."""
    for i in range(commits):
        write(repo, f"{stem}{i}.py", f"{stem} = {i}\n")
        commit(repo, f"Add {stem}{i}")


def test_rerun_adds_nothing_and_a_crash_is_completed(git_repo: Path, tmp_path: Path) -> None:
    _history(git_repo, 5)
    clean = connect(tmp_path / "clean.duckdb")
    first = szz(clean, git_repo)
    assert (first.read, first.loaded, first.already_present) == (5, 5, 0)
    again = load_fix_inducing(clean, git_repo)
    assert (again.read, again.loaded, again.already_present) == (5, 0, 5)
    expected = rows(clean, "SELECT * EXCLUDE (load_id) FROM fix_inducing ORDER BY ALL")
    assert len(expected) == 5

    crashed = connect(tmp_path / "crashed.duckdb")
    load_git_history(crashed, git_repo)

    def boom(_: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        load_fix_inducing(crashed, git_repo, batch_fixes=2, progress=boom)
    assert rows(crashed, "SELECT count(DISTINCT fix_sha) FROM fix_inducing") == [(2,)]
    assert rows(crashed, "SELECT status FROM loads WHERE source = 'git-szz'") == [("interrupted",)]
    resumed = load_fix_inducing(crashed, git_repo)
    assert (resumed.loaded, resumed.already_present) == (3, 2)
    assert rows(crashed, "SELECT * EXCLUDE (load_id) FROM fix_inducing ORDER BY ALL") == expected
    assert rows(crashed, "SELECT count(*) FROM fix_changes") == [(5,)]


def test_the_commit_graph_is_private_and_changes_no_row(git_repo: Path, tmp_path: Path) -> None:
    """SZZ's git processes read a commit-graph with changed-path Bloom filters written in a
    temporary folder: nothing in the repository changes, and the rows are those of a load whose
    git uses no graph (the repository's own config turns graphs off: git writes none, and the
    load says so). A re-run with one new fix in a longer history writes none either."""
    _history(git_repo, 5)
    _other_files(git_repo, "other", 3)  # commits a blame walks past
    text = (git_repo / "h.py").read_text().replace("v4 = 104\n", "v4 = 5\n")
    write(git_repo, "h.py", text)
    commit(git_repo, "Fix v4 again")

    def files_of_the_repository() -> dict[str, tuple[int, int]]:
        found = (p for p in (git_repo / ".git").rglob("*") if p.is_file())
        return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in found}

    with_graph = connect(tmp_path / "graph.duckdb")
    load_git_history(with_graph, git_repo)
    before = files_of_the_repository()
    summary = load_fix_inducing(with_graph, git_repo, batch_fixes=2)
    assert summary.reconciles and summary.detail["commit_graph"] is True
    assert files_of_the_repository() == before

    run_git(git_repo, "config", "core.commitGraph", "false")
    without = connect(tmp_path / "without.duckdb")
    assert szz(without, git_repo, batch_fixes=2).detail["commit_graph"] is False
    for table in ("fix_inducing", "fix_changes"):
        query = f"SELECT * EXCLUDE (load_id) FROM {table} ORDER BY ALL"
        assert rows(with_graph, query) == rows(without, query) != []
    assert rows(  # the last fix's blame walked past the three to the first fix of v4
        with_graph,
        "SELECT i.subject FROM fix_inducing f JOIN commits c ON c.sha = f.fix_sha "
        "JOIN commits i ON i.sha = f.introducing_sha WHERE c.subject = 'Fix v4 again'",
    ) == [("Fix v4",)]

    run_git(git_repo, "config", "--unset", "core.commitGraph")
    _other_files(git_repo, "more", COMMITS_PER_FIX_FOR_A_GRAPH)
    write(git_repo, "h.py", (git_repo / "h.py").read_text().replace("v3 = 103\n", "v3 = 3\n"))
    commit(git_repo, "Fix v3 again")
    load_git_history(with_graph, git_repo)
    again = load_fix_inducing(with_graph, git_repo)
    assert (again.loaded, again.detail["commit_graph"]) == (1, False)


def test_a_clone_at_git_s_deepest_alternates_is_attributed_without_the_graph(
    git_repo: Path, tmp_path: Path
) -> None:
    """git follows alternates six levels deep. In the last of six clones each sharing the
    objects of the one before (`clone --shared`), git reads every object, but not through the
    private graph's folder, which borrows one level more: SZZ then goes without the graph and
    attributes every fix as a load of the original repository does, rejecting none."""
    _history(git_repo, 3)
    source = git_repo
    for level in range(6):
        clone = tmp_path / f"shared{level}"
        run_git(tmp_path, "clone", "-q", "--shared", str(source), str(clone))
        source = clone
    assert "+v2 = 102" in run_git(source, "log", "-p")  # git reads every object there
    deepest = connect(tmp_path / "deepest.duckdb")
    summary = szz(deepest, source)
    assert (summary.loaded, summary.rejected, summary.detail["commit_graph"]) == (3, 0, False)
    original = connect(tmp_path / "original.duckdb")
    szz(original, git_repo)
    query = "SELECT * EXCLUDE (load_id, repo) FROM fix_inducing ORDER BY ALL"
    assert rows(deepest, query) == rows(original, query) != []


def test_a_session_reads_the_private_graph_and_the_repository_s_objects(
    git_repo: Path, tmp_path: Path
) -> None:
    """The environment a GitSession gives its git names the private object folder: git finds
    the repository's objects through the alternate, and a path-limited walk consults the
    graph's Bloom filters (git's trace2 counts their answers; without the graph it has none)."""
    _history(git_repo, 2)
    _other_files(git_repo, "other", 3)
    graph = PrivateCommitGraph(open_repo(git_repo), tmp_path / "graph")
    try:
        assert graph.written() and graph.env is not None
        trace = tmp_path / "trace.json"
        git = GitSession(git_repo, None, env={**graph.env, "GIT_TRACE2_EVENT": str(trace)})
        objects = git.run("rev-parse", "--git-path", "objects").stdout.decode().strip()
        assert Path(objects) == tmp_path / "graph" / "objects"
        assert git.run("cat-file", "-e", "HEAD:h.py").returncode == 0
        assert git.run("log", "--format=%H", "--", "h.py").stdout.count(b"\n") == 3
        answers = [
            json.loads(line)["value"]
            for line in trace.read_text().splitlines()
            if '"category":"bloom"' in line
        ]
        assert answers and answers[-1]["definitely_not"] >= 3  # the three other files' commits
    finally:
        graph.close()
    assert not (git_repo / ".git" / "objects" / "info" / "commit-graph").exists()


def test_missing_objects_reject_the_fix_and_the_rest_loads(
    git_repo: Path, con: duckdb.DuckDBPyConnection
) -> None:
    write(git_repo, "a.py", "a = 1\n")
    write(git_repo, "b.py", "b = 1\n")
    commit(git_repo, "Add a and b")
    write(git_repo, "a.py", "a = 2\n")
    broken = commit(git_repo, "Fix a")
    write(git_repo, "b.py", "b = 2\n")
    fine = commit(git_repo, "Fix b")
    load_git_history(con, git_repo)
    blob = run_git(git_repo, "rev-parse", f"{broken}^:a.py").strip()
    (git_repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    summary = load_fix_inducing(con, git_repo)
    assert summary.reconciles
    assert (summary.read, summary.loaded, summary.rejected) == (2, 1, 1)
    assert inducing(con, broken) == []
    assert len(inducing(con, fine)) == 1
    location, reason = rows(con, "SELECT location, reason FROM rejected WHERE source = 'git-szz'")[
        0
    ]
    assert location == f"repo@{broken}"
    assert blob in reason and "full clone" in reason
    retry = load_fix_inducing(con, git_repo)  # still missing: rejected again, nothing doubled
    assert (retry.rejected, retry.already_present, retry.loaded) == (1, 1, 0)
    con.close()
    cli = reflect(
        "load", "git", str(git_repo), "--szz", "--db", str(git_repo.parent / "cli.duckdb")
    )
    assert cli.returncode == 0, cli.stderr
    assert "SZZ could not read 1 fix(es)" in cli.stderr and "reflect rejected" in cli.stderr


def test_shallow_clone_marks_the_cut_instead_of_blaming_it(git_repo: Path, tmp_path: Path) -> None:
    write(git_repo, "x.py", "x = 1\ny = 1\n")
    commit(git_repo, "Add x and y")
    write(git_repo, "x.py", "x = 1\ny = 2\n")
    cut = commit(git_repo, "Fix y")
    write(git_repo, "x.py", "x = 2\ny = 2\n")
    fix = commit(git_repo, "Fix x", when="2024-01-02T00:00:00+00:00")
    write(git_repo, "x.py", "x = 3\ny = 2\n")
    again = commit(git_repo, "Fix x again", when="2024-01-04T00:00:00+00:00")
    shallow = tmp_path / "shallow"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "3", f"file://{git_repo}", str(shallow)],
        check=True,
        capture_output=True,
    )
    con = connect(tmp_path / "s.duckdb")
    summary = szz(con, shallow)
    assert summary.detail["shallow"] and summary.rejected == 0
    assert summary.detail["methods"] == {"blame": 1, "shallow-boundary": 2}
    # x = 1 is older than the clone: blaming it to the cut commit would be wrong
    assert inducing(con, fix) == [(None, "x.py", 1, "shallow-boundary")]
    assert inducing(con, cut) == [(None, None, 0, "shallow-boundary")]
    # a candidate inside the clone, in the same batch, still gets its facts
    assert rows(
        con,
        "SELECT introducing_sha, gap_days, introducing_is_merge FROM fix_inducing "
        "WHERE fix_sha = ?",
        again,
    ) == [(fix, 2.0, False)]


def test_submodule_bump_is_not_code(git_repo: Path, con: duckdb.DuckDBPyConnection) -> None:
    first = run_git(git_repo, "rev-parse", "HEAD").strip()
    run_git(git_repo, "update-index", "--add", "--cacheinfo", f"160000,{first},src/lib")
    run_git(git_repo, "commit", "-q", "-m", "Add lib")
    run_git(git_repo, "commit", "-q", "--allow-empty", "-m", "Empty")
    second = run_git(git_repo, "rev-parse", "HEAD").strip()
    run_git(git_repo, "update-index", "--cacheinfo", f"160000,{second},src/lib")
    run_git(git_repo, "commit", "-q", "-m", "Fix lib version")
    fix = run_git(git_repo, "rev-parse", "HEAD").strip()
    summary = szz(con, git_repo)
    assert summary.rejected == 0
    assert inducing(con, fix) == [(None, None, 0, "no-code-files")]
    assert changes(con, fix) == {"src/lib": ("submodule", False, 0, 0, 1, 1)}


def test_one_stream_of_diffs_equals_one_diff_per_fix(git_repo: Path) -> None:
    write(git_repo, "a.py", "".join(f"a{i} = {i}\n" for i in range(30)))
    write(git_repo, "logo.bin", "x")
    (git_repo / "logo.bin").write_bytes(b"\0\1\2")
    commit(git_repo, "Add a")
    run_git(git_repo, "mv", "a.py", "b.py")
    write(git_repo, "b.py", (git_repo / "b.py").read_text().replace("a3 = 3", "a3 = 33"))
    (git_repo / "logo.bin").write_bytes(b"\0\3")
    renamed = commit(git_repo, "Fix a3, rename")
    empty = commit(git_repo, "Fix nothing")
    write(git_repo, "b.py", "gone = True\n")
    rewritten = commit(git_repo, "Fix b")
    git = GitSession(git_repo, None)
    fixes = [
        FixRef(sha, (run_git(git_repo, "rev-parse", f"{sha}^").strip(),), 0.0)
        for sha in (renamed, empty, rewritten)
    ]
    streamed = diff_fixes(git, fixes)
    assert streamed == {f.sha: diff_fix(git, f.parents[0], f.sha) for f in fixes}
    assert streamed[empty] == []
    assert [(d.path, d.old_path, d.binary) for d in streamed[renamed]] == [
        ("b.py", "a.py", False),
        ("logo.bin", "logo.bin", True),
    ]
    git.close()


def test_szz_before_the_git_load_says_what_to_run(
    git_repo: Path, con: duckdb.DuckDBPyConnection
) -> None:
    with pytest.raises(GitLoadError, match=r"no commits of repo 'other'.*reflect load git"):
        load_fix_inducing(con, git_repo, name="other")
    assert rows(con, "SELECT count(*) FROM loads") == [(0,)]


def test_cli_load_git_szz(git_repo: Path, tmp_path: Path) -> None:
    _history(git_repo, 2)
    db = str(tmp_path / "cli.duckdb")
    done = reflect("load", "git", str(git_repo), "--szz", "--db", db, "--json")
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["loaded"] == 4
    assert (got["szz"]["source"], got["szz"]["read"], got["szz"]["loaded"]) == ("git-szz", 2, 2)
    text = reflect("load", "git", str(git_repo), "--szz", "--db", db).stdout.splitlines()
    assert text[-1].startswith("git-szz load") and text[-1].endswith("already present 2")


# ----------------------------------------------------------------------------- flask vs PyDriller


def _useless_line(line: str) -> bool:
    """PyDriller's own filter (Git._useless_line), applied to the same diff lines."""
    return not line or line.startswith(("//", "#", "/*", "'''", '"""', "*"))


@pytest.fixture(scope="module")
def flask_db(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    tmp = tmp_path_factory.mktemp("szz-flask")
    clone = tmp / "flask"
    bundle = shared_dir / "data" / "git" / "flask.bundle"
    subprocess.run(["git", "clone", "-q", str(bundle), str(clone)], check=True, capture_output=True)
    run_git(clone, "checkout", "-q", "-B", "main", "origin/main")
    con = connect(tmp / "flask.duckdb")
    load_git_history(con, clone, name="flask")
    # to the root, as PyDriller blames (tests/test_szz_horizon.py: inside the blame horizon the
    # default load finds exactly these candidates)
    summary = load_fix_inducing(con, clone, name="flask", full_depth=True)
    return clone, (con, summary)


#: Fixes of flask compared with PyDriller (every k-th fix that changes code, by sha). The
#: environment variable runs a larger comparison (docs/git.md quotes one over every fix).
PYDRILLER_SAMPLE = int(os.environ.get("SZZ_PYDRILLER_SAMPLE", "60"))


@pytest.mark.shared
@pytest.mark.slow(reason="flask with SZZ to the root (once a module); PyDriller's SZZ on 60 fixes")
def test_flask_matches_pydriller_except_where_the_filters_differ(
    flask_db: tuple[Path, Any],
) -> None:
    """Same mechanism as PyDriller's ``get_commits_last_modified_lines`` (same diff, same line
    filter -> identical introducing commits); then every difference of our filtered result is
    explained by a documented filter: non-code file, cosmetic line, PyDriller's prefix rule
    dropping a code line, or the histogram diff pairing lines differently."""
    pydriller = pytest.importorskip("pydriller")
    clone, (con, summary) = flask_db
    assert summary.reconciles and summary.rejected == 0
    code_fixes = rows(
        con,
        "SELECT DISTINCT f.fix_sha, c.parents[1] FROM fix_inducing f JOIN commits c "
        "ON c.repo = f.repo AND c.sha = f.fix_sha "
        "WHERE f.method IN ('blame', 'no-deleted-lines') ORDER BY f.fix_sha",
    )
    sample = code_fixes[:: max(1, len(code_fixes) // PYDRILLER_SAMPLE)][:PYDRILLER_SAMPLE]
    git = GitSession(clone, None)
    driller = pydriller.Git(str(clone))
    refs = [FixRef(fix, (parent,), 0.0) for fix, parent in sample]
    streamed = diff_fixes(git, refs)  # one stream, as the loader reads diffs
    assert streamed == {f.sha: diff_fix(git, f.parents[0], f.sha) for f in refs}
    mechanism_mismatches: list[str] = []
    reasons: dict[str, int] = {}
    pairs = same = fixes_same = 0
    for fix, parent in sample:
        theirs: dict[str, set[str]] = driller.get_commits_last_modified_lines(
            driller.get_commit(fix)
        )
        fix_theirs = set().union(*theirs.values())
        ours: dict[str, set[str]] = {}
        for sha, path in rows(
            con,
            "SELECT introducing_sha, path FROM fix_inducing WHERE fix_sha = ? AND method = 'blame'",
            fix,
        ):
            ours.setdefault(path, set()).add(sha)
        fixes_same += fix_theirs == set().union(*ours.values())
        myers = {d.path: d for d in diff_fix(git, parent, fix, "--diff-algorithm=myers")}
        histogram = {d.path: d for d in streamed[fix]}  # as the loader read it
        for path in sorted(set(theirs) | set(ours) | set(myers)):
            d = myers[path]
            deleted_myers = {h.old_start + i: t for h in d.hunks for i, t in enumerate(h.deleted)}
            kept = [n for n, t in deleted_myers.items() if not _useless_line(t.strip())]
            if d.submodule:  # PyDriller's blame of a gitlink fails and it skips the file
                kept = []
            theirs_lines = blame_lines(git, parent, d.old_path_arg, kept) if kept else {}
            # 1. the mechanism: PyDriller's lines through our diff parser and blame
            if set(theirs_lines.values()) != theirs.get(path, set()):
                mechanism_mismatches.append(f"{fix[:10]} {path}")
            # 2. our filters, each difference explained line by line
            h = histogram[path]
            deleted_hist = {h2.old_start + i for h2 in h.hunks for i in range(len(h2.deleted))}
            _, our_kept = account_file(git, h)
            old_cosmetic: frozenset[int] = frozenset()
            if h.old_blob is not None and file_kind(path) == "code":
                old_cosmetic = cosmetic_lines(git.blob(h.old_blob).decode("utf-8", "replace"), path)
            our_lines = blame_lines(git, parent, h.old_path_arg, our_kept) if our_kept else {}
            assert set(our_lines.values()) == ours.get(path, set()), (fix, path)
            pairs += 1
            if ours.get(path, set()) == theirs.get(path, set()):
                same += 1
                continue
            for sha in theirs.get(path, set()) - ours.get(path, set()):
                for n in (n for n, s in theirs_lines.items() if s == sha):
                    if file_kind(path) != "code":
                        why = "non-code file (ours skips)"
                    elif n in old_cosmetic:
                        why = "docstring, comment or blank line (ours skips)"
                    elif n in deleted_hist:
                        why = "whitespace-only change (ours skips)"
                    else:
                        why = "histogram diff does not delete this line"
                    reasons[why] = reasons.get(why, 0) + 1
            for sha in ours.get(path, set()) - theirs.get(path, set()):
                for n in (n for n, s in our_lines.items() if s == sha):
                    if n in deleted_myers:
                        why = "PyDriller's prefix rule drops a code line"
                    else:
                        why = "histogram diff deletes a line myers keeps"
                    reasons[why] = reasons.get(why, 0) + 1
    git.close()
    print(
        f"\nflask, {len(sample)} fixes ({fixes_same} with the same introducing commits), "
        f"{pairs} (fix, file) pairs, {same} identical; "
        f"differing lines by reason: {json.dumps(reasons, indent=1)}"
    )
    assert mechanism_mismatches == []
    assert len(sample) == min(PYDRILLER_SAMPLE, len(code_fixes)) and pairs > len(sample)
    # Docs and changelogs are most of what flask's fixes touch: PyDriller blames them, we don't.
    assert reasons.get("non-code file (ours skips)", 0) > 0


_SKIP_TOKENS = frozenset(
    {
        tokenize.COMMENT,
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.ENDMARKER,
        tokenize.ENCODING,
    }
)
_STATEMENT_START = frozenset({tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT})


def tokenize_cosmetic(text: str, n_lines: int) -> frozenset[int] | None:
    """The reference: the stdlib tokenizer's lines without a code token (a bare string
    statement is documentation). About 10x slower than the loader's scanner."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return None
    code: set[int] = set()
    significant = [t for t in tokens if t.type not in _SKIP_TOKENS or t.type in _STATEMENT_START]
    previous = tokenize.NEWLINE
    i = 0
    while i < len(significant):
        tok = significant[i]
        if tok.type in _STATEMENT_START:
            previous = tok.type
            i += 1
            continue
        if tok.type == tokenize.STRING and previous in _STATEMENT_START:
            j = i
            while j < len(significant) and significant[j].type == tokenize.STRING:
                j += 1
            after = significant[j].type if j < len(significant) else tokenize.NEWLINE
            if after in _STATEMENT_START:
                i = j
                continue
        code.update(range(tok.start[0], tok.end[0] + 1))
        previous = tok.type
        i += 1
    return frozenset(n for n in range(1, n_lines + 1) if n not in code)


#: Every k-th Python blob of flask's history checked against the tokenizer.
BLOB_STRIDE = 15


@pytest.mark.shared
@pytest.mark.slow
def test_python_scanner_matches_the_stdlib_tokenizer_on_flask(flask_db: tuple[Path, Any]) -> None:
    clone, _ = flask_db
    listed = run_git(clone, "rev-list", "--objects", "--all").splitlines()
    blobs = [line.split(" ", 1) for line in listed if line.endswith(".py") and " " in line]
    sample = blobs[::BLOB_STRIDE]
    git = GitSession(clone, None)
    checked = lines = 0
    for sha, path in sample:
        text = git.blob(sha).decode("utf-8", "replace")
        n_lines = len(text.split("\n")) - text.endswith("\n")
        reference = tokenize_cosmetic(text, n_lines)
        if reference is None:
            continue
        assert cosmetic_lines(text, path) == reference, (sha, path)
        checked += 1
        lines += n_lines
    git.close()
    assert checked > 0.95 * len(sample) and lines > 10_000
