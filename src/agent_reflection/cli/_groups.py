"""The command groups, shared by the ``cli/*.py`` modules that add commands to them."""

from __future__ import annotations

import os
from collections.abc import Callable

import click

from agent_reflection import __version__

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, prog_name="reflect")
def cli() -> None:
    """Capture coding agents' end-of-run reflection and test whether it is worth building on.

    \b
    Typical flow:
      reflect hook install --project     # capture a reflection.v1 sidecar at every agent stop
      reflect load sidecars .reflection/ # load sidecars, git, boards, runs into DuckDB
      reflect run all                    # Phase-0 experiments -> reports/<run-id>/
      reflect demo                       # all of it on bundled, simulated sample data
    """


def db_option(func: click.decorators.FC) -> click.decorators.FC:
    """``--db PATH``: the DuckDB file (default: $REFLECT_DB, else data/reflection.duckdb);
    ``--wait SECONDS``: how long to wait for another process's lock on it."""
    func = click.option(
        "--wait",
        type=click.FloatRange(min=0),
        default=None,
        expose_value=False,
        callback=_set_lock_wait,
        metavar="SECONDS",
        help="Wait this long for another process that holds the database (DuckDB: one process "
        "at a time). Default: $REFLECT_LOCK_TIMEOUT, else 30.",
    )(func)
    return click.option(
        "--db",
        "db_path",
        type=click.Path(dir_okay=False),
        default=None,
        help="DuckDB file to use. Default: $REFLECT_DB, else data/reflection.duckdb.",
    )(func)


def run_format_option(
    help: str, *extra_formats: str
) -> Callable[[click.decorators.FC], click.decorators.FC]:
    """``--format``: the format of run-log files (jsonl | sqlite | swe-agent, plus
    ``extra_formats`` where a command reads more), default detected; ``help`` says what the
    command reads."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(["jsonl", "sqlite", "swe-agent", *extra_formats]),
        default=None,
        help=help,
    )


def _set_lock_wait(_ctx: click.Context, _param: click.Parameter, value: float | None) -> None:
    # Through the environment so that every connection of this command, and the notebook
    # kernels `reflect run` starts, wait the same.
    if value is not None:
        os.environ["REFLECT_LOCK_TIMEOUT"] = f"{value:g}"


def silent_option(func: click.decorators.FC) -> click.decorators.FC:
    """``--silent``, the same on every loader: nothing on stdout or stderr but errors and
    ``--json`` output."""
    return click.option(
        "--silent",
        is_flag=True,
        help="No progress bar, summary line or warnings; errors and --json output still print.",
    )(func)


@cli.group("load")
def load_group() -> None:
    """Load sidecars, git histories, boards, labels, transcripts and run logs into DuckDB.

    Every load is idempotent (re-running changes nothing), records itself in the `loads`
    table, keeps each record it cannot load in `rejected` with the reason, and prints
    `read = loaded + rejected + already present`.
    """


@cli.group("hook")
def hook_group() -> None:
    """Install, remove or inspect the Claude Code hooks."""


@cli.group("run", invoke_without_command=False)
def run_group() -> None:
    """Run the Phase-0 experiment notebooks (and the in-loop and cycle notebooks) by papermill."""


@cli.group("cycle")
def cycle_group() -> None:
    """The reflection cycle: a rule engine over agent run logs."""


@cli.group("agent")
def agent_group() -> None:
    """Install the reflection (unblocker) subagent definition."""
