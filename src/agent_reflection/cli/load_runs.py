"""``reflect load runs``: agent run logs into run_outcomes / run_steps / run_tasks."""

from __future__ import annotations

import click

from agent_reflection.cli._groups import db_option, load_group, run_format_option, silent_option
from agent_reflection.cli._load_output import (
    LoadReport,
    encoding_option,
    json_option,
    no_redact_option,
    warn_no_redact,
)


@load_group.command("runs")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@run_format_option(
    "Force the format; default: told from each file (SQLite header, trajectory name, "
    "SWE-bench keys, else the documented JSONL shape)."
)
@encoding_option
@silent_option
@json_option
@db_option
@no_redact_option
def load_runs_command(
    paths: tuple[str, ...],
    fmt: str | None,
    encoding: str | None,
    silent: bool,
    as_json: bool,
    db_path: str | None,
    no_redact: bool,
) -> None:
    """Load agent run logs: sub-session outcomes, their steps and the platform's tasks.

    PATHS are run-log files or folders; a folder is searched recursively for *.jsonl,
    *.ndjson (also .gz), *.traj.json(.gz), *.db, *.sqlite and *.sqlite3 (hidden folders
    skipped). Each file is one load. Secrets in the text (commands, outputs, prompts) are
    replaced by [REDACTED:kind:hash] unless --no-redact.

    \b
    Formats:
      jsonl      one object per line, "kind": outcome | step | task (see docs/cycle.md)
      sqlite     an agent platform's database: sub_session_outcomes, interaction_log, tasks
      swe-agent  mini-swe-agent / SWE-bench runs export, steps export, *.traj.json[.gz]

    \b
    Examples:
      reflect load runs runs/*.jsonl
      reflect load runs runs.jsonl steps.jsonl.gz   # a mini-swe-agent runs + steps export
      reflect load runs trajectories/               # *.traj.json(.gz) found below it
      reflect load runs platform.db --format sqlite
      reflect load runs runs.jsonl --db /tmp/cycle.duckdb --json
    """
    from agent_reflection.load.runs import load_runs, refuse_run_log, run_log_files
    from agent_reflection.progress import progress_bar
    from agent_reflection.store import db

    found = run_log_files(paths)
    files = found.files
    if not files and not found.refused:
        raise click.UsageError(
            f"no run-log files in {', '.join(paths)} (looked for *.jsonl, *.ndjson, "
            "*.traj.json, *.db, *.sqlite, *.sqlite3, also .gz)"
        )
    warn_no_redact(no_redact, "the run logs")
    report = LoadReport(as_json=as_json, silent=silent, db_path=db_path)
    with (
        db.connect(db_path) as con,
        progress_bar(total=len(files), unit="file", desc="runs", silent=silent) as bar,
    ):
        for path, reason in found.refused:
            report.add(refuse_run_log(con, path, reason))
        for file in files:
            report.add(load_runs(con, file, fmt, encoding, redact=not no_redact).summary)
            bar.update(1)
    report.finish()
