"""``reflect load labels FILE``: a labelled calibration corpus for P1."""

from __future__ import annotations

import click

from agent_reflection.cli._groups import db_option, load_group, silent_option
from agent_reflection.cli._load_output import LoadReport, encoding_option, json_option, parse_maps


@load_group.command("labels")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--corpus", help="Corpus name (default: each file's name without extensions).")
@click.option(
    "--map",
    "maps",
    multiple=True,
    metavar="FIELD=COLUMN",
    help="Column (CSV) or key (JSONL) holding FIELD (repeatable), e.g. confidence=p; "
    "FIELD is confidence, correct, or a column the pre-registration declares as P1's strata or "
    "cluster column (model, question_id): --map model=llm.",
)
@encoding_option
@silent_option
@json_option
@db_option
def load_labels_command(
    files: tuple[str, ...],
    corpus: str | None,
    maps: tuple[str, ...],
    encoding: str | None,
    silent: bool,
    as_json: bool,
    db_path: str | None,
) -> None:
    """Load JSONL/CSV records of {confidence, correct} (+ group columns) into `labels`.

    confidence is a number in [0, 1]; correct is true/false, 1/0 or yes/no. Other string
    fields (model, agent, ...) are kept as groups for per-group AUC. Files may be .gz;
    UTF-8 (with or without BOM), UTF-16/32, Latin-1 and CRLF line ends load as they are.
    A CSV header without confidence and correct (or the columns --map names) loads nothing.
    P1 reads its strata and clusters from the columns the pre-registration declares ([p1]
    strata_column, cluster_column: model, question_id) and stops when labels lack one; a
    file that names them otherwise maps them with --map (model=llm).

    \b
    Examples:
      reflect load labels calibration.jsonl
      reflect load labels runs.csv.gz --corpus my-agent --db data/reflection.duckdb
      reflect load labels excel-export.csv --encoding cp1252
      reflect load labels scores.csv --map confidence=p --map correct=is_correct
      reflect load labels answers.jsonl --map model=llm --map question_id=qid
      reflect load labels calibration.jsonl --json --silent
    """
    from agent_reflection.load.labels import check_mapping, load_labels
    from agent_reflection.progress import progress_bar
    from agent_reflection.store.db import connect

    mapping = check_mapping(parse_maps(maps))  # a wrong field fails before the database opens
    report = LoadReport(as_json=as_json, silent=silent, db_path=db_path)
    with connect(db_path) as con:
        for path in files:
            with progress_bar(total=None, unit="rows", desc=f"labels {path}", silent=silent) as bar:
                summary = load_labels(
                    con,
                    path,
                    corpus=corpus,
                    encoding=encoding,
                    progress=bar.update,
                    mapping=mapping,
                )
            report.add(summary)
    report.finish()
