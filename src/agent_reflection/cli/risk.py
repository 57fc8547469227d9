"""``reflect risk``: the risk floor of a list of paths (handy to try a custom table)."""

from __future__ import annotations

import json
import sys

import click

from agent_reflection.cli._groups import cli
from agent_reflection.reflection.risk_floor import evaluate_risk_floor, load_risk_table


@cli.command("risk")
@click.argument("paths", nargs=-1)
@click.option(
    "--table",
    type=click.Path(exists=True, dir_okay=False),
    envvar="REFLECTION_RISK_TABLE",
    help="TOML risk table overriding the shipped one (env: REFLECTION_RISK_TABLE).",
)
@click.option("--threshold", type=click.FloatRange(0, 1), help="Review threshold (default 0.5).")
@click.option("--stdin", "from_stdin", is_flag=True, help="Read paths from stdin, one per line.")
def risk_command(
    paths: tuple[str, ...], table: str | None, threshold: float | None, from_stdin: bool
) -> None:
    """Print the review risk floor of PATHS as JSON.

    \b
    Examples:
      reflect risk src/auth/jwt.ts README.md
      git diff --name-only main | reflect risk --stdin
      reflect risk --table my-risk.toml src/lexer/token.py
    """
    files = list(paths)
    if from_stdin:
        files += [line.strip() for line in sys.stdin if line.strip()]
    risk_table = load_risk_table(table) if table else None
    verdict = evaluate_risk_floor(files, threshold=threshold, table=risk_table)
    click.echo(json.dumps(verdict.to_dict(), indent=2))
