"""``reflect status``: what is loaded, and what each experiment needs next."""

from __future__ import annotations

import json

import click

from agent_reflection.cli._groups import cli, db_option


@cli.command("status")
@db_option
@click.option(
    "--prereg",
    "prereg_path",
    type=click.Path(exists=True, dir_okay=False),
    help="Pre-registration TOML whose thresholds the next steps use (default: as for "
    "`reflect run`).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead.")
def status_command(db_path: str | None, prereg_path: str | None, as_json: bool) -> None:
    """What the database holds and, for P1, P2 and P3, what each needs next.

    Per source, the loads recorded in the `loads` table (how many, rows loaded and rejected,
    the newest); per experiment, its data in the terms its pre-registration decides on
    (P1: labelled rows of the self-rated-high subset against the minimum sample; P2: commits
    and SZZ; P3: completed tasks) and the one command to run next. Read-only: a database that
    is not there is not created.

    \b
    Examples:
      reflect status
      reflect status --db reports/demo/demo.duckdb
      reflect status --json | jq '.experiments[] | .next'
    """
    from agent_reflection.experiments.registration import load_preregistration
    from agent_reflection.experiments.status import workspace_status
    from agent_reflection.store.db import resolve_db_path

    status = workspace_status(resolve_db_path(db_path), load_preregistration(prereg_path))
    if as_json:
        click.echo(json.dumps(status.to_dict()))
        return
    for line in status.lines():
        click.echo(line)
