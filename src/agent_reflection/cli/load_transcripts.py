"""``reflect load transcripts``: Claude Code session transcripts into DuckDB."""

from __future__ import annotations

import click

from agent_reflection.cli._groups import db_option, load_group, silent_option
from agent_reflection.cli._load_output import (
    LoadReport,
    encoding_option,
    json_option,
    no_redact_option,
    warn_no_redact,
)


@load_group.command("transcripts")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@encoding_option
@silent_option
@json_option
@db_option
@no_redact_option
def load_transcripts_command(
    paths: tuple[str, ...],
    encoding: str | None,
    silent: bool,
    as_json: bool,
    db_path: str | None,
    no_redact: bool,
) -> None:
    """Load Claude Code transcripts (JSONL files, or folders searched for *.jsonl).

    Fills `messages` (every line; unknown line types kept as raw JSON), `sessions`,
    `tool_calls`, `checkpoints` (our cadence prompts found in tool results, hook context or
    attachments) and `escalations` (<ESCALATION> blocks in assistant text). Bad lines go to
    `rejected` with the reason. Loading again adds only new lines. Secrets in the text
    (tokens, keys, passwords) are replaced by [REDACTED:kind:hash] unless --no-redact.

    \b
    Examples:
      reflect load transcripts ~/.claude/projects/-home-me-src-app/
      reflect load transcripts session.jsonl other.jsonl --db data/reflection.duckdb
      reflect load transcripts ~/.claude/projects/ --json --silent
    """
    from agent_reflection.load.transcripts import load_transcripts, transcript_files
    from agent_reflection.progress import progress_bar
    from agent_reflection.store.db import connect

    files = transcript_files(paths)
    warn_no_redact(no_redact, "the transcripts")
    with (
        connect(db_path) as con,
        progress_bar(total=len(files.files), unit="file", desc="transcripts", silent=silent) as bar,
    ):
        summary = load_transcripts(
            con,
            list(paths),
            on_file=lambda _p: bar.update(1),
            encoding=encoding,
            redact=not no_redact,
        )
    report = LoadReport(as_json=as_json, silent=silent, db_path=db_path)
    report.add(summary)
    report.finish()
