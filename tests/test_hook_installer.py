"""Installers that don't break teammates (issue 13, item 9), run as a user runs them.

``reflect hook install`` / ``reflect agent install`` as real subprocesses against real files:
an unwritable settings file is one ``Error:`` line with the fix; a symlinked settings file stays
a link; backups never land in the project (nor in a sidecar's ``files_changed``); the committed
``settings.json`` holds no path of this machine and works in a teammate's clone.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agent_reflection.hooks.settings import (
    DEFAULT_SPECS,
    STOP_HOOK,
    command_words,
    installed_hooks,
)
from agent_reflection.in_loop.agent_install import AGENT_FILE, shipped_definition
from conftest import run_git
from hook_harness import hook_env, load, payload, sidecars

VENV_BIN = Path(sys.executable).parent


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def reflect(
    *args: str, home: Path, cwd: Path, path_has_venv: bool = True, **env: str
) -> subprocess.CompletedProcess[str]:
    """The CLI in a subprocess, with a private HOME (and so a private backup folder)."""
    base = hook_env(home, XDG_STATE_HOME=str(home / ".local" / "state"))
    if path_has_venv:
        base["PATH"] = f"{VENV_BIN}{os.pathsep}{base['PATH']}"
    else:  # only git's folder: nothing of ours can be found on PATH
        git_dir = Path(shutil.which("git") or "/usr/bin/git").parent
        if (git_dir / STOP_HOOK.script).exists():
            pytest.skip(f"{STOP_HOOK.script} is installed system-wide in {git_dir}")
        base["PATH"] = str(git_dir)
    base.update(env)
    return subprocess.run(
        [sys.executable, "-m", "agent_reflection", *args],
        cwd=cwd,
        env=base,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    """A failure as the issue asks for it: exit 1, one ``Error:`` line naming the fix."""
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), done.stderr
    assert "Fix:" in lines[0] or "fix" in lines[0], lines[0]
    return lines[0]


def commands_of(settings: Path) -> list[str]:
    return [h.command for h in installed_hooks(json.loads(settings.read_text()), DEFAULT_SPECS)]


# --- 9a: an unwritable settings file ------------------------------------------------------


def test_unwritable_settings_folder_is_one_error_line(home: Path, tmp_path: Path) -> None:
    """procfs refuses a new folder even to root: the write fails as an unwritable file does."""
    if not Path("/proc/self").is_dir():
        pytest.skip("no /proc on this system")
    done = reflect("hook", "install", "--project-dir", "/proc", home=home, cwd=tmp_path)
    line = one_line_error(done)
    assert "/proc/.claude/settings.json" in line and "--local or --user" in line


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file modes")
def test_read_only_settings_file_is_one_error_line(home: Path, git_repo: Path) -> None:
    settings = git_repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{}\n")
    settings.chmod(0o444)
    settings.parent.chmod(0o555)
    try:
        done = reflect("hook", "install", "--project-dir", str(git_repo), home=home, cwd=git_repo)
        one_line_error(done)
        assert settings.read_text() == "{}\n"
    finally:
        settings.parent.chmod(0o755)


def test_unwritable_backup_folder_changes_nothing(home: Path, git_repo: Path) -> None:
    settings = git_repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"model": "opus"}\n')
    blocker = home / "a-file"
    blocker.write_text("x")
    done = reflect(
        "hook",
        "install",
        "--project-dir",
        str(git_repo),
        home=home,
        cwd=git_repo,
        XDG_STATE_HOME=str(blocker),
    )
    assert "XDG_STATE_HOME" in one_line_error(done)
    assert settings.read_text() == '{"model": "opus"}\n'


def test_agent_install_unwritable_is_one_error_line(home: Path, tmp_path: Path) -> None:
    if not Path("/proc/self").is_dir():
        pytest.skip("no /proc on this system")
    done = reflect("agent", "install", "--project-dir", "/proc", home=home, cwd=tmp_path)
    assert AGENT_FILE in one_line_error(done)


# --- 9b: a symlinked settings file (dotfiles) --------------------------------------------


@pytest.mark.parametrize("scope", ["--project", "--user"])
def test_symlinked_settings_is_edited_through_the_link(
    home: Path, git_repo: Path, tmp_path: Path, scope: str
) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "settings.json"
    real.write_text('{"model": "opus"}\n')
    if scope == "--user":
        config = home / ".claude"
        extra = {"CLAUDE_CONFIG_DIR": str(config)}
    else:
        config, extra = git_repo / ".claude", {}
    config.mkdir()
    link = config / "settings.json"
    link.symlink_to(real)
    done = reflect(
        "hook", "install", scope, "--project-dir", str(git_repo), home=home, cwd=git_repo, **extra
    )
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and link.resolve() == real.resolve()
    data = json.loads(real.read_text())
    assert data["model"] == "opus" and commands_of(real)
    assert (
        reflect(
            "hook",
            "uninstall",
            scope,
            "--project-dir",
            str(git_repo),
            home=home,
            cwd=git_repo,
            **extra,
        ).returncode
        == 0
    )
    assert link.is_symlink() and json.loads(real.read_text()) == {"model": "opus"}


def test_symlinked_agent_file_is_edited_through_the_link(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    agents = project / ".claude" / "agents"
    agents.mkdir(parents=True)
    real = tmp_path / "dotfiles" / AGENT_FILE
    real.parent.mkdir()
    real.write_text("old\n")
    (agents / AGENT_FILE).symlink_to(real)
    done = reflect(
        "agent", "install", "--project-dir", str(project), "--force", home=home, cwd=project
    )
    assert done.returncode == 0, done.stderr
    assert (agents / AGENT_FILE).is_symlink()
    assert real.read_text() == shipped_definition()


# --- 9c: backups stay out of the project and out of files_changed --------------------------


def test_backups_stay_out_of_the_project_and_the_sidecar(home: Path, git_repo: Path) -> None:
    settings = git_repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"model": "opus"}\n')
    run_git(git_repo, "add", ".claude/settings.json")
    run_git(git_repo, "commit", "-qm", "settings")
    for verb in ("install", "uninstall", "install", "uninstall", "install"):
        done = reflect("hook", verb, "--project-dir", str(git_repo), home=home, cwd=git_repo)
        assert done.returncode == 0, done.stderr
        assert "backup of the previous file (outside the project)" in done.stdout
    assert sorted(p.name for p in settings.parent.iterdir()) == ["settings.json"]
    backups = home / ".local" / "state" / "agent-reflection" / "settings-backups"
    assert len(list(backups.iterdir())) == 5
    # A backup an older installer left inside .claude/ is not the session's work either.
    (settings.parent / "settings.json.bak-20260101T000000Z").write_text("{}\n")
    env = hook_env(home, REFLECTION_MODE="solo")
    subprocess.run(
        [sys.executable, "-m", "agent_reflection.hooks.stop"],
        input=json.dumps(payload(git_repo)).encode(),
        env=env,
        cwd=git_repo,
        capture_output=True,
        timeout=60,
        check=True,
    )
    [sidecar] = sidecars(git_repo / ".reflection" / "sidecars")
    # the install's own files to commit (settings, the self-report block, the workspace
    # marker) are changes in the work tree; the backups are not
    changed = load(sidecar)["files_changed"]
    assert changed == [".agent-reflection.toml", ".claude/settings.json", "CLAUDE.md"]


# --- 9d: the committed settings.json works in a teammate's clone ---------------------------


def test_project_settings_are_portable_to_a_teammates_clone(
    home: Path, git_repo: Path, tmp_path: Path
) -> None:
    """The venv lives outside the project (as /work/main/.venv does): no absolute path."""
    done = reflect("hook", "install", "--project-dir", str(git_repo), home=home, cwd=git_repo)
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stdout
    settings = git_repo / ".claude" / "settings.json"
    text = settings.read_text()
    assert str(VENV_BIN) not in text and sys.prefix not in text
    for command in commands_of(settings):
        assert not command_words(command)[0].startswith("/"), command
    run_git(git_repo, "add", ".claude/settings.json")
    run_git(git_repo, "commit", "-qm", "hooks")
    clone = tmp_path / "teammate" / "app"
    subprocess.run(["git", "clone", "-q", str(git_repo), str(clone)], check=True, timeout=60)
    [stop] = [
        c
        for c in commands_of(clone / ".claude" / "settings.json")
        if command_words(c)[0] == "reflect-stop-hook"
    ]
    teammate = tmp_path / "teammate-home"
    teammate.mkdir()
    env = hook_env(teammate, CLAUDE_PROJECT_DIR=str(clone))
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env['PATH']}"  # the teammate installed the package
    ran = subprocess.run(
        ["/bin/sh", "-c", stop],
        input=json.dumps(payload(clone)).encode(),
        env=env,
        cwd=clone,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert (ran.returncode, ran.stdout) == (0, b""), ran.stderr
    assert len(sidecars(clone / ".reflection" / "sidecars")) == 1


def test_project_install_warns_when_the_command_is_not_on_path(home: Path, git_repo: Path) -> None:
    done = reflect(
        "hook",
        "install",
        "--project-dir",
        str(git_repo),
        home=home,
        cwd=git_repo,
        path_has_venv=False,
    )
    assert done.returncode == 0, done.stderr
    assert "reflect-stop-hook is not on PATH here" in done.stdout and "--local" in done.stdout
    assert str(VENV_BIN) not in (git_repo / ".claude" / "settings.json").read_text()


def test_local_writes_settings_local_json_with_absolute_paths(home: Path, git_repo: Path) -> None:
    done = reflect(
        "hook", "install", "--local", "--project-dir", str(git_repo), home=home, cwd=git_repo
    )
    assert done.returncode == 0, done.stderr
    assert not (git_repo / ".claude" / "settings.json").exists()
    local = git_repo / ".claude" / "settings.local.json"
    [stop] = installed_hooks(json.loads(local.read_text()), (STOP_HOOK,))
    assert command_words(stop.command)[0].startswith("/") and stop.command.endswith("--mode solo")
    # this machine's files are kept out of commits: nothing new for `git status`
    assert "/.claude/settings.local.json" in done.stdout and "info/exclude" in done.stdout
    assert run_git(git_repo, "status", "--porcelain") == ""
    again = reflect(
        "hook", "install", "--local", "--project-dir", str(git_repo), home=home, cwd=git_repo
    )
    assert "Kept generated files out of commits" not in again.stdout  # nothing left to add
    status = reflect(
        "hook", "status", "--local", "--project-dir", str(git_repo), home=home, cwd=git_repo
    )
    assert "Stop ->" in status.stdout and "warning" not in status.stdout


def test_an_exclude_file_with_a_latin_1_pattern_is_kept_byte_for_byte(
    home: Path, git_repo: Path
) -> None:
    """git reads ``info/exclude`` as bytes: a pattern naming a Latin-1 file stays as it was
    and ours are appended (reading it as UTF-8 stopped the install half done)."""
    exclude = git_repo / ".git" / "info" / "exclude"
    exclude.parent.mkdir(exist_ok=True)
    exclude.write_bytes(b"# old tool\ncaf\xe9.log\n")
    done = reflect(
        "hook", "install", "--local", "--project-dir", str(git_repo), home=home, cwd=git_repo
    )
    assert done.returncode == 0, done.stderr
    data = exclude.read_bytes()
    assert data.startswith(b"# old tool\ncaf\xe9.log\n")
    assert b"/.claude/settings.local.json\n" in data
