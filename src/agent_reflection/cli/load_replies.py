"""``reflect load reflection-replies``: the SubagentStop hook's log into DuckDB."""

from __future__ import annotations

import click

from agent_reflection.cli._groups import db_option, load_group, silent_option
from agent_reflection.cli._load_output import LoadReport, json_option


@load_group.command("reflection-replies")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, dir_okay=False))
@silent_option
@json_option
@db_option
def load_reflection_replies_command(
    paths: tuple[str, ...], silent: bool, as_json: bool, db_path: str | None
) -> None:
    """Load the reflection agent's replies as the SubagentStop hook judged them.

    Reads the hook's log (default: reflection-agent.jsonl in the hooks' state folder,
    $REFLECTION_STATE_DIR, else $XDG_CACHE_HOME/agent-reflection, else
    ~/.cache/agent-reflection) into `reflection_replies`: output kind, valid, problems,
    attempt, failure layers and the hook's decision (block, pass, surface). Bad lines go to
    `rejected` naming the field. Loading again adds only new lines.

    \b
    Examples:
      reflect load reflection-replies
      reflect load reflection-replies ~/.cache/agent-reflection/reflection-agent.jsonl --json
    """
    import os

    from agent_reflection.hooks.paths import state_dir
    from agent_reflection.hooks.subagent_stop import LOG_NAME
    from agent_reflection.in_loop.replies import load_reflection_replies
    from agent_reflection.store.db import connect

    if not paths:
        default = os.path.join(state_dir(os.environ), LOG_NAME)
        if not os.path.isfile(default):
            raise click.UsageError(
                f"no reply log at {default} (the SubagentStop hook has not run here); "
                "name the log file"
            )
        paths = (default,)
    with connect(db_path) as con:
        summary = load_reflection_replies(con, list(paths))
    report = LoadReport(as_json=as_json, silent=silent, db_path=db_path)
    report.add(summary)
    report.finish()
