"""``reflect rejected``: what loads could not take, and why."""

from __future__ import annotations

import json

import click

from agent_reflection.cli._groups import cli, db_option


@cli.command("rejected")
@db_option
@click.option(
    "--load", "load_id", type=int, help="Only this load (its id is in the load's summary)."
)
@click.option("--source", help="Only this source: sidecars, git, board, ...")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="Show at most this many records.",
)
@click.option("--raw", "show_raw", is_flag=True, help="Also print the start of each raw record.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
def rejected_command(
    db_path: str | None,
    load_id: int | None,
    source: str | None,
    limit: int,
    show_raw: bool,
    as_json: bool,
) -> None:
    """List rejected records: where each was (file#/json/path, file:line, repo@sha) and why.

    \b
    Examples:
      reflect rejected                       # the latest 50, any source
      reflect rejected --load 7              # what load 7 rejected
      reflect rejected --source sidecars --limit 500 --json > rejected.jsonl
    """
    from agent_reflection.store.db import connect, existing_database
    from agent_reflection.store.rejected import list_rejected

    with connect(existing_database(db_path)) as con:
        records = list_rejected(con, load_id=load_id, source=source, limit=limit)
    for r in records:
        if as_json:
            click.echo(json.dumps(r.to_dict(), ensure_ascii=False))
            continue
        click.echo(f"[load {r.load_id} {r.source}] {r.location}\n    {r.reason}")
        if show_raw and r.raw is not None:
            click.echo(f"    raw: {r.raw[:200]!r}")
    if not records and not as_json:
        click.echo("no rejected records" + (f" for load {load_id}" if load_id else ""))
