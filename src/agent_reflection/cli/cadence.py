"""``reflect cadence``: the effective checkpoint cadence, where it came from, and the prompt."""

from __future__ import annotations

import json

import click

from agent_reflection.cli._groups import cli


@cli.command("cadence")
@click.option(
    "--project",
    "project_dir",
    type=click.Path(file_okay=False, exists=True),
    default=".",
    show_default=True,
    help="Project root holding .agent-reflection.toml or pyproject.toml.",
)
@click.option(
    "--reflection-cadence",
    "cli_value",
    type=click.IntRange(min=0),
    default=None,
    help="Override the configured cadence (0 disables). Beats $REFLECTION_CADENCE and files.",
)
@click.option("--preview", is_flag=True, help="Also print the checkpoint prompt it would inject.")
@click.option("--task", default="", help="Task text for --preview (shown under ORIGINAL TASK).")
def cadence_command(project_dir: str, cli_value: int | None, preview: bool, task: str) -> None:
    """Print the effective reflection cadence and its source as JSON.

    Precedence: --reflection-cadence, then $REFLECTION_CADENCE, then `reflection_cadence` in
    .agent-reflection.toml, then [tool.agent-reflection] in pyproject.toml, then 7.

    \b
    Examples:
      reflect cadence
      REFLECTION_CADENCE=5 reflect cadence --project ~/src/app
      reflect cadence --reflection-cadence 10 --preview --task "fix the flaky login test"
    """
    from agent_reflection import config
    from agent_reflection.in_loop.cadence import reflection_prompt

    cadence, source = config.resolve(
        config.CADENCE,
        cli=cli_value,
        project=lambda key: config.project_value(project_dir, key),
    )
    click.echo(json.dumps({"reflection_cadence": cadence, "source": source}))
    if preview:
        click.echo(reflection_prompt(max(cadence, 1), task))
