"""``reflect demo``: capture a simulated session with the real Stop hook, then run Phase-0."""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from agent_reflection.cli._groups import cli
from agent_reflection.simulate import DEMO_LOOP_SESSIONS

if TYPE_CHECKING:  # the simulators are imported when the demo runs, not for `reflect --help`
    from concurrent.futures import Future

    from agent_reflection.simulate.loop import LoopData
    from agent_reflection.simulate.session import SimulatedSession

T = TypeVar("T")


@cli.command("demo")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("reports/demo"),
    show_default=True,
    help="Folder for the demo's databases, git repos, board export and reports.",
)
@click.option("--seed", type=int, default=7, show_default=True, help="Simulator seed.")
@click.option(
    "--session-only",
    is_flag=True,
    help="Only simulate the agent session and show its sidecar (no experiments; seconds).",
)
@click.option(
    "--keep",
    "keep_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Build the scratch session repository in DIR and keep it (default: a temp folder).",
)
@click.option(
    "--loop-sessions",
    type=click.IntRange(min=0),
    default=DEMO_LOOP_SESSIONS,
    show_default=True,
    help="Simulated sessions for P1 on loop labels (step 3; 0 skips it). Each runs the real "
    "hooks: about a fifth of a second per session.",
)
@click.option("--json", "as_json", is_flag=True, help="Print only the session's sidecar JSON.")
@click.option(
    "--no-self-report",
    is_flag=True,
    help="Simulate an agent that wrote no self-report (the sidecar is then marked degraded).",
)
def demo_command(
    out_dir: Path,
    seed: int,
    session_only: bool,
    keep_dir: Path | None,
    loop_sessions: int,
    as_json: bool,
    no_self_report: bool,
) -> None:
    """The whole loop on simulated data: capture a session, then run Phase-0 end to end.

    \b
    1. Capture: a simulated agent commits a change to an auth module on a feature branch,
       leaves a new test and a README edit uncommitted, and writes its self-report; the real
       Stop hook runs as Claude Code would run it and writes a reflection.v1 sidecar.
    2. Phase-0: a seeded simulator with known truth (sidecars, a real git repo with reverts and
       fixes, a board export, labels with AUC 0.70) is loaded into DuckDB, and P1, P2 and P3 run
       as notebooks under papermill; the report with the gate decision goes to OUT/reports/.
    3. P1 on loop labels: simulated sessions in one real repository run the real SessionStart,
       Stop and post-commit hooks; later commits revert or fix some of their work; `reflect
       load git --szz` links each session to its commits and derives its outcome, which the
       demo checks against the simulator's truth; then P1 runs on those labels (an override
       of the pre-registered label source: EXPLORATORY), its report beside step 2's.

    \b
    Examples:
      reflect demo                       # all three steps, reports under reports/demo/reports/
      reflect demo --session-only        # step 1 only
      reflect demo --session-only --json | jq .risk
      reflect demo --out /tmp/demo --seed 3
      reflect demo --loop-sessions 0     # steps 1 and 2 only
    """
    from agent_reflection.hooks.bytecode import compile_package
    from agent_reflection.simulate.session import DEFAULT_SELF_REPORT, simulate_session

    # the hooks, loads and kernels the demo starts read the package's bytecode, as they do
    # after `reflect hook install`: where PYTHONDONTWRITEBYTECODE is set and the install is
    # editable (README command 1), each compiled our modules again (12.7 s vs 14.2-15.1 s)
    compile_package()
    workdir = keep_dir if keep_dir is not None else Path(tempfile.mkdtemp(prefix="reflect-demo-"))
    try:
        session = simulate_session(
            workdir, self_report=None if no_self_report else DEFAULT_SELF_REPORT
        )
        if as_json:
            click.echo(session.record.to_json())
        else:
            show(session, kept=keep_dir is not None, brief=not session_only)
    finally:
        if keep_dir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    if session_only or as_json:
        return
    from agent_reflection.execute.kernel import clean_up_on_sigterm
    from agent_reflection.simulate.loop import build_loop_demo
    from agent_reflection.simulate.phase0 import run_demo

    clean_up_on_sigterm()
    # step 3's sessions run their hooks while step 2's notebooks run (other files, other
    # processes): on a shared machine the demo takes seconds less
    if loop_sessions:
        loop = in_background(build_loop_demo, out_dir, sessions=loop_sessions, seed=seed)
    click.echo()
    click.secho("Phase-0 on simulated data (P1, P2, P3 under papermill)", bold=True)
    result = run_demo(out_dir, seed=seed)
    click.echo(result.describe())
    report = result.report
    from agent_reflection.cli.run import print_verdicts

    print_verdicts(report)  # as `reflect run all` prints: verdict, number, n, what'd change it
    click.secho(report.gate.headline, bold=True)
    click.echo(f"report: {report.index_html}")
    click.echo(f"summary: {report.summary_md}")
    if loop_sessions:
        show_loop(out_dir, loop_sessions, loop.result(), f"{report.run_id}-p1-loop")


def show_loop(out_dir: Path, sessions: int, data: LoopData, run_id: str) -> None:
    """Step 3: P1 on loop labels of simulated sessions (see ``simulate/loop.py``)."""
    from agent_reflection.cli.run import print_verdicts
    from agent_reflection.simulate.loop import run_loop_demo

    click.echo()
    click.secho(f"P1 on loop labels ({sessions} simulated sessions, real hooks)", bold=True)
    report = run_loop_demo(out_dir, data, run_id=run_id)
    click.echo(data.describe())
    print_verdicts(report)
    click.echo(
        "  (EXPLORATORY: preregistration.toml registers label_source = corpus; this run "
        "overrides it, and decides nothing: the gate above stands)"
    )
    click.echo(f"loop report: {report.index_html}")


def in_background(func: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
    """``func(*args, **kwargs)`` started in a daemon thread (an interrupted demo exits without
    waiting for it); the future's ``result()`` waits and returns its value or raises its
    exception."""
    from concurrent.futures import Future

    future: Future[T] = Future()

    def run() -> None:
        try:
            future.set_result(func(*args, **kwargs))
        except BaseException as exc:  # re-raised in the caller's thread by result()
            future.set_exception(exc)

    threading.Thread(target=run, daemon=True).start()
    return future


def show(session: SimulatedSession, *, kept: bool, brief: bool = False) -> None:
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
    if brief:
        return
    click.echo()
    click.secho("The sidecar (reflection.v1, validated):", bold=True)
    click.echo(record.to_json())
