"""Every SQL statement of the package lives in a named file under ``sql/`` (issue 16).

The scan reads the package's Python source (no import): a string literal that is a SQL statement
fails the first test unless its module is in the allow-list below. The name checks tie the files
to their readers: each ``.sql`` file outside ``schema/`` is named somewhere in the code, each name
in the code exists, and a file with ``{{identifier}}`` placeholders is read through
``compose_sql`` with exactly those names (``read_sql`` for a file without any).
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

from agent_reflection.store.db import compose_sql, quote_identifier, read_sql

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "agent_reflection"
SQL_DIR = PACKAGE / "sql"
#: Code outside the package that reads named queries too (the notebooks' display queries).
READERS_OUTSIDE = ("notebooks", "bench")

#: Modules allowed to hold inline SQL, and why. The three below are moved by the restructure's
#: other steps (issue 16: their owners put their SQL in sql/ on their branches); empty this list
#: once those branches are merged.
ALLOWED_INLINE_SQL: dict[str, str] = {}

#: A statement keyword in capitals opening the string (after blank space and ``--`` comments),
#: followed by nothing or by blank space: ``"COMMIT"``, ``"SELECT x FROM t"``. Capitals only, so
#: prose ("Load the ...", "replace") is not SQL; the lower-case forms are caught by
#: :data:`_LOWER_CASE_SQL`.
_KEYWORDS = (
    "SELECT|INSERT|UPDATE|DELETE|CREATE|WITH|DROP|ALTER|COPY|ATTACH|DETACH|PRAGMA|BEGIN|COMMIT|"
    "ROLLBACK|SET|RESET|DESCRIBE|SUMMARIZE|SHOW|EXPORT|IMPORT|INSTALL|LOAD|CHECKPOINT|VACUUM|"
    "TRUNCATE|MERGE|CALL|EXPLAIN|PREPARE|EXECUTE|USE|FROM|VALUES|UPSERT|REPLACE|ANALYZE"
)
_LEAD = r"^\s*(?:--[^\n]*\n\s*)*"
_UPPER_CASE_SQL = re.compile(_LEAD + rf"(?:{_KEYWORDS})(?:\s|$)")
#: Lower-case statements, by the words that follow the keyword (prose rarely has them).
_LOWER_CASE_SQL = re.compile(
    _LEAD
    + r"(?:select\s.+\sfrom\s|insert\s+(?:or\s+\w+\s+)?into\s|delete\s+from\s|update\s+\w+\s+set\s"
    r"|create\s+(?:or\s+replace\s+)?(?:temp\w*\s+)?(?:table|view|sequence|index|macro)\s"
    r"|drop\s+(?:table|view|sequence|index)\s|alter\s+table\s|copy\s*\(|with\s+\w+\s+as\s*\("
    r"|attach\s+'|begin\s+transaction\b)",
    re.DOTALL,
)
#: A name of a file under sql/ as the code spells it: ``"runs/insert_task.sql"``.
_SQL_NAME = re.compile(r"^[a-z0-9_]+(?:/[a-z0-9_]+)*\.sql$")
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


def is_sql_statement(text: str) -> bool:
    """Whether a string literal is (the start of) a SQL statement."""
    return bool(_UPPER_CASE_SQL.match(text) or _LOWER_CASE_SQL.match(text))


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes of a module and of its classes and functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def inline_sql(source: str) -> list[tuple[int, str]]:
    """(line, text) of every string literal in ``source`` that is a SQL statement.

    An f-string counts by its literal text with each ``{...}`` field shown as ``{}``; docstrings
    do not count (they describe statements).
    """
    tree = ast.parse(source)
    skip = _docstrings(tree)
    found: list[tuple[int, str]] = []
    parts_of_fstrings: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = "".join(
                part.value if isinstance(part, ast.Constant) else "{}" for part in node.values
            )
            parts_of_fstrings.update(id(part) for part in node.values)
            if is_sql_statement(text):
                found.append((node.lineno, text))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in skip
            and id(node) not in parts_of_fstrings
            and is_sql_statement(node.value)
        ):
            found.append((node.lineno, node.value))
    return sorted(found)


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if SQL_DIR not in p.parents)


def _module_name(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def _sql_files() -> list[str]:
    return sorted(p.relative_to(SQL_DIR).as_posix() for p in SQL_DIR.rglob("*.sql"))


def _readers() -> list[Path]:
    outside = [p for folder in READERS_OUTSIDE for p in sorted((ROOT / folder).glob("*.py"))]
    return [*_modules(), *outside]


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text("utf-8"))


@functools.cache
def _named_queries() -> list[tuple[str, int, str, str | None, set[str] | None]]:
    """(module, line, name, reader, identifiers) of every named query the code spells.

    A named query is a ``"folder/file.sql"`` literal that is the first argument of ``read_sql`` /
    ``compose_sql`` (``reader``; ``identifiers``: the keyword names a ``compose_sql`` call
    passes), or any such literal whose folder is one of sql/'s (a name kept in a constant;
    ``reader`` None). Other ``.sql`` paths (a demo repository's migrations) are not queries.
    """
    folders = {p.name for p in SQL_DIR.iterdir() if p.is_dir()}
    out: list[tuple[str, int, str, str | None, set[str] | None]] = []
    for path in _readers():
        tree = _tree(path)
        calls: dict[int, tuple[str, set[str]]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and node.args:
                func = node.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
                if name in ("read_sql", "compose_sql"):
                    keywords = {k.arg for k in node.keywords if k.arg is not None}
                    calls[id(node.args[0])] = (name, keywords)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and _SQL_NAME.match(node.value)
            ):
                reader, identifiers = calls.get(id(node), (None, None))
                if reader is None and node.value.split("/")[0] not in folders:
                    continue
                where = path.relative_to(ROOT).as_posix()
                out.append((where, node.lineno, node.value, reader, identifiers))
    return out


# --- the detector itself -------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "SELECT count(*) FROM t",
        "INSERT INTO t (a) VALUES (?)",
        "  -- why\n  UPDATE t SET a = 1",
        "COMMIT",
        "BEGIN IMMEDIATE",
        "DESCRIBE t",
        "COPY (SELECT * FROM t) TO 'x.parquet'",
        "select a from t where b = ?",
        "insert into t values (1)",
        "create or replace temp table x as select 1",
    ],
)
def test_sql_statements_are_recognised(text: str) -> None:
    assert is_sql_statement(text)


@pytest.mark.parametrize(
    "text",
    [
        "Load the sidecars under ``paths``.",
        "replace",
        "commit",
        "Install into ./.claude/agents/ of the project (default).",
        "Select the rows you want with --where.",
        "Delete state, lock and temporary files.",
        "Merge pull request #12 from demo/search",
        "runs/insert_task.sql",
        " from ",
    ],
)
def test_prose_and_names_are_not_sql(text: str) -> None:
    assert not is_sql_statement(text)


def test_the_scan_finds_inline_sql_but_not_docstrings() -> None:
    source = '''
"""Module doc: SELECT is mentioned here."""
def f(con, table):
    """SELECT * FROM documented_only"""
    con.execute("SELECT a FROM t WHERE b = ?", [1])
    con.execute(f"DROP TABLE {table}")
    con.execute(read_sql("runs/insert_task.sql"))
    return "replace"
'''
    assert inline_sql(source) == [(5, "SELECT a FROM t WHERE b = ?"), (6, "DROP TABLE {}")]


# --- the package --------------------------------------------------------------------------


def test_no_module_holds_inline_sql() -> None:
    offenders = [
        f"{_module_name(path)}:{line}: {text.splitlines()[0][:80]!r}"
        for path in _modules()
        if _module_name(path) not in ALLOWED_INLINE_SQL
        for line, text in inline_sql(path.read_text("utf-8"))
    ]
    offenders += [
        f"{path.relative_to(ROOT).as_posix()}:{line}: {text.splitlines()[0][:80]!r}"
        for path in sorted((ROOT / "notebooks").glob("*.py"))
        for line, text in inline_sql(path.read_text("utf-8"))
    ]
    assert not offenders, (
        "SQL belongs in a named file under src/agent_reflection/sql/, read with "
        "store.db.read_sql (compose_sql for a quoted identifier):\n" + "\n".join(offenders)
    )


def test_the_allow_list_names_modules_that_still_hold_sql() -> None:
    """An allow-listed module that is clean (or gone) leaves the list."""
    clean = [
        name
        for name in ALLOWED_INLINE_SQL
        if not (PACKAGE / name).is_file() or not inline_sql((PACKAGE / name).read_text("utf-8"))
    ]
    assert not clean, f"no inline SQL left in {clean}: remove them from ALLOWED_INLINE_SQL"


def test_every_named_query_exists() -> None:
    files = set(_sql_files())
    missing = [
        f"{module}:{line}: {name}"
        for module, line, name, _reader, _identifiers in _named_queries()
        if name not in files
    ]
    assert not missing, "no such file under sql/:\n" + "\n".join(missing)


def test_every_sql_file_is_read_by_the_code() -> None:
    """No orphans: each file outside schema/ (which ensure_schema runs whole) is named."""
    named = {name for _m, _l, name, _r, _i in _named_queries()}
    orphans = [f for f in _sql_files() if not f.startswith("schema/") and f not in named]
    assert not orphans, f"sql files no code reads: {orphans}"


def test_placeholders_are_composed_and_plain_files_are_read() -> None:
    """``compose_sql`` fills exactly a file's ``{{...}}`` placeholders; ``read_sql`` gets none."""
    wrong = []
    for module, line, name, reader, identifiers in _named_queries():
        path = SQL_DIR / name
        if reader is None or not path.is_file():
            continue
        placeholders = set(_PLACEHOLDER.findall(path.read_text("utf-8")))
        if reader == "read_sql" and placeholders:
            wrong.append(f"{module}:{line}: read_sql({name!r}) but it has {sorted(placeholders)}")
        if reader == "compose_sql" and placeholders != identifiers:
            wrong.append(
                f"{module}:{line}: compose_sql({name!r}) gives {sorted(identifiers or ())}, "
                f"the file wants {sorted(placeholders)}"
            )
    assert not wrong, "\n".join(wrong)


def test_every_sql_file_says_what_it_does_and_inserts_by_column_name() -> None:
    insert = re.compile(r"\bINSERT\s+(?:OR\s+\w+\s+)?INTO\s+(\S+)\s*(\(|BY\s+NAME\b)?", re.I)
    problems = []
    for name in _sql_files():
        text = (SQL_DIR / name).read_text("utf-8")
        if not text.startswith("--"):
            problems.append(f"{name}: no opening -- comment saying what it does")
        for found in insert.finditer(text):
            if found[2] is None:
                problems.append(f"{name}: INSERT INTO {found[1]} without a column list or BY NAME")
    assert not problems, "\n".join(problems)


# --- read_sql and compose_sql ---------------------------------------------------------------


def test_read_sql_reads_a_file_once() -> None:
    first = read_sql("runs/insert_task.sql")
    assert first == (SQL_DIR / "runs/insert_task.sql").read_text("utf-8")
    assert read_sql("runs/insert_task.sql") is first


def test_compose_sql_quotes_identifiers_and_checks_the_placeholders() -> None:
    assert quote_identifier('odd"name') == '"odd""name"'
    assert compose_sql("core/count_rows.sql", table='odd"name').endswith(
        'SELECT count(*) FROM "odd""name"\n'
    )
    with pytest.raises(ValueError, match=r"core/count_rows\.sql: placeholders \['table'\]"):
        compose_sql("core/count_rows.sql")
    with pytest.raises(ValueError, match="identifiers"):
        compose_sql("core/count_rows.sql", table="t", column="c")


# --- batches sent as JSON column lists ------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "columns"),
    [
        ("git/insert_commits.sql", "history:_Batch.COMMIT_COLUMNS"),
        ("git/insert_files.sql", "history:_Batch.FILE_COLUMNS"),
        ("git/insert_fix_changes.sql", "szz:CHANGE_COLUMNS"),
        ("git/insert_fix_inducing.sql", "szz:INDUCING_COLUMNS"),
    ],
)
def test_a_json_batch_query_reads_every_column_the_loader_writes(name: str, columns: str) -> None:
    """``from_json`` gives NULL for a key the document lacks: a column named one way in the
    loader and another in its query would be stored NULL without a word. Each query's keys
    (its ``from_json`` structure, and the ``unnest(b.KEY)`` it selects) are the loader's."""
    import importlib

    module, attribute = columns.split(":")
    value: object = importlib.import_module(f"agent_reflection.load.git.{module}")
    for part in attribute.split("."):
        value = getattr(value, part)
    assert isinstance(value, tuple)
    text = read_sql(name)
    structure = re.search(r"from_json\(\$batch, '(\{.*?\})'\)", text, re.DOTALL)
    assert structure is not None, name
    keys = re.findall(r'"(\w+)":', structure.group(1))
    assert keys == list(value)
    # one selected column a line: unnest(b.KEY) ... AS COLUMN
    pairs = re.findall(r"unnest\(b\.\"?(\w+)\"?\)[^\n]*\bAS\s+\"?(\w+)\"?", text)
    assert [key for key, _ in pairs] == list(value)
    assert [column for _, column in pairs] == list(value)  # each stored BY NAME as itself
