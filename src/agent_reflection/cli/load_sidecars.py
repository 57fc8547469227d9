"""``reflect load sidecars PATH…``: reflection.v1 sidecars into the ``reflections`` table."""

from __future__ import annotations

import click

from agent_reflection.cli._groups import db_option, load_group, silent_option
from agent_reflection.cli._load_output import (
    LoadReport,
    json_option,
    no_redact_option,
    warn_no_redact,
)


@load_group.command("sidecars")
@click.argument("paths", nargs=-1, required=True)
@db_option
@click.option(
    "--pattern",
    default="*.reflection.json",
    show_default=True,
    help="File names to pick up inside folders (files named explicitly are always read).",
)
@silent_option
@json_option
@click.option("--allow-empty", is_flag=True, help="Exit 0 even when no file at all could be read.")
@no_redact_option
def load_sidecars_command(
    paths: tuple[str, ...],
    db_path: str | None,
    pattern: str,
    silent: bool,
    as_json: bool,
    allow_empty: bool,
    no_redact: bool,
) -> None:
    """Load reflection.v1 sidecars from files, folders (recursive) and globs.

    Every file is validated; valid records go to `reflections` (key: SHA-256 of the canonical
    JSON, so re-loading is a no-op), invalid ones to `rejected` with the JSON path of the
    problem. Prints `read = loaded + rejected + already present` at the end. Secrets in the
    records' text are replaced by [REDACTED:kind:hash] unless --no-redact.

    Exit status: 0 when the load ran (even with some rejected files); 1, with nothing loaded,
    when a path (not a glob) does not exist; 1 when every file read was rejected, or when
    nothing at all could be read (every folder empty, every glob unmatched) unless
    --allow-empty.

    \b
    Examples:
      reflect load sidecars .reflection/
      reflect load sidecars 'runs/**/*.reflection.json' one-more.json
      reflect load sidecars --pattern '*.json' exported/ --db /tmp/r.duckdb
      reflect load sidecars .reflection/ --json --silent
      reflect rejected --source sidecars        # list what was rejected, and why
    """
    from agent_reflection.load.sidecars.loader import load_sidecars
    from agent_reflection.progress import progress_bar, progress_enabled
    from agent_reflection.store.db import connect

    warn_no_redact(no_redact, "the sidecars")
    with (
        connect(db_path) as con,
        progress_bar(total=None, unit="files", desc="sidecars", silent=silent) as bar,
    ):
        summary = load_sidecars(
            con,
            paths,
            pattern=pattern,
            progress=bar if progress_enabled(silent) else None,
            redact=not no_redact,
        )
    for problem in [] if silent else summary.detail.get("problems", []):
        click.secho(f"warning: {problem}", fg="yellow", err=True)
    report = LoadReport(as_json=as_json, silent=silent, db_path=db_path)
    report.add(summary)
    report.finish(**summary.to_dict())  # the summary's keys at the top too, as before
    if summary.read == 0 and not allow_empty:
        raise SystemExit(1)
