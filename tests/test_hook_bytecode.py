"""``reflect hook install`` writes the package's bytecode, so a hook call never compiles our
modules first (as Python does on every import where PYTHONDONTWRITEBYTECODE is set and an
editable install wrote no bytecode). Checked with ``python -v``, which says where each module's
code object came from, on a copy of the package with no bytecode at all."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from agent_reflection.hooks.bytecode import PACKAGE_DIR, compile_package
from conftest import run_git, run_reflect
from hook_harness import hook_env, run_hook

#: The console script's own code: what `reflect-in-loop-hook` runs.
IN_LOOP_SCRIPT = "import sys; from agent_reflection.hooks.in_loop import main; sys.exit(main())"


def compiled_from_source(stderr: str, folder: Path) -> list[str]:
    """The modules under ``folder`` that ``python -v`` says were compiled from their source
    (``# code object from /path/mod.py``)."""
    prefix = f"# code object from {folder}/"
    return [line for line in stderr.splitlines() if line.startswith(prefix)]


def read_from_bytecode(stderr: str, folder: Path) -> list[str]:
    """The modules under ``folder`` that ``python -v`` says were read from their bytecode
    (``# code object from '/path/__pycache__/mod.cpython-311.pyc'``, quoted)."""
    prefix = f"# code object from '{folder}/"
    return [line for line in stderr.splitlines() if line.startswith(prefix)]


def package_copy(tmp_path: Path) -> Path:
    """A copy of the package with no bytecode; its parent goes on PYTHONPATH."""
    src = tmp_path / "src"
    shutil.copytree(PACKAGE_DIR, src / "agent_reflection", ignore=shutil.ignore_patterns("*.pyc"))
    assert not list(src.rglob("*.pyc"))
    return src


def git_project(tmp_path: Path) -> tuple[Path, Path]:
    """(a private HOME, a new git repository) to install the hooks into."""
    home, repo = tmp_path / "home", tmp_path / "repo"
    home.mkdir()
    repo.mkdir()
    run_git(repo, "init", "-q")
    return home, repo


def test_compile_package_writes_what_python_then_reads_with_the_variable_set(
    tmp_path: Path,
) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "mod.py").write_text("VALUE = 1\n")
    env = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(tmp_path)}

    def import_it() -> str:
        done = subprocess.run(
            [sys.executable, "-v", "-c", "import pkg.sub.mod"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stderr

    assert len(compiled_from_source(import_it(), package)) == 3
    assert not list(package.rglob("*.pyc"))  # the variable kept Python from writing any
    assert compile_package(package)
    stderr = import_it()
    assert compiled_from_source(stderr, package) == []
    assert len(read_from_bytecode(stderr, package)) == 3


def test_a_module_that_cannot_be_compiled_is_a_note_and_the_install_goes_on(
    tmp_path: Path,
) -> None:
    src = package_copy(tmp_path)
    (src / "agent_reflection" / "_broken.py").write_text("def (:\n")
    assert not compile_package(src / "agent_reflection")
    home, repo = git_project(tmp_path)
    env = hook_env(home, PYTHONPATH=str(src), XDG_STATE_HOME=str(home / ".state"))
    done = run_reflect("hook", "install", "--project-dir", str(repo), cwd=repo, env=env)
    assert done.returncode == 0, done.stderr
    assert (repo / ".claude" / "settings.json").is_file()
    package = src / "agent_reflection"
    assert f"could not write all of the bytecode of {package} (a module did not" in done.stderr
    assert f"{sys.executable} -m compileall -q {src / 'agent_reflection'}" in done.stderr
    assert (src / "agent_reflection" / "hooks" / "__pycache__").is_dir()  # the rest was written


def test_hook_install_compiles_what_the_in_loop_hook_imports(tmp_path: Path) -> None:
    src = package_copy(tmp_path)
    home, repo = git_project(tmp_path)
    env = hook_env(
        home,
        PYTHONPATH=str(src),
        PYTHONDONTWRITEBYTECODE="1",
        REFLECTION_STATE_DIR=str(tmp_path / "state"),
        XDG_STATE_HOME=str(home / ".state"),
    )
    event = {
        "session_id": "s1",
        "cwd": str(repo),
        "hook_event_name": "PostToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": "a.py"},
        "tool_use_id": "toolu_1",
    }

    def hook_call() -> str:
        done = run_hook(event, env, repo, command=[sys.executable, "-v", "-c", IN_LOOP_SCRIPT])
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stderr

    package = src / "agent_reflection"
    assert compiled_from_source(hook_call(), package)  # what every call paid
    installed = run_reflect("hook", "install", "--project-dir", str(repo), cwd=repo, env=env)
    assert installed.returncode == 0, installed.stderr
    assert "could not write" not in installed.stderr
    stderr = hook_call()
    assert compiled_from_source(stderr, package) == []
    assert any("hooks/__pycache__/in_loop." in line for line in read_from_bytecode(stderr, package))


def test_the_demo_writes_the_bytecode_first(tmp_path: Path) -> None:
    src = package_copy(tmp_path)
    env = hook_env(tmp_path, PYTHONPATH=str(src), PYTHONDONTWRITEBYTECODE="1")
    done = run_reflect("demo", "--session-only", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    modules = {p.stem for p in (src / "agent_reflection" / "hooks").glob("*.py")}
    written = {
        p.name.split(".")[0] for p in (src / "agent_reflection" / "hooks").glob("__pycache__/*.pyc")
    }
    assert modules and written == modules
