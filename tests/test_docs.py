"""Docs that cannot rot: every CLI command and option is in docs/cli.md, which must be current."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from agent_reflection.cli import cli
from agent_reflection.cli._groups import register_all_commands
from agent_reflection.cli._reference import render, walk
from conftest import REPO_ROOT

CLI_DOC = REPO_ROOT / "docs" / "cli.md"


def test_cli_reference_is_current() -> None:
    assert CLI_DOC.read_text("utf-8") == render(), (
        "docs/cli.md is out of date: run `python -m agent_reflection.cli._reference > docs/cli.md`"
    )


def _commands() -> list[tuple[str, click.Command]]:
    register_all_commands()
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


#: Options the docs name bare (a code span that is only the option) that belong to other
#: tools: git (the loaders' own git calls), bench scripts, GIT_OPTIONAL_LOCKS' equivalent.
FOREIGN_BARE_OPTIONS = {
    "--all": "git log / rev-list",
    "--branches": "git rev-list",
    "--tags": "git rev-list",
    "--remotes": "git rev-list",
    "--skip": "git rev-list",
    "--filter": "git clone (partial clones)",
    "--ignore-revs-file": "git blame",
    "--no-optional-locks": "git",
    "--synthetic": "bench/load_git.py",
    "--rows": "bench of the experiments",
}
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_OPTION = re.compile(r"(?<![\w/.-])(--[a-z][a-z0-9-]*[a-z0-9])")


def _reflect_options() -> set[str]:
    register_all_commands()
    names = {"--help"}
    for _path, command in walk(cli, ("reflect",)):
        for param in command.params:
            if isinstance(param, click.Option):
                names.update(o for o in (*param.opts, *param.secondary_opts) if o.startswith("--"))
    return names


def _named_options(text: str) -> list[tuple[int, str, str]]:
    """(line, option, snippet) for each option the text gives to `reflect`: in a code span or
    code-block line that starts with `reflect`, or a code span that is the option alone."""
    found: list[tuple[int, str, str]] = []
    in_block = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            in_block = not in_block
            continue
        snippets = [line.strip()] if in_block else _CODE_SPAN.findall(line)
        for snippet in snippets:
            command = snippet.removeprefix("$ ").strip()
            first = _OPTION.match(command)
            bare = first is not None and first.group(1) not in FOREIGN_BARE_OPTIONS
            if command.startswith("reflect ") or bare:
                found += [(number, opt, snippet) for opt in _OPTION.findall(command)]
    return found


def _doc_files() -> list[Path]:
    return [*sorted((REPO_ROOT / "docs").glob("*.md")), REPO_ROOT / "README.md"]


def test_the_option_finder_sees_reflect_and_bare_options_only() -> None:
    text = (
        "Run `reflect run all --db x --warm` or `--now latest`; not `git log --all`.\n"
        "```\nreflect load git REPO --szz\ngit fetch --refetch\n```\n"
    )
    assert [o for _, o, _ in _named_options(text)] == ["--db", "--warm", "--now", "--szz"]


@pytest.mark.parametrize("doc", _doc_files(), ids=lambda p: p.name)
def test_every_option_the_docs_name_exists_on_some_reflect_command(doc: Path) -> None:
    known = _reflect_options()
    unknown = [
        f"{doc.name}:{line}: {opt} in `{snippet}`"
        for line, opt, snippet in _named_options(doc.read_text("utf-8"))
        if opt not in known
    ]
    assert not unknown, "options no reflect command has:\n" + "\n".join(unknown)
