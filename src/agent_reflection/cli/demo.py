"""``reflect demo``: simulate an agent session, run the real Stop hook, show the sidecar."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import click

from agent_reflection.cli._groups import cli
from agent_reflection.simulate.session import (
    DEFAULT_SELF_REPORT,
    SimulatedSession,
    simulate_session,
)


@cli.command("demo")
@click.option(
    "--keep",
    "keep_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Build the scratch repository in DIR and keep it (default: a temp folder, removed).",
)
@click.option("--json", "as_json", is_flag=True, help="Print only the sidecar JSON.")
@click.option(
    "--no-self-report",
    is_flag=True,
    help="Simulate an agent that wrote no self-report (the sidecar is then marked degraded).",
)
def demo_command(keep_dir: Path | None, as_json: bool, no_self_report: bool) -> None:
    """Simulate an agent session in a scratch git repo, run the Stop hook, show the sidecar.

    The simulated agent commits a change to an auth module on a feature branch, leaves a new
    test and a README edit uncommitted, and writes its self-report. The real Stop hook then runs
    as Claude Code would run it, and its reflection.v1 sidecar and review risk floor are shown.

    \b
    Examples:
      reflect demo
      reflect demo --keep /tmp/demo      # keep the repo and sidecar to look at
      reflect demo --json | jq .risk
      reflect demo --no-self-report      # what a session without a self-report leaves
    """
    workdir = keep_dir if keep_dir is not None else Path(tempfile.mkdtemp(prefix="reflect-demo-"))
    try:
        session = simulate_session(
            workdir, self_report=None if no_self_report else DEFAULT_SELF_REPORT
        )
        if as_json:
            click.echo(session.record.to_json())
        else:
            show(session, kept=keep_dir is not None)
    finally:
        if keep_dir is None:
            shutil.rmtree(workdir, ignore_errors=True)


def show(session: SimulatedSession, *, kept: bool) -> None:
    record = session.record
    risk = record.risk
    click.secho("Simulated agent session", bold=True)
    click.echo(f"  scratch repo:  {session.repo}{'' if kept else ' (removed afterwards)'}")
    click.echo(f"  task / agent:  {record.task_ref} / {record.agent}, session {record.session_id}")
    click.echo(f"  sidecar:       {session.sidecar_path.relative_to(session.repo)}")
    click.echo()
    verdict = "NEEDS REVIEW" if risk.needs_review else "no review required"
    colour = "red" if risk.needs_review else "green"
    click.secho("Review risk floor (mechanical)", bold=True)
    click.echo("  verdict:  " + click.style(verdict, fg=colour, bold=True))
    click.echo(f"  surface:  {risk.surface} (score {risk.score:g})")
    click.echo(f"  reason:   {risk.reason}")
    click.echo(f"  files changed ({len(record.files_changed)}):")
    for path in record.files_changed:
        click.echo(f"    - {path}")
    click.echo()
    click.secho("Self-report (from the agent)", bold=True)
    confidence = "—" if record.confidence is None else f"{record.confidence:g}"
    click.echo(f"  confidence:         {confidence}")
    mlw = record.most_likely_wrong
    click.echo(
        f"  most likely wrong:  {'—' if mlw is None else f'[{mlw.surface}] {mlw.description}'}"
    )
    click.echo(f"  known, not in diff: {record.known_not_in_diff or '—'}")
    prov = record.provenance
    click.echo()
    click.echo(
        f"provenance: {prov.source}, mode {prov.reflection_mode}, attempt "
        f"{prov.reflection_attempt}, degraded {'yes' if prov.degraded else 'no'}"
    )
    click.echo()
    click.secho("The sidecar (reflection.v1, validated):", bold=True)
    click.echo(record.to_json())
