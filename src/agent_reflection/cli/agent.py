"""``reflect agent install``: put the reflection (unblocker) agent into .claude/agents/."""

from __future__ import annotations

import click

from agent_reflection.cli._groups import agent_group


@agent_group.command("install")
@click.option(
    "--project",
    "scope",
    flag_value="project",
    default=True,
    help="Install into ./.claude/agents/ of the project (default).",
)
@click.option(
    "--user",
    "scope",
    flag_value="user",
    help="Install into ~/.claude/agents/ ($CLAUDE_CONFIG_DIR/agents when set).",
)
@click.option(
    "--project-dir",
    type=click.Path(file_okay=False),
    default=".",
    show_default=True,
    help="Project root for --project.",
)
@click.option("--force", is_flag=True, help="Replace a copy you edited by hand.")
def install_command(scope: str, project_dir: str, force: bool) -> None:
    """Install the reflection-unblocker agent definition for Claude Code.

    Idempotent: an up-to-date copy is left alone, an untouched older copy is updated, and a
    copy you edited is kept unless you pass --force. Claude Code picks the agent up in new
    sessions (or after /agents).

    \b
    Examples:
      reflect agent install              # ./.claude/agents/reflection-unblocker.md
      reflect agent install --user       # ~/.claude/agents/reflection-unblocker.md
      reflect agent install --project-dir ~/src/app --force
    """
    from agent_reflection.in_loop.agent_install import agents_dir, install_agent

    result = install_agent(agents_dir(scope, project_dir), force=force)
    click.echo(result.line())
