"""One workspace, found from anywhere (issue 33, item 2), and notebooks that run as Lab runs them.

The workspace is found as git finds its repository: ``.agent-reflection.toml`` (or a
``pyproject.toml`` with ``[tool.agent-reflection]``) searched upward from the current folder,
``$REFLECT_WORKSPACE`` overriding it. ``reflect`` commands from any subfolder and a notebook
whose kernel runs in ``notebooks/`` use the same database and write reports to the same place;
a missing database says where it looked.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agent_reflection import config
from agent_reflection.experiments import notebook as nb
from agent_reflection.store.db import MissingDatabase, connect, require_database, resolve_db_path
from conftest import run_reflect
from sidecar_samples import sidecar as valid_sidecar

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _no_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("REFLECT_WORKSPACE", "REFLECT_DB", "REFLECT_REPORTS"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "notebooks").mkdir(parents=True)
    (root / "src" / "deep").mkdir(parents=True)
    (root / config.PROJECT_FILE).write_text(
        'db = ".reflection/reflection.duckdb"\nreports = ".reflection/reports"\n'
    )
    return root


def test_found_from_a_subfolder_as_git_finds_its_repository(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(workspace / "src" / "deep")
    found = config.find_workspace()
    assert found.root == str(workspace) and found.marker == str(workspace / config.PROJECT_FILE)
    assert resolve_db_path() == workspace / ".reflection" / "reflection.duckdb"
    assert found.path(config.REPORTS) == (str(workspace / ".reflection" / "reports"), found.marker)


def test_a_pyproject_table_marks_a_workspace_and_the_defaults_apply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.agent-reflection]\nreflection_cadence = 5\n")
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")
    assert resolve_db_path() == tmp_path / "data" / "reflection.duckdb"
    (tmp_path / "pyproject.toml").write_text("[tool.black]\nline-length = 99\n")
    assert config.find_workspace().marker is None  # another tool's pyproject is no marker


def test_the_variable_overrides_and_command_line_and_env_paths_are_from_the_cwd(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.chdir(workspace / "src")
    monkeypatch.setenv("REFLECT_WORKSPACE", str(other))
    assert resolve_db_path() == other / "data" / "reflection.duckdb"
    monkeypatch.setenv("REFLECT_DB", "mine.duckdb")
    assert resolve_db_path() == workspace / "src" / "mine.duckdb"
    assert resolve_db_path("x.duckdb") == Path("x.duckdb")
    monkeypatch.setenv("REFLECT_WORKSPACE", str(tmp_path / "nowhere"))
    with pytest.raises(config.InvalidSetting, match=r"REFLECT_WORKSPACE: .* is not a folder"):
        config.find_workspace()


def test_commands_from_any_folder_use_the_same_database(workspace: Path, tmp_path: Path) -> None:
    sidecar = tmp_path / "one.reflection.json"
    sidecar.write_text(json.dumps(valid_sidecar()))
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFLECT_")}

    def load(cwd: Path) -> dict[str, object]:
        done = run_reflect("load", "sidecars", str(sidecar), "--json", cwd=cwd, env=env)
        assert done.returncode == 0, done.stderr
        doc: dict[str, object] = json.loads(done.stdout)
        return doc

    first = load(workspace / "src" / "deep")
    again = load(workspace / "notebooks")
    db = str(workspace / ".reflection" / "reflection.duckdb")
    assert first["db"] == again["db"] == db
    assert (first["loaded"], again["already_present"]) == (1, 1)


def test_a_missing_database_says_where_it_looked(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a workspace without a database yet: load data first
    monkeypatch.chdir(workspace / "notebooks")
    with pytest.raises(MissingDatabase) as exc:
        nb.open_db("")
    assert "load data first" in str(exc.value).lower()
    assert str(workspace / ".reflection" / "reflection.duckdb") in str(exc.value)
    # no workspace anywhere above: where it looked, and how to point at one; no "load data"
    lost = tmp_path / "lost"
    lost.mkdir()
    monkeypatch.chdir(lost)
    with pytest.raises(MissingDatabase) as exc:
        nb.open_db("")
    message = str(exc.value)
    assert f"no {config.PROJECT_FILE} in {lost} or any folder above" in message
    assert "REFLECT_WORKSPACE" in message and "load data" not in message.lower()
    # a path given that is wrong: that path, and no "load data"
    with pytest.raises(MissingDatabase) as exc:
        require_database("data/reflection.duckdb", given_as="the notebook's db_path")
    assert str(lost / "data" / "reflection.duckdb") in str(exc.value)
    assert "given as the notebook's db_path" in str(exc.value)
    assert "load data" not in str(exc.value).lower()


def test_reflect_run_without_a_database_names_the_workspace(workspace: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFLECT_")}
    done = subprocess.run(
        [sys.executable, "-m", "agent_reflection", "run", "p1"],
        cwd=workspace / "src",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert f"workspace {workspace}" in done.stderr and "Traceback" not in done.stderr


# --- the notebook as JupyterLab runs it -----------------------------------------------------------


@pytest.mark.slow
def test_the_p1_notebook_runs_with_its_defaults_from_notebooks(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opened by double-click in Lab, a notebook's kernel starts in ``notebooks/`` and runs
    with the parameter cell's defaults: it must find the workspace's database and write its
    outputs to the workspace's reports folder, not to ``notebooks/reports``."""
    papermill = pytest.importorskip("papermill")
    import jupytext
    import nbformat

    from agent_reflection.execute.kernel import ensure_kernel

    with connect(workspace / ".reflection" / "reflection.duckdb") as con:
        con.execute("SELECT 1")
    shutil.copy(ROOT / "preregistration.toml", workspace / "preregistration.toml")
    shutil.copy(ROOT / "preregistration.lock", workspace / "preregistration.lock")
    source = jupytext.read(ROOT / "notebooks" / "p1_calibration.py")
    kernel = ensure_kernel()
    source.metadata["kernelspec"] = {"name": kernel, "display_name": kernel, "language": "python"}
    opened = workspace / "notebooks" / "p1_calibration.ipynb"
    nbformat.write(source, opened)  # type: ignore[no-untyped-call]
    monkeypatch.chdir(workspace / "src")  # the server's folder is not the kernel's
    papermill.execute_notebook(
        str(opened),
        str(workspace / "notebooks" / "p1_calibration.out.ipynb"),
        kernel_name=kernel,
        cwd=str(workspace / "notebooks"),
        progress_bar=False,
    )
    results = workspace / ".reflection" / "reports" / "adhoc" / "p1" / "results.json"
    assert json.loads(results.read_text())["experiment"] == "p1"
    assert not (workspace / "notebooks" / "reports").exists()
