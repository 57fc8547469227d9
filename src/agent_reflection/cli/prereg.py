"""``reflect prereg freeze|status|power``: freeze the pre-registration, check a run's file, and
the minimum samples its effects imply."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from agent_reflection.cli._groups import cli

if TYPE_CHECKING:
    from agent_reflection.experiments.p1.analysis import OperatingCharacteristics
    from agent_reflection.experiments.registration import P1Params

PREREG_OPTION_HELP = (
    "Pre-registration TOML (default, first that applies: $REFLECT_PREREGISTRATION, "
    "./preregistration.toml, the registered file)."
)


@cli.group("prereg")
def prereg_group() -> None:
    """Freeze the pre-registration and check which file a run would use.

    \b
    The effective file of a run, first that applies:
      1. --prereg FILE
      2. $REFLECT_PREREGISTRATION
      3. ./preregistration.toml in the folder you run reflect in
      4. the registered file (the checkout's preregistration.toml, or the wheel's copy)
    A run is EXPLORATORY unless that file's SHA-256 and the analysis code it executes (the
    notebooks, first of $REFLECT_NOTEBOOKS, ./notebooks, the registered ones; the experiment
    and statistics code) are the ones registered in the preregistration.lock next to the
    registered file, every parameter it used is the registered value, the lock's newest entry
    predates the data's loads, and the data are not among those the registration names as
    seen. docs/experiments.md lists every reason.
    """


@prereg_group.command("freeze")
@click.option(
    "--reason",
    required=True,
    help="Why the file is frozen or amended (recorded in the lock with the UTC time).",
)
@click.option(
    "--prereg",
    "prereg_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="File to freeze (default: the registered file). Only the lock next to the registered "
    "file governs runs.",
)
def freeze_command(reason: str, prereg_path: Path | None) -> None:
    """Register the pre-registration's SHA-256 and the analysis code in preregistration.lock.

    The lock sits next to the file. The first freeze writes it; each later one whose file or
    analysis code changed appends an amendment with its date and reason (earlier entries are
    never rewritten; each entry hashes the lock before it and itself, so a hand edit is
    detected). The analysis code is every file that computes a verdict: the registered
    experiment and summary notebooks and the package's experiments/, stats/ and
    sql/experiments/ files, each by SHA-256. An unchanged file and code write nothing. The
    file must be a valid pre-registration. Data loaded before an amendment that changes the
    file are not pre-registered for it: runs on them are EXPLORATORY (an amendment that only
    registers new code changes no rule).

    \b
    Examples:
      reflect prereg freeze --reason "Phase-0 parameters agreed in review"
      reflect prereg freeze --reason "P3: per-source as_of (issue 42)"   # an amendment
    """
    from agent_reflection.experiments.analysis_code import registered_code
    from agent_reflection.experiments.registration import (
        freeze,
        load_preregistration,
        lock_path_for,
        registered_preregistration_path,
    )

    if not reason.strip():
        raise click.BadParameter("must say why (non-empty)", param_hint="--reason")
    registered = registered_preregistration_path()
    path = (prereg_path or registered).resolve()
    prereg = load_preregistration(path)  # never freeze a file a run would reject
    lock_path = lock_path_for(path)
    outcome = freeze(
        lock_path,
        file_name=path.name,
        sha256=prereg.sha256,
        reason=reason,
        now=datetime.now(UTC),
        code=registered_code(),
    )
    newest = outcome.lock.newest
    if outcome.action == "unchanged":
        click.echo(
            f"unchanged: {lock_path} already registers {path.name} (SHA-256 {prereg.sha256}, "
            f"{newest.at}) and the analysis code; nothing written"
        )
    else:
        click.echo(f"{outcome.action}: {path.name} SHA-256 {newest.sha256} at {newest.at}")
        click.echo(f"analysis code: {len(newest.code or ())} files, SHA-256 {newest.code_sha256}")
        click.echo(f"reason: {newest.reason}")
        click.echo(f"lock: {lock_path} ({len(outcome.lock.amendments)} amendment(s))")
    if path != registered.resolve():
        click.echo(
            f"note: runs are checked against {lock_path_for(registered)}, not this lock", err=True
        )


@prereg_group.command("status")
@click.option(
    "--prereg",
    "prereg_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help=PREREG_OPTION_HELP,
)
def status_command(prereg_path: Path | None) -> None:
    """Say which file and notebooks a run would use, and whether they and the analysis code
    match the lock (exit 1 if not).

    \b
    Examples:
      reflect prereg status
      REFLECT_PREREGISTRATION=edited.toml reflect prereg status   # EXPLORATORY, exit 1
    """
    from agent_reflection.experiments.analysis_code import (
        EXPERIMENTS,
        SUMMARY_NOTEBOOK,
        executed_code,
        notebooks_source,
    )
    from agent_reflection.experiments.registration import load_for_run

    folder, chosen = notebooks_source()
    code = executed_code(folder, [*EXPERIMENTS.values(), SUMMARY_NOTEBOOK])
    prereg = load_for_run(prereg_path, {}, code=code, notebooks_from=f"{chosen} ({folder})")
    registration = prereg.registration
    assert registration is not None  # load_for_run always checks the lock
    click.echo(f"effective file: {registration.path} (chosen by {registration.route})")
    click.echo(f"SHA-256:        {registration.sha256}")
    click.echo(f"notebooks:      {folder} (chosen by {chosen})")
    click.echo(f"lock:           {registration.lock_path}")
    lock = registration.lock
    if lock is not None:
        click.echo(f"frozen:         {lock.frozen.at} — {lock.frozen.reason}")
        for a in lock.amendments:
            click.echo(f"amended:        {a.at} — {a.reason}")
        click.echo(f"registered:     {lock.registered_sha256}")
    if registration.matches:
        click.echo("status: matches the lock — runs with this file are pre-registered")
        return
    click.echo("status: EXPLORATORY — runs with this file are not pre-registered:")
    for reason in registration.reasons:
        click.echo(f"  - {reason}")
    raise SystemExit(1)


@prereg_group.command("power")
@click.option(
    "--prereg",
    "prereg_path",
    type=click.Path(exists=True, dir_okay=False),
    help=PREREG_OPTION_HELP,
)
def power(prereg_path: str | None) -> None:
    """Print each experiment's smallest useful effect, the sample it needs, and P1's power.

    The minimum sample is derived, not chosen: the smallest sample at which, at the
    registered confidence level, each decision has the registered power: "continue" (the
    interval clears the null when the truth is the smallest useful effect) and "kill" (the
    interval falls below it when there is no effect). AUC: Hanley-McNeil variance, rows per
    class; proportions: score (Wilson) test. P1 decides by its interval's precision, not by a
    row count: the lines after the table give how often each P1 decision happens at its
    registered precision target, at a true AUC of 0.5 and of the smallest useful AUC.

    \b
    Examples:
      reflect prereg power
      reflect prereg power --prereg other.toml
    """
    from agent_reflection.experiments.p1.analysis import operating_characteristics
    from agent_reflection.experiments.registration import load_preregistration, power_table

    prereg = load_preregistration(prereg_path)
    click.echo(f"pre-registration: {prereg.path} (sha256 {prereg.sha256[:12]})")
    header = (
        "exp",
        "statistic",
        "useful",
        "null",
        "level",
        "power",
        "continue",
        "kill",
        "minimum",
        "unit / method",
    )
    rows = [header]
    for r in power_table(prereg):
        s = r.size
        rows.append(
            (
                r.experiment,
                r.statistic,
                f"{r.smallest_useful:g}",
                f"{r.null_value:g}",
                f"{r.confidence_level:.0%}",
                f"{r.power:.0%}",
                str(s.n_to_continue),
                str(s.n_to_kill),
                str(s.n),
                f"{r.unit}; {r.note}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    for row in rows:
        cells = [c.ljust(w) for c, w in zip(row, widths, strict=False)]
        click.echo("  ".join([*cells, row[-1]]).rstrip())
    for line in p1_power_lines(operating_characteristics(prereg.p1), prereg.p1):
        click.echo(line)


def p1_power_lines(oc: OperatingCharacteristics, p1: P1Params) -> list[str]:
    """P1's decisions at its precision target: how often each happens at a true AUC of 0.5 and
    of the smallest useful AUC."""
    useful = p1.smallest_useful_auc
    target = (
        f"registered max_ci_half_width {oc.half_width:g}"
        if p1.max_ci_half_width > 0
        else f"half-width {oc.half_width:.4f}, derived from power (no max_ci_half_width)"
    )
    cont = (
        f"lower bound > 0.5 and upper bound >= {useful:g}"
        if oc.continue_rule == "interval"
        else f"lower bound > 0.5 and estimate >= {useful:g}"
    )
    return [
        "",
        f"p1 decisions at the precision target ({target}; SE {oc.se:.4f}, "
        f"{oc.confidence_level:.0%} interval; normal approximation):",
        f"  continue ({cont}): {oc.at_useful.p_continue:.1%} at a true AUC of {useful:g}, "
        f"{oc.at_null.p_continue:.1%} at 0.5",
        f"  kill (upper bound < {useful:g}): {oc.at_null.p_kill:.1%} at a true AUC of 0.5, "
        f"{oc.at_useful.p_kill:.1%} at {useful:g}",
        f"  neither (inconclusive): {oc.at_useful.p_undecided:.1%} at {useful:g}, "
        f"{oc.at_null.p_undecided:.1%} at 0.5",
        f'  a continue that also needed the estimate >= {useful:g} ("estimate" rule): '
        f"{oc.estimate_rule_at_useful.p_continue:.1%} at {useful:g}, at any precision",
        "  A narrower interval (more rows, better balance, less clustering) gives each decision "
        "more power; a wider one that decides nothing and includes 0.5 is insufficient-data.",
        f"  Rows per class reaching the target with equal classes and independent rows: "
        f"{oc.rows_per_class} (Hanley-McNeil); an imbalanced or clustered sample needs more.",
    ]
