"""``reflect load git``: load a git history (clone, bare repo or bundle) into DuckDB."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from agent_reflection.cli._groups import db_option, load_group, silent_option
from agent_reflection.cli._load_output import LoadReport, json_option

if TYPE_CHECKING:
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
    "it changes (SZZ: tables fix_inducing, fix_changes; 4-5x the plain load's time on flask). "
    "Re-running adds only new fixes.",
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
    from agent_reflection.load.git.ai_notes import load_ai_notes
    from agent_reflection.load.git.history import count_new_commits, load_git, open_repo
    from agent_reflection.load.sessions import load_git_sessions
    from agent_reflection.progress import progress_bar, progress_enabled
    from agent_reflection.store.db import connect

    source = open_repo(repo, name=name, cache_dir=cache_dir)
    con = connect(db_path)
    try:
        total = None
        show_progress = progress_enabled(silent)
        if show_progress:
            total = count_new_commits(con, source, rev=rev, since=since, full=full)
        with progress_bar(total=total, unit="commit", desc="git log", silent=silent) as bar:
            result = load_git(
                con,
                source,
                rev=rev,
                since=since,
                progress=bar.update if show_progress else None,
                full=full,
            )
        summary = result.summary
        szz_summary = None
        if szz:
            from agent_reflection.load.git.szz import load_fix_inducing

            with progress_bar(total=None, unit="fix", desc="szz", silent=silent) as bar:
                szz_summary = load_fix_inducing(con, source, progress=bar.update)
        ai_notes = load_ai_notes(con, source, tips=result.notes_tips)
        sessions = load_git_sessions(con, source, notes_tips=result.notes_tips)
    finally:
        con.close()
    if not silent:
        for warning in summary.detail.get("warnings", []):
            click.secho(f"warning: {warning}", fg="yellow", err=True)
        if szz_summary is not None and szz_summary.rejected:
            click.secho(
                f"warning: SZZ could not read {szz_summary.rejected:,} fix(es) (missing objects); "
                "`reflect rejected` lists them, a full clone and another --szz run attributes them",
                fg="yellow",
                err=True,
            )
    # the git loader words its own warnings (above); the report prints lines, hints and JSON
    report = LoadReport(as_json=as_json, silent=silent, db_path=db_path)
    report.add(summary, warn=False)
    extra: dict[str, object] = dict(summary.to_dict())  # the keys scripts read before
    if szz_summary is not None:
        report.add(szz_summary)
        extra["szz"] = szz_summary.to_dict()
    for ai_summary in ai_notes:
        report.add(ai_summary)
    if ai_notes:
        extra["ai_notes"] = [s.to_dict() for s in ai_notes]
    if sessions.notes is not None:
        report.add(sessions.notes)
        extra["notes"] = sessions.notes.to_dict()
    if sessions.sessions is not None:
        if sessions.sessions.detail.get("links") or sessions.sessions.loaded:
            report.add(sessions.sessions, sessions_line(sessions.sessions))
        extra["sessions"] = sessions.sessions.to_dict()
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
