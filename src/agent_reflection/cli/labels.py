"""``reflect load labels FILE``: a labelled calibration corpus for P1."""

from __future__ import annotations

import click

from agent_reflection.cli._encoding import echo_warnings, encoding_option
from agent_reflection.cli._groups import db_option, load_group, silent_option


@load_group.command("labels")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--corpus", help="Corpus name (default: each file's name without extensions).")
@encoding_option
@silent_option
@db_option
def load_labels_command(
    files: tuple[str, ...],
    corpus: str | None,
    encoding: str | None,
    silent: bool,
    db_path: str | None,
) -> None:
    """Load JSONL/CSV records of {confidence, correct} (+ group columns) into `labels`.

    confidence is a number in [0, 1]; correct is true/false, 1/0 or yes/no. Other string
    fields (model, agent, ...) are kept as groups for per-group AUC. Files may be .gz;
    UTF-8 (with or without BOM), UTF-16/32, Latin-1 and CRLF line ends load as they are.

    \b
    Examples:
      reflect load labels calibration.jsonl
      reflect load labels runs.csv.gz --corpus my-agent --db data/reflection.duckdb
      reflect load labels excel-export.csv --encoding cp1252
    """
    from agent_reflection.db import connect
    from agent_reflection.experiments.labels import load_labels

    con = connect(db_path)
    try:
        for path in files:
            summary = load_labels(con, path, corpus=corpus, encoding=encoding)
            if not silent:
                echo_warnings(summary.detail)
                click.echo(summary.line())
    finally:
        con.close()
