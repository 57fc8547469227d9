"""``reflect cadence`` through the real CLI entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from agent_reflection.cli import cli
from agent_reflection.cli._groups import register_all_commands


@pytest.fixture
def runner() -> CliRunner:
    register_all_commands()
    return CliRunner()


def test_shows_config_value_and_source(tmp_path: Path, runner: CliRunner) -> None:
    (tmp_path / ".agent-reflection.toml").write_text("reflection_cadence = 4\n")
    out = runner.invoke(
        cli, ["cadence", "--project", str(tmp_path)], env={"REFLECTION_CADENCE": ""}
    )
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output.splitlines()[0])
    assert doc["reflection_cadence"] == 4
    assert doc["source"].endswith(".agent-reflection.toml")


def test_flag_overrides_and_preview_prints_prompt(tmp_path: Path, runner: CliRunner) -> None:
    (tmp_path / ".agent-reflection.toml").write_text("reflection_cadence = 4\n")
    out = runner.invoke(
        cli,
        [
            "cadence",
            "--project",
            str(tmp_path),
            "--reflection-cadence",
            "10",
            "--preview",
            "--task",
            "ship the parser",
        ],
    )
    assert out.exit_code == 0, out.output
    assert json.loads(out.output.splitlines()[0]) == {"reflection_cadence": 10, "source": "cli"}
    assert "ship the parser" in out.output and "ORIGINAL TASK" in out.output


def test_bad_config_is_a_clean_error(tmp_path: Path) -> None:
    (tmp_path / ".agent-reflection.toml").write_text('reflection_cadence = "often"\n')
    env = {k: v for k, v in os.environ.items() if k != "REFLECTION_CADENCE"}
    out = subprocess.run(
        [str(Path(sys.executable).parent / "reflect"), "cadence", "--project", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert out.returncode == 1
    assert out.stderr.startswith("Error: ")
    assert ".agent-reflection.toml" in out.stderr and "whole number" in out.stderr
    assert "Traceback" not in out.stderr
