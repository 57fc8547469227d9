"""``reflect prereg power``: the minimum samples the pre-registration's effects imply.

The command object :data:`power` is attached to the ``reflect prereg`` group.
"""

from __future__ import annotations

import click


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:g}"


@click.command("power")
@click.option(
    "--prereg",
    "prereg_path",
    type=click.Path(exists=True, dir_okay=False),
    help="Pre-registration TOML (default, first that applies: $REFLECT_PREREGISTRATION, "
    "./preregistration.toml, the registered file).",
)
def power(prereg_path: str | None) -> None:
    """Print each experiment's smallest useful effect and the sample it needs.

    The minimum sample is derived, not chosen: the smallest sample at which, at the
    registered confidence level, each decision has the registered power: "continue" (the
    interval clears the null when the truth is the smallest useful effect) and "kill" (the
    interval falls below it when there is no effect). AUC: Hanley-McNeil variance, rows per
    class; proportions: score (Wilson) test.

    \b
    Examples:
      reflect prereg power
      reflect prereg power --prereg other.toml
    """
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
                _fmt(r.smallest_useful),
                _fmt(r.null_value),
                f"{r.confidence_level:.0%}",
                f"{r.power:.0%}",
                "—" if s is None else str(s.n_to_continue),
                "—" if s is None else str(s.n_to_kill),
                "not registered" if s is None else str(s.n),
                f"{r.unit}; {r.note}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    for row in rows:
        cells = [c.ljust(w) for c, w in zip(row, widths, strict=False)]
        click.echo("  ".join([*cells, row[-1]]).rstrip())
