"""The command groups import one module per command: the map is complete and a load path lean."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click

from agent_reflection.cli import cli
from agent_reflection.cli._groups import COMMAND_MODULES, LazyGroup, register_all_commands
from agent_reflection.cli._reference import walk
from agent_reflection.load.runs import load_runs
from agent_reflection.store.db import connect
from conftest import run_reflect


def _defined_in(command: click.Command) -> str:
    module = command.callback.__module__ if command.callback else ""
    return module.rpartition(".")[2]


def test_every_command_of_a_lazy_group_is_mapped_to_its_module() -> None:
    register_all_commands()
    found: dict[str, dict[str, str]] = {}
    for path, command in walk(cli, ("reflect",)):
        if isinstance(command, LazyGroup):
            assert command.path == " ".join(path)
            found[command.path] = {
                name: _defined_in(sub) for name, sub in sorted(command.commands.items())
            }
    assert set(found) == set(COMMAND_MODULES)
    for group, commands in found.items():
        # the groups made in _groups.py are there from the start: nothing to import
        defined = {name: module for name, module in commands.items() if module != "_groups"}
        assert defined == dict(COMMAND_MODULES[group]), group


_IMPORTED = """
import sys
from agent_reflection.cli import main
try:
    main({argv!r})
except SystemExit as exit:
    assert not exit.code, exit.code
cli = sorted(m for m in sys.modules if m.startswith("agent_reflection.cli."))
print("CLI=" + ",".join(cli))
deferred = ("pyarrow", "numpy", "pandas", "tqdm", "agent_reflection.load.sidecars.loader")
print("HEAVY=" + ",".join(m for m in deferred if m in sys.modules))
sim = sorted(m for m in sys.modules if m.startswith("agent_reflection.simulate."))
print("SIM=" + ",".join(sim))
"""


def _imports(argv: list[str], cwd: Path) -> dict[str, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", _IMPORTED.format(argv=argv)],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    return {key: [m for m in value.split(",") if m] for key, value in lines.items()}


def test_a_git_load_imports_only_its_own_command_and_no_arrow(
    git_repo: Path, tmp_path: Path
) -> None:
    """No other command's module, no pyarrow / numpy / pandas, no tqdm without a terminal, and
    no sidecar loader for a repository without reflection notes."""
    seen = _imports(["load", "git", str(git_repo), "--db", str(tmp_path / "a.duckdb")], tmp_path)
    commands = [m for m in seen["CLI"] if not m.rpartition(".")[2].startswith("_")]
    assert commands == ["agent_reflection.cli.load_git"]
    assert seen["HEAVY"] == []


def test_status_of_a_loaded_database_imports_no_pandas(git_repo: Path, tmp_path: Path) -> None:
    """``reflect status`` reads counts and the registration: pandas (0.4 s of a 0.7 s call,
    imported by DuckDB's parameter binding and by P1's analysis module) is not needed."""
    db = str(tmp_path / "a.duckdb")
    assert run_reflect("load", "git", str(git_repo), "--db", db, cwd=tmp_path).returncode == 0
    seen = _imports(["status", "--db", db], tmp_path)
    assert "pandas" not in seen["HEAVY"]
    assert [m for m in seen["CLI"] if not m.rpartition(".")[2].startswith("_")] == [
        "agent_reflection.cli.status"
    ]


def test_a_cycle_pass_without_sources_imports_no_arrow(tmp_path: Path) -> None:
    """``reflect cycle run`` on a loaded database, with findings to store and print, imports no
    pyarrow / numpy / pandas: only loading a run log needs Arrow (0.1 to 0.2 s a process)."""
    log = tmp_path / "runs.jsonl"
    records = [
        {"kind": "task", "id": "nightly", "status": "active", "run_count": 3, "ai_prompt": "p"}
    ]
    for n in range(3):
        at = f"2025-06-01T0{n}:00:00Z"
        records.append(
            {"session_id": f"s{n}", "task_id": "nightly", "status": "failed", "finished_at": at}
        )
        records.append(
            {
                "kind": "step",
                "session_id": f"s{n}",
                "seq": 1,
                "action": "tool_call",
                "input": {"tool": "skill", "arguments": {"action": "read", "skill_name": "x"}},
            }
        )
    log.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    db = tmp_path / "runs.duckdb"
    with connect(db) as con:
        load_runs(con, log)
    argv = ["cycle", "run", "--db", str(db), "--now", "2025-06-01T12:00:00Z"]
    seen = _imports(argv, tmp_path)
    assert seen["HEAVY"] == []
    with connect(db, read_only=True) as con:
        rules = con.execute("SELECT rule FROM findings ORDER BY rule").fetchall()
    assert rules == [("consecutive_failures",), ("skill_failure_correlation",)]


def test_help_lists_every_group_without_importing_their_commands(tmp_path: Path) -> None:
    seen = _imports(["--help"], tmp_path)
    loaded = {m.rpartition(".")[2] for m in seen["CLI"]}
    assert set(COMMAND_MODULES["reflect"].values()) <= loaded
    assert not loaded & {"load_git", "run", "cycle", "hook"}
    # the demo's option defaults come from the simulate package itself, not its simulators
    assert seen["SIM"] == []


def test_a_git_load_process_ends_with_everything_written(git_repo: Path, tmp_path: Path) -> None:
    """``reflect load git`` as a process: its output arrives whole through a pipe, the database
    is closed (no write-ahead log left), and code run after :func:`main` still runs."""
    db = tmp_path / "end.duckdb"
    args = ["load", "git", str(git_repo), "--db", str(db)]
    env = {**os.environ, "CI": "1"}
    for name in ("REFLECT_DB", "PYTHONUNBUFFERED"):  # a pipe's output buffered, as usual
        env.pop(name, None)
    command = [sys.executable, "-m", "agent_reflection", *args]
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("git load 1 ") and done.stdout.endswith("\n")
    as_json = subprocess.run([*command, "--json"], capture_output=True, text=True, env=env)
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["loads"][0]["already_present"] == 0
    assert not db.with_name(db.name + ".wal").exists()
    with connect(db, read_only=True) as con:
        statuses = con.execute("SELECT status FROM loads ORDER BY load_id").fetchall()
    assert statuses == [("ok",)] * len(statuses) and len(statuses) == 2
    after = "from agent_reflection.cli import main; main({argv!r}); print('after main')"
    code = after.format(argv=[*args, "--silent"])
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0 and done.stdout == "after main\n", done.stderr


def test_reading_the_preregistration_does_not_import_the_board_loader() -> None:
    # every `reflect run` parses the pre-registration, which checks P3's channel names
    code = (
        "import sys\n"
        "from agent_reflection.experiments.registration import load_preregistration\n"
        "load_preregistration()\n"
        "print(sorted(m for m in ('pyarrow', 'agent_reflection.load.board.loader') "
        "if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"


def test_the_board_library_calls_are_where_docs_boards_md_says() -> None:
    import importlib
    import re

    text = (Path(__file__).resolve().parents[1] / "docs" / "boards.md").read_text()
    named = re.findall(r"`(agent_reflection\.load\.[\w.]+)\(", text)
    assert "agent_reflection.load.board.loader.load_board" in named
    for dotted in named:
        module, _, name = dotted.rpartition(".")
        assert callable(getattr(importlib.import_module(module), name)), dotted


_LOAD_IMPORTS = """
import sys
from agent_reflection.cli import main
main({argv!r})
print("OURS=" + ",".join(sorted(m for m in sys.modules if m.startswith("agent_reflection"))))
heavy = {heavy!r}
print("HEAVY=" + ",".join(m for m in heavy if m in sys.modules))
print("ENGINE=" + ",".join(m for m in ("_duckdb", "duckdb") if m in sys.modules))
"""

#: Every module of the package a one-commit ``reflect load git`` into a new file imports (the
#: fixed cost of issue 17: a module added here is paid by every git load).
GIT_LOAD_MODULES = {
    "agent_reflection",
    "agent_reflection.cli",
    "agent_reflection.cli._groups",
    "agent_reflection.cli._load_output",
    "agent_reflection.cli.load_git",
    "agent_reflection.config",  # store.db finds the workspace's database (os, collections)
    "agent_reflection.errors",
    "agent_reflection.load",
    "agent_reflection.load.git",
    "agent_reflection.load.git.agents",
    "agent_reflection.load.git.ai_notes",
    "agent_reflection.load.git.history",
    "agent_reflection.load.git.loader",
    "agent_reflection.load.git.log",
    "agent_reflection.load.git.notes",
    "agent_reflection.load.git.repo",
    "agent_reflection.load.git.signals",
    "agent_reflection.load.git.walk",
    "agent_reflection.load.sessions",
    "agent_reflection.names",  # store.db: a load's origin is a name's text (os only)
    "agent_reflection.progress",
    "agent_reflection.reflection",  # the reflections columns of the schema DDL:
    "agent_reflection.reflection.columns",  # store.db renders them from the declaration
    "agent_reflection.reflection.fields",
    "agent_reflection.store",
    "agent_reflection.store.db",
}
#: What a git load must not import: the analysis stack.
NOT_ON_A_GIT_LOAD = (
    "pandas",
    "pyarrow",
    "numpy",
    "scipy",
    "matplotlib",
    "sklearn",
    "jsonschema",
    "yaml",
    "tqdm",
)


def test_a_one_commit_git_load_imports_these_modules_only(git_repo: Path, tmp_path: Path) -> None:
    """A fresh interpreter: the package's modules a new-file git load imports are exactly
    :data:`GIT_LOAD_MODULES`, none of :data:`NOT_ON_A_GIT_LOAD`, and the ``duckdb`` package."""
    argv = ["load", "git", str(git_repo), "--db", str(tmp_path / "new.duckdb"), "--silent"]
    code = _LOAD_IMPORTS.format(argv=argv, heavy=NOT_ON_A_GIT_LOAD)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    seen = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    assert set(seen["OURS"].split(",")) == GIT_LOAD_MODULES
    assert seen["HEAVY"] == ""
    assert seen["ENGINE"] == "_duckdb,duckdb"


def test_connect_gives_a_plain_duckdb_connection_with_its_own_errors(tmp_path: Path) -> None:
    """What :func:`connect` returns is the ``duckdb`` package's connection: its errors are the
    package's classes, and it closes as a context manager."""
    import duckdb

    with connect(tmp_path / "plain.duckdb") as con:
        assert isinstance(con, duckdb.DuckDBPyConnection)
        try:
            con.execute("SELECT * FROM no_such_table")
        except duckdb.CatalogException as exc:
            assert "no_such_table" in str(exc)
        else:
            raise AssertionError("a missing table raised nothing")
    with duckdb.connect(str(tmp_path / "plain.duckdb"), read_only=True) as again:
        assert again.execute("SELECT count(*) FROM loads").fetchone() == (0,)
