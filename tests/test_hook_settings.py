"""Registering the hooks in Claude Code settings: pure merge/unmerge, the file edge, the CLI,
and the installed command actually running the hook through a shell as Claude Code does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from agent_reflection.cli._groups import cli, register_all_commands
from agent_reflection.hooks.settings import (
    DEFAULT_SPECS,
    STDIN_GUARD,
    STOP_HOOK,
    HookSpec,
    InvalidSettingsFile,
    PlannedHook,
    command_words,
    hook_command,
    install,
    install_hooks,
    installed_hooks,
    is_ours,
    read_settings,
    uninstall,
    uninstall_hooks,
)
from hook_harness import hook_env, payload, sidecars


@pytest.fixture(autouse=True)
def _backups_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Settings backups go to $XDG_STATE_HOME: keep them in this test's folder."""
    state = tmp_path / "xdg-state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    return state / "agent-reflection" / "settings-backups"


VENV_BIN = str(Path(sys.executable).parent)
OURS = PlannedHook(STOP_HOOK, "'/opt/venv/bin/reflect-stop-hook' --mode solo")
THEIRS_STOP = {"type": "command", "command": "notify-send done", "timeout": 5}
THEIRS_PRE = {"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]}


def existing() -> dict[str, Any]:
    return {
        "model": "opus",
        "env": {"FOO": "1"},
        "hooks": {"Stop": [{"hooks": [THEIRS_STOP]}], "PreToolUse": [THEIRS_PRE]},
    }


def test_install_merges_with_existing_hooks() -> None:
    merged = install_hooks(existing(), [OURS])
    assert merged["model"] == "opus" and merged["env"] == {"FOO": "1"}
    assert merged["hooks"]["PreToolUse"] == [THEIRS_PRE]
    assert merged["hooks"]["Stop"] == [
        {"hooks": [THEIRS_STOP]},
        {"hooks": [{"type": "command", "command": OURS.command, "timeout": 20}]},
    ]
    assert "matcher" not in merged["hooks"]["Stop"][1]  # Stop ignores matchers: none written


def test_install_is_idempotent_and_pure() -> None:
    before = existing()
    once = install_hooks(before, [OURS])
    assert install_hooks(once, [OURS]) == once
    assert before == existing(), "the input is not mutated"


def test_reinstall_replaces_our_old_entry_wherever_it_is() -> None:
    old = {"type": "command", "command": "/old/venv/bin/reflect-stop-hook", "timeout": 20000}
    settings = {"hooks": {"Stop": [{"hooks": [THEIRS_STOP, old]}, {"hooks": [old]}]}}
    merged = install_hooks(settings, [OURS])
    assert merged["hooks"]["Stop"] == [
        {"hooks": [THEIRS_STOP]},
        {"hooks": [OURS.handler()]},
    ]


def test_uninstall_removes_only_ours() -> None:
    merged = install_hooks(existing(), [OURS])
    assert uninstall_hooks(merged, DEFAULT_SPECS) == existing()
    fresh = install_hooks({}, [OURS])
    assert uninstall_hooks(fresh, DEFAULT_SPECS) == {}
    assert uninstall_hooks({"hooks": {}}, DEFAULT_SPECS) == {"hooks": {}}  # not ours to drop


def test_table_of_specs_extends_to_more_events() -> None:
    cadence = HookSpec("PostToolUse", "reflect-cadence-hook", "x.cadence", 10, "Edit|Write")
    merged = install_hooks(existing(), [OURS, PlannedHook(cadence, "reflect-cadence-hook")])
    assert merged["hooks"]["PostToolUse"] == [
        {
            "matcher": "Edit|Write",
            "hooks": [{"type": "command", "command": "reflect-cadence-hook", "timeout": 10}],
        }
    ]
    assert [h.event for h in installed_hooks(merged, [STOP_HOOK, cadence])] == [
        "Stop",
        "PostToolUse",
    ]
    assert uninstall_hooks(merged, [STOP_HOOK, cadence]) == existing()


@pytest.mark.parametrize(
    ("command", "ours"),
    [
        ('"$CLAUDE_PROJECT_DIR"/.venv/bin/reflect-stop-hook', True),
        ("'/path with space/bin/reflect-stop-hook' --mode solo", True),
        ("/usr/bin/python3 -m agent_reflection.hooks.stop", True),
        ("REFLECTION_MODE=solo reflect-stop-hook", True),
        ("/bin/my-reflect-stop-hook-wrapper", False),
        ("echo reflect-stop-hook-is-great", False),
        ("python -m agent_reflection.hooks.stopper", False),
        ("unbalanced 'quote reflect-stop-hook", True),
    ],
)
def test_is_ours(command: str, ours: bool) -> None:
    assert is_ours({"type": "command", "command": command}, STOP_HOOK) is ours


def test_is_ours_ignores_other_handler_types() -> None:
    assert not is_ours({"type": "prompt", "prompt": "reflect-stop-hook"}, STOP_HOOK)
    assert not is_ours("reflect-stop-hook", STOP_HOOK)


def test_bad_shapes_are_refused_clearly() -> None:
    with pytest.raises(InvalidSettingsFile, match="`hooks` must be an object"):
        install_hooks({"hooks": []}, [OURS])
    with pytest.raises(InvalidSettingsFile, match=r"hooks\.Stop"):
        install_hooks({"hooks": {"Stop": {}}}, [OURS])


# --- commands ------------------------------------------------------------------------------


def fake_venv(root: Path) -> Path:
    """A venv-like bin folder holding a link to the real console script."""
    bin_dir = root / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    real = Path(sys.executable).with_name("reflect-stop-hook")
    if not real.exists():
        pytest.skip("the reflect-stop-hook console script is not installed")
    (bin_dir / "reflect-stop-hook").symlink_to(real)
    return bin_dir


def test_command_is_project_relative_when_the_venv_is_in_the_project(tmp_path: Path) -> None:
    bin_dir = fake_venv(tmp_path / "my project")
    command = hook_command(STOP_HOOK, project_dir=tmp_path / "my project", bin_dir=bin_dir)
    assert command == STDIN_GUARD + '"$CLAUDE_PROJECT_DIR"/.venv/bin/reflect-stop-hook'


def test_command_is_absolute_and_quoted_otherwise(tmp_path: Path) -> None:
    bin_dir = fake_venv(tmp_path / "tools dir")
    command = hook_command(
        STOP_HOOK, project_dir=tmp_path / "proj", bin_dir=bin_dir, args=("--mode", "solo")
    )
    assert command == f"{STDIN_GUARD}'{bin_dir}/reflect-stop-hook' --mode solo"
    assert command_words(hook_command(STOP_HOOK, project_dir=None, bin_dir=bin_dir))[0][0] == "/"


def test_portable_command_is_the_bare_name_when_the_venv_is_elsewhere(tmp_path: Path) -> None:
    """The committable settings.json never holds this machine's venv path."""
    bin_dir = fake_venv(tmp_path / "tools dir")
    project = tmp_path / "proj"
    for where in (bin_dir, tmp_path / "no-script-here"):
        command = hook_command(
            STOP_HOOK, project_dir=project, bin_dir=where, args=("--mode", "solo"), portable=True
        )
        assert command == STDIN_GUARD + "reflect-stop-hook --mode solo"
    inside = fake_venv(project)
    command = hook_command(STOP_HOOK, project_dir=project, bin_dir=inside, portable=True)
    assert command == STDIN_GUARD + '"$CLAUDE_PROJECT_DIR"/.venv/bin/reflect-stop-hook'


def test_command_falls_back_to_python_dash_m(tmp_path: Path) -> None:
    command = hook_command(STOP_HOOK, project_dir=None, bin_dir=tmp_path, python="/py thon")
    assert command == STDIN_GUARD + "'/py thon' -m agent_reflection.hooks.stop"


@pytest.mark.parametrize("where", ["in-project", "elsewhere", "python-m"])
def test_installed_command_runs_the_hook_through_a_shell(
    git_repo: Path, tmp_path: Path, where: str
) -> None:
    """What Claude Code does: `sh -c <command>` with CLAUDE_PROJECT_DIR set and JSON on stdin."""
    if where == "in-project":
        command = hook_command(
            STOP_HOOK, project_dir=git_repo, bin_dir=fake_venv(git_repo), args=("--mode", "solo")
        )
    elif where == "elsewhere":
        command = hook_command(
            STOP_HOOK,
            project_dir=git_repo,
            bin_dir=fake_venv(tmp_path / "x y"),
            args=("--mode", "solo"),
        )
    else:
        command = hook_command(
            STOP_HOOK, project_dir=git_repo, bin_dir=tmp_path, args=("--mode", "solo")
        )
    home = tmp_path / "home"
    home.mkdir()
    env = hook_env(home, CLAUDE_PROJECT_DIR=str(git_repo))

    def through_the_shell(**stdin: Any) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            ["/bin/sh", "-c", command],
            env=env,
            cwd=git_repo,
            capture_output=True,
            timeout=60,
            check=False,
            **stdin,
        )

    done = through_the_shell(input=json.dumps(payload(git_repo)).encode())
    assert (done.returncode, done.stdout) == (0, b""), done.stderr
    assert len(sidecars(git_repo / ".reflection" / "sidecars")) == 1
    # stdin a directory: CPython would refuse to start (exit 1); the command's guard gives it
    # an empty stdin, so the hook runs, finds no event and exits 0
    folder = os.open(tmp_path, os.O_RDONLY)
    try:
        odd = through_the_shell(stdin=folder)
    finally:
        os.close(folder)
    assert (odd.returncode, odd.stdout) == (0, b""), odd.stderr
    assert b"is a directory" not in odd.stderr


# --- the file edge -------------------------------------------------------------------------


def test_install_file_backup_and_idempotence(tmp_path: Path, _backups_in_tmp: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(existing()))
    first = install(path, [OURS])
    assert first.changed and first.backup is not None
    assert first.backup.parent == _backups_in_tmp  # outside the project
    assert json.loads(first.backup.read_text()) == existing()
    assert [h.command for h in first.after] == [OURS.command]
    second = install(path, [OURS])
    assert not second.changed and second.backup is None
    assert len(list(_backups_in_tmp.iterdir())) == 1
    removed = uninstall(path)
    assert removed.changed and read_settings(path) == existing()
    assert sorted(p.name for p in path.parent.iterdir()) == ["settings.json"]


def test_install_creates_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "new" / ".claude" / "settings.json"
    change = install(path, [OURS])
    assert change.changed and change.backup is None
    assert read_settings(path) == {"hooks": {"Stop": [{"hooks": [OURS.handler()]}]}}
    assert not list(path.parent.glob(".*tmp"))


def test_invalid_json_is_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{"hooks": {,}}')
    with pytest.raises(InvalidSettingsFile, match=r"line 1 column 12.*nothing was changed"):
        install(path, [OURS])
    assert path.read_text() == '{"hooks": {,}}'


def test_uninstall_without_a_file(tmp_path: Path) -> None:
    change = uninstall(tmp_path / "settings.json")
    assert not change.changed and not (tmp_path / "settings.json").exists()


# --- the CLI -------------------------------------------------------------------------------


def invoke(*args: str, env: dict[str, str] | None = None) -> Any:
    register_all_commands()
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def test_cli_install_status_uninstall_project(git_repo: Path) -> None:
    settings = git_repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(existing()))
    on_path = {"PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}"}  # an activated venv
    result = invoke("hook", "install", "--project-dir", str(git_repo), env=on_path)
    assert result.exit_code == 0, result.output
    assert "/hooks" in result.output and "restart" in result.output
    assert "warning" not in result.output
    [ours] = installed_hooks(read_settings(settings), (STOP_HOOK,))
    assert ours.timeout == 20 and ours.command == STDIN_GUARD + "reflect-stop-hook --mode solo"
    again = invoke("hook", "install", "--project-dir", str(git_repo))
    assert "nothing changed" in again.output
    status = invoke("hook", "status", "--project-dir", str(git_repo), env=on_path)
    assert "Stop ->" in status.output and "warning" not in status.output
    result = invoke("hook", "uninstall", "--project-dir", str(git_repo))
    assert result.exit_code == 0 and read_settings(settings) == existing()
    assert "not installed" in invoke("hook", "status", "--project-dir", str(git_repo)).output


def test_cli_user_scope_is_env_gated(tmp_path: Path) -> None:
    config = tmp_path / "claude-config"
    result = invoke(
        "hook", "install", "--user", "--timeout", "30", env={"CLAUDE_CONFIG_DIR": str(config)}
    )
    assert result.exit_code == 0, result.output
    assert "REFLECTION_MODE" in result.output
    [ours] = installed_hooks(read_settings(config / "settings.json"), (STOP_HOOK,))
    assert ours.timeout == 30 and "--mode" not in ours.command
    assert os.path.isabs(command_words(ours.command)[0]) or "-m" in ours.command


def test_cli_invalid_settings_is_a_clean_error(git_repo: Path) -> None:
    (git_repo / ".claude").mkdir()
    (git_repo / ".claude" / "settings.json").write_text("[1,")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent_reflection",
            "hook",
            "install",
            "--project-dir",
            str(git_repo),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "not valid JSON" in done.stderr and "Traceback" not in done.stderr


# --- property: install then uninstall gives back any user's settings ------------------------

JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)
HANDLERS = st.fixed_dictionaries(
    {"type": st.sampled_from(["command", "prompt"]), "command": st.text(max_size=20)},
    optional={"timeout": st.integers(1, 600)},
).filter(lambda h: not is_ours(h, STOP_HOOK))
GROUPS = st.fixed_dictionaries(
    {"hooks": st.lists(HANDLERS, max_size=3)}, optional={"matcher": st.text(max_size=8)}
)
SETTINGS = st.fixed_dictionaries(
    {},
    optional={
        "hooks": st.dictionaries(
            st.sampled_from(["Stop", "PreToolUse", "SubagentStop", "Notification"]),
            st.lists(GROUPS, min_size=1, max_size=3),
            min_size=1,
            max_size=3,
        ),
        "env": st.dictionaries(st.text(max_size=6), st.text(max_size=6), max_size=2),
        "other": JSONISH,
    },
)


@given(SETTINGS)
def test_property_install_uninstall_round_trip(settings: dict[str, Any]) -> None:
    installed = install_hooks(settings, [OURS])
    assert install_hooks(installed, [OURS]) == installed
    assert [h.command for h in installed_hooks(installed, DEFAULT_SPECS)] == [OURS.command]
    assert uninstall_hooks(installed, DEFAULT_SPECS) == settings


def test_cli_install_only_some_parts(git_repo: Path) -> None:
    settings = git_repo / ".claude" / "settings.json"
    result = invoke("hook", "install", "--project-dir", str(git_repo), "--only", "stop")
    assert result.exit_code == 0, result.output
    events = {h.event for h in installed_hooks(read_settings(settings), DEFAULT_SPECS)}
    assert events == {"Stop", "SessionStart"}  # the capture: the sidecar and its start record
    invoke("hook", "install", "--project-dir", str(git_repo), "--only", "cadence")
    events = {h.event for h in installed_hooks(read_settings(settings), DEFAULT_SPECS)}
    assert events == {
        "Stop",
        "SessionStart",
        "PostToolUse",
        "PostToolUseFailure",
        "UserPromptSubmit",
    }
    bad = invoke("hook", "install", "--project-dir", str(git_repo), "--only", "nope")
    assert bad.exit_code != 0
