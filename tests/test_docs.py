"""Docs that cannot rot: every CLI command and option is in docs/cli.md, which must be current."""

from __future__ import annotations

import click
import pytest

from agent_reflection.cli import _register_commands, cli
from agent_reflection.cli._reference import render, walk
from conftest import REPO_ROOT

CLI_DOC = REPO_ROOT / "docs" / "cli.md"


def test_cli_reference_is_current() -> None:
    assert CLI_DOC.read_text("utf-8") == render(), (
        "docs/cli.md is out of date: run `python -m agent_reflection.cli._reference > docs/cli.md`"
    )


def _commands() -> list[tuple[str, click.Command]]:
    _register_commands()
    return [(" ".join(path), command) for path, command in walk(cli, ("reflect",))]


@pytest.mark.parametrize(("name", "command"), _commands(), ids=lambda v: str(v))
def test_every_command_and_option_is_documented_with_help(
    name: str, command: click.Command
) -> None:
    doc = CLI_DOC.read_text("utf-8")
    assert f"`{name}`" in doc
    assert (command.help or "").strip(), f"{name} has no help text"
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden:
            assert param.help, f"{name} {param.opts[0]} has no help text"
            for opt in param.opts:
                assert opt in doc, f"{name} {opt} is not in docs/cli.md"


def test_readme_names_the_ci_test_command() -> None:
    readme = (REPO_ROOT / "README.md").read_text("utf-8")
    ci = (REPO_ROOT / ".ci" / "run").read_text("utf-8")
    test_line = next(line for line in ci.splitlines() if "pytest" in line).strip()
    assert test_line in readme, f"README.md must show the CI test command: {test_line}"
