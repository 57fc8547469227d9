"""``reflect load board`` and ``reflect load match``: board exports and task <-> commit keys."""

from __future__ import annotations

from pathlib import Path

import click

from agent_reflection.cli._groups import db_option, load_group, silent_option
from agent_reflection.cli._load_output import LoadReport, encoding_option, json_option, parse_maps

FORMAT_CHOICES = ("github", "jira", "csv", "jsonl", "git-files")


@load_group.command("board")
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMAT_CHOICES),
    required=True,
    help="Export format: github (issues, issue events / timelines, GraphQL, GH "
    "Archive), jira (CSV or JSON), csv, jsonl, git-files (FILE is a git "
    "repo).",
)
@click.option(
    "--map",
    "maps",
    multiple=True,
    metavar="FIELD=COLUMN",
    help="csv/jsonl: column holding FIELD (repeatable), e.g. task_ref=id.",
)
@click.option(
    "--map-file",
    type=click.Path(exists=True, dir_okay=False),
    help="csv/jsonl: a YAML/JSON file of FIELD: COLUMN pairs (--map wins).",
)
@click.option(
    "--origin", help="Envelope origin (board URL) instead of the one derived from the file."
)
@click.option(
    "--project",
    help="github: OWNER/REPO for records that carry no URL (per-issue events-N.json files).",
)
@click.option(
    "--path",
    "path_filter",
    default=None,
    help="git-files: the repo folder holding task files (default tasks/).",
)
@click.option(
    "--no-match", is_flag=True, help="Do not run the task <-> commit matcher after the load."
)
@encoding_option
@silent_option
@json_option
@db_option
def load_board_command(
    file: Path,
    fmt: str,
    maps: tuple[str, ...],
    map_file: str | None,
    origin: str | None,
    project: str | None,
    path_filter: str | None,
    no_match: bool,
    encoding: str | None,
    silent: bool,
    as_json: bool,
    db_path: str | None,
) -> None:
    """Load a task-board export into tasks, task_events, task_links (and task_commits).

    Idempotent: loading the same export again changes nothing; a task that changed on the
    board is replaced. Unreadable records go to `rejected` with FILE:LINE and the reason.
    Afterwards the task <-> commit matcher runs (unless --no-match).

    \b
    Examples:
      reflect load board kafka-jira.csv.gz --format jira
      gh issue list --json number,title,state,createdAt,closedAt,labels,url > issues.json
      reflect load board issues.json --format github
      gh api --paginate repos/O/R/issues/7/timeline > timeline-7.json
      reflect load board timeline-7.json --format github --project O/R
      reflect load board tasks.csv --format csv --map task_ref=id --map created_at=opened
      reflect load board ~/src/myrepo --format git-files --path tasks/
      reflect load board excel-export.csv --format csv --encoding cp1252
    """
    from agent_reflection.load.board.loader import load_board_export
    from agent_reflection.load.board.model import ParseOptions
    from agent_reflection.store.db import connect

    options = ParseOptions(
        origin=origin,
        project=project,
        mapping=parse_maps(maps, map_file),
        path_filter=path_filter,
        encoding=encoding,
    )
    with connect(db_path) as con:
        loaded = load_board_export(con, file, fmt, options, match=not no_match, progress=not silent)
    report = LoadReport(as_json=as_json, silent=silent, db_path=db_path)
    report.add(loaded.board)
    extra = {"load": loaded.board.to_dict()}  # the keys of before, beside "loads"
    if loaded.match is not None:
        report.add(loaded.match.load, loaded.match.line())
        extra["match"] = loaded.match.load.to_dict()
    elif not no_match and not (as_json or silent):
        click.echo("match: not run, the board load failed (`reflect load match` runs it alone)")
    report.finish(**extra)


@load_group.command("match")
@json_option
@silent_option
@db_option
def load_match_command(as_json: bool, silent: bool, db_path: str | None) -> None:
    """Find task keys in commit messages and sidecars -> task_commits, reflection_tasks.

    Rules (docs/boards.md): known task_refs verbatim; Jira keys of known projects
    (KAFKA-1234); GitHub owner/repo#N of known projects, and bare #N / GH-N in commits of the
    matching repo. Idempotent; `reflect load board` runs it too.

    \b
    Examples:
      reflect load git ~/src/kafka && reflect load match
      reflect load match --json
    """
    from agent_reflection.load.task_matcher import match_task_commits
    from agent_reflection.store.db import connect

    with connect(db_path) as con:
        matched = match_task_commits(con)
    report = LoadReport(as_json=as_json, silent=silent, db_path=db_path)
    report.add(matched.load, matched.line())
    report.finish(**matched.load.to_dict(), by_rule=matched.by_rule)
