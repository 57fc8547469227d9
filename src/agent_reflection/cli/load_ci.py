"""``reflect load ci``: CI results per commit into ci_runs."""

from __future__ import annotations

from pathlib import Path

import click

from agent_reflection.cli._groups import db_option, load_group, silent_option
from agent_reflection.cli._load_output import LoadReport, json_option


@load_group.command("ci")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--repo", help="OWNER/REPO for records that name no repository (JUnit XML).")
@click.option("--sha", help="JUnit XML: the full commit id the tests ran on.")
@silent_option
@json_option
@db_option
def load_ci_command(
    files: tuple[Path, ...],
    repo: str | None,
    sha: str | None,
    silent: bool,
    as_json: bool,
    db_path: str | None,
) -> None:
    """Load CI results per commit into ci_runs (P2's CI bucket reads them).

    Each FILE is one load: a GitHub REST response (workflow runs, workflow jobs, check runs,
    commit statuses; several pages one after another are fine), `gh run list --json` output,
    a JUnit XML report (with --repo and --sha), or a CSV of CI results (sha, name, conclusion
    columns). Idempotent; a run that changed since (it finished) is replaced. Unreadable
    records go to `rejected` with FILE:LINE and the field.

    \b
    Examples:
      gh api --paginate repos/OWNER/REPO/actions/runs > runs.json
      reflect load ci runs.json
      gh run list --json databaseId,headSha,name,workflowName,conclusion,status,startedAt,\\
          updatedAt,url,attempt > gh-runs.json
      reflect load ci gh-runs.json
      reflect load ci report.xml --repo OWNER/REPO --sha 0123...cdef
    """
    from agent_reflection.load.ci import CiOptions, load_ci
    from agent_reflection.store.db import connect

    report = LoadReport(as_json=as_json, silent=silent, db_path=db_path)
    with connect(db_path) as con:
        for file in files:
            report.add(load_ci(con, file, CiOptions(repo=repo, sha=sha)))
    report.finish()
