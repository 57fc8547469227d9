"""``reflect load git``: load a git history (clone, bare repo or bundle) into DuckDB."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from agent_reflection.cli._groups import db_option, load_group, silent_option
from agent_reflection.cli._load_output import LoadReport, json_option

if TYPE_CHECKING:
    from agent_reflection.load.git.loader import RepoLoad
    from agent_reflection.store.db import LoadSummary


@load_group.command("git")
@click.argument("repo", type=click.Path())
@click.option(
    "--rev",
    help="Revision or range to load (e.g. v2.0..main). Default: every branch, "
    "tag and remote branch, plus HEAD.",
)
@click.option(
    "--since", help="Only commits newer than this date (git syntax: 2024-01-01, '3 months ago')."
)
@click.option(
    "--name",
    help="Repo name stored in commits.repo (default: the folder or bundle "
    "name without .git/.bundle).",
)
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False),
    envvar="REFLECT_CACHE_DIR",
    help="Where bundles are cloned once (default: $REFLECT_CACHE_DIR, else "
    "~/.cache/agent-reflection).",
)
@click.option(
    "--full",
    is_flag=True,
    help="List the whole history again instead of only commits past the tips recorded by the "
    "last complete load (loaded commits still count as already present).",
)
@click.option(
    "--szz",
    is_flag=True,
    help="Also attribute each fix-like commit to the commits that last touched the code lines "
    "it changes (SZZ: tables fix_inducing, fix_changes; about 3x the plain load's time on "
    "flask). Blames walk back only as far as the pre-registered windows count (30 days): older "
    "lines are counted as before-horizon. Re-running adds only new fixes.",
)
@db_option
@silent_option
@json_option
def load_git_command(
    repo: str,
    rev: str | None,
    since: str | None,
    name: str | None,
    cache_dir: str | None,
    full: bool,
    szz: bool,
    db_path: str | None,
    silent: bool,
    as_json: bool,
) -> None:
    """Load the commits and changed files of the git repository REPO.

    REPO is a clone, a bare repository or a .bundle file. One `git log` pass fills the
    `commits` and `commit_files` tables, with derived signals (reverts, PR numbers,
    conventional-commit type, fix wording). Re-running reads only commits that are new since
    the last complete load (git stops at the tips it recorded). Several repos live side by
    side under their names. With --szz, each fix-like commit is then blamed back
    to the commits that introduced the code lines it changes (see docs/git.md).

    Where the repo has git-ai (refs/notes/ai) or whogitit (refs/notes/whogitit) notes, they
    fill ai_line_attributions and set commits.agent of the commits they mark: a note beats a
    message pattern; commits.agent_source says which (see docs/git.md).

    Then the sidecars in the repo's git notes (refs/notes/reflection) are loaded like sidecar
    files, and each session is linked to its commits (session_commits) and given an outcome
    from the history that followed (session_outcomes: wrong / right-so-far / censored, with
    the windows of preregistration.toml [p1] loop_*; see docs/loading.md).

    \b
    Examples:
      reflect load git ~/src/flask
      reflect load git flask.bundle --name flask
      reflect load git . --rev v2.0.0..main --db data/my.duckdb
      reflect load git ~/src/kafka --since "6 months ago" --json
      reflect load git flask.bundle --szz
    """
    from agent_reflection.load.git.loader import load_repo
    from agent_reflection.load.git.repo import open_repo
    from agent_reflection.store.db import connect

    source = open_repo(repo, name=name, cache_dir=cache_dir)  # a wrong REPO makes no database
    with connect(db_path) as con:
        loaded = load_repo(
            con, source, rev=rev, since=since, szz=szz, full=full, progress=not silent
        )
    report_repo(loaded, LoadReport(as_json=as_json, silent=silent, db_path=db_path))


def report_repo(loaded: RepoLoad, report: LoadReport) -> None:
    """Every load's line (or the one JSON document), the git loader's own warnings first."""
    history, szz = loaded.history, loaded.szz
    if not report.silent:
        for warning in history.detail.get("warnings", []):
            click.secho(f"warning: {warning}", fg="yellow", err=True)
        if szz is not None and szz.rejected:
            click.secho(
                f"warning: SZZ could not read {szz.rejected:,} fix(es) (missing objects); "
                "`reflect rejected` lists them, a full clone and another --szz run attributes them",
                fg="yellow",
                err=True,
            )
    report.add(history, warn=False)  # worded above
    extra: dict[str, object] = dict(history.to_dict())  # the keys scripts read before
    if szz is not None:
        report.add(szz)
        extra["szz"] = szz.to_dict()
    for ai_summary in loaded.ai_notes:
        report.add(ai_summary)
    if loaded.ai_notes:
        extra["ai_notes"] = [s.to_dict() for s in loaded.ai_notes]
    if loaded.notes is not None:
        report.add(loaded.notes)
        extra["notes"] = loaded.notes.to_dict()
    if loaded.sessions is not None:
        if loaded.sessions.detail.get("links") or loaded.sessions.loaded:
            report.add(loaded.sessions, sessions_line(loaded.sessions))
        extra["sessions"] = loaded.sessions.to_dict()
    report.finish(**extra)


def sessions_line(summary: LoadSummary) -> str:
    """``sessions of flask: 3 linked commits (2 during-session, 1 note); outcomes 1 wrong, ...``"""
    detail = summary.detail
    links = detail.get("links", {})
    outcomes = detail.get("outcomes", {})
    link_text = ", ".join(f"{n:,} {kind}" for kind, n in sorted(links.items())) or "none"
    outcome_text = ", ".join(f"{n:,} {kind}" for kind, n in sorted(outcomes.items())) or "none"
    return (
        f"sessions of {detail.get('repo')}: {sum(links.values()):,} linked commit(s) "
        f"({link_text}); outcomes within {detail.get('window_days')} days: {outcome_text}"
    )
