"""Generate docs/cli.md from the live command tree: ``python -m agent_reflection.cli._reference``.

tests/test_docs.py fails when docs/cli.md is out of date, so an option cannot ship undocumented.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import click

from agent_reflection.cli import cli
from agent_reflection.cli._groups import CONTEXT_SETTINGS, register_all_commands

HEADER = """# `reflect` command reference

Generated from `reflect --help` by `python -m agent_reflection.cli._reference > docs/cli.md`;
a test fails when this file is out of date. Narrative docs live beside it in docs/.
"""


def walk(
    command: click.Command, path: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    yield path, command
    if isinstance(command, click.Group):
        for name in sorted(command.commands):
            yield from walk(command.commands[name], (*path, name))


def render() -> str:
    register_all_commands()
    parts = [HEADER]
    for path, command in walk(cli, ("reflect",)):
        # The same settings the real contexts inherit from the root group (-h, width).
        ctx_args: dict[str, Any] = {**CONTEXT_SETTINGS, "terminal_width": 100}
        with click.Context(command, info_name=" ".join(path), **ctx_args) as ctx:
            text = command.get_help(ctx)
        level = "#" * min(len(path) + 1, 4)
        parts.append(f"{level} `{' '.join(path)}`\n\n```text\n{text}\n```\n")
    return "\n".join(parts)


if __name__ == "__main__":
    sys.stdout.write(render())
