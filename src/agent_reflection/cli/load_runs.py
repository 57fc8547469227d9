"""``reflect load runs``: agent run logs into run_outcomes / run_steps / run_tasks."""

from __future__ import annotations

import click

from agent_reflection.cli._encoding import echo_warnings, encoding_option
from agent_reflection.cli._groups import db_option, load_group, silent_option


@load_group.command("runs")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "sqlite", "swe-agent"]),
    default=None,
    help="Force the format; default: told from each file (SQLite header, trajectory name, "
    "SWE-bench keys, else the documented JSONL shape).",
)
@encoding_option
@silent_option
@db_option
def load_runs_command(
    files: tuple[str, ...],
    fmt: str | None,
    encoding: str | None,
    silent: bool,
    db_path: str | None,
) -> None:
    """Load agent run logs: sub-session outcomes, their steps and the platform's tasks.

    \b
    Formats:
      jsonl      one object per line, "kind": outcome | step | task (see docs/cycle.md)
      sqlite     an agent platform's database: sub_session_outcomes, interaction_log, tasks
      swe-agent  mini-swe-agent / SWE-bench runs export, steps export, *.traj.json[.gz]

    \b
    Examples:
      reflect load runs ../shared/data/agent-runs/runs.jsonl \\
          ../shared/data/agent-runs/steps.jsonl.gz
      reflect load runs platform.db --format sqlite
      reflect load runs runs.jsonl --db /tmp/cycle.duckdb
    """
    from pathlib import Path

    from agent_reflection import db
    from agent_reflection.load.runs import load_runs

    con = db.connect(db_path)
    try:
        for file in files:
            result = load_runs(con, Path(file), fmt, encoding)
            if not silent:
                echo_warnings(result.summary.detail)
                click.echo(result.summary.line())
    finally:
        con.close()
