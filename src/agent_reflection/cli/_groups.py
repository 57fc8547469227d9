"""The command groups, shared by the ``cli/*.py`` modules that add commands to them.

The groups load their commands lazily: ``reflect load git`` imports ``cli/load_git.py`` and
nothing else of ``cli/`` (:data:`COMMAND_MODULES` says which module defines which command), so
one command's start-up does not pay for every other command's imports. Importing every module
instead (a plain click group) adds about 0.1 s to each command: ``reflect --help`` 0.13 -> 0.25 s,
a no-change ``reflect load git`` 0.51 -> 0.63 s (whole processes, medians of 21, load 4.5-5.9).
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Callable, Mapping

import click

from agent_reflection import __version__

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

#: The ``cli/`` module (without ``.py``) that defines each command, by the path of its group.
#: A group imports its modules and every module not named here when it lists its commands, and
#: every module when asked for a command it does not know, so a command missing here still
#: works (only slower to start); tests/test_cli_lazy.py checks that every command is listed.
COMMAND_MODULES: Mapping[str, Mapping[str, str]] = {
    "reflect": {
        "cadence": "cadence",
        "demo": "demo",
        "export": "export",
        "prereg": "prereg",
        "rejected": "rejected",
        "risk": "risk",
        "serve": "serve",
        "status": "status",
    },
    "reflect load": {
        "board": "load_board",
        "ci": "load_ci",
        "git": "load_git",
        "labels": "labels",
        "match": "load_board",
        "reflection-replies": "load_replies",
        "runs": "load_runs",
        "sidecars": "load_sidecars",
        "transcripts": "load_transcripts",
    },
    "reflect hook": {"install": "hook", "status": "hook", "uninstall": "hook"},
    "reflect run": {
        "agent-vs-human": "run",
        "all": "run",
        "cycle": "run",
        "in-loop": "run",
        "p1": "run",
        "p2": "run",
        "p3": "run",
    },
    "reflect cycle": {"resume": "cycle", "run": "cycle", "watch": "cycle"},
    "reflect p2": {"check-labels": "p2", "sheet": "p2"},
    "reflect agent": {"install": "agent"},
}

_PACKAGE = "agent_reflection.cli"


def register_all_commands() -> None:
    """Import every ``cli/*.py`` module, so every command is attached to its group (the command
    reference and the tests walk ``cli.commands``)."""
    for module in _cli_modules():
        importlib.import_module(f"{_PACKAGE}.{module}")


def _register_unlisted_commands() -> None:
    """Import the ``cli/*.py`` modules :data:`COMMAND_MODULES` does not name."""
    listed = {module for commands in COMMAND_MODULES.values() for module in commands.values()}
    for module in _cli_modules():
        if module not in listed:
            importlib.import_module(f"{_PACKAGE}.{module}")


def _cli_modules() -> list[str]:
    package = importlib.import_module(_PACKAGE)
    names = (m.name for m in pkgutil.iter_modules(package.__path__))
    return sorted(name for name in names if not name.startswith("_"))


class LazyGroup(click.Group):
    """A group that imports the module defining a command when the command is first asked for.

    ``path`` is the group's key in :data:`COMMAND_MODULES` (``"reflect load"``).
    """

    def __init__(self, *args: object, path: str = "reflect", **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.path = path

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            module = COMMAND_MODULES.get(self.path, {}).get(cmd_name)
            if module is not None:
                importlib.import_module(f"{_PACKAGE}.{module}")
            if cmd_name not in self.commands:  # not in the map (yet): look everywhere
                register_all_commands()
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        for module in sorted(set(COMMAND_MODULES.get(self.path, {}).values())):
            importlib.import_module(f"{_PACKAGE}.{module}")
        _register_unlisted_commands()
        return sorted(self.commands)


@click.group(cls=LazyGroup, context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, prog_name="reflect")
def cli() -> None:
    """Capture coding agents' end-of-run reflection and test whether it is worth building on.

    \b
    Typical flow:
      reflect hook install --only stop   # capture a reflection.v1 sidecar at every agent stop
                                         # (without --only: also the in-loop hooks)
      reflect load sidecars .reflection/ # load sidecars, git, boards, runs into DuckDB
      reflect status                     # what is loaded, what each experiment needs next
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
        from agent_reflection import config

        os.environ[config.LOCK_TIMEOUT.env] = f"{value:g}"


def silent_option(func: click.decorators.FC) -> click.decorators.FC:
    """``--silent``, the same on every loader: nothing on stdout or stderr but errors and
    ``--json`` output."""
    return click.option(
        "--silent",
        is_flag=True,
        help="No progress bar, summary line or warnings; errors and --json output still print.",
    )(func)


@cli.group("load", cls=LazyGroup, path="reflect load")
def load_group() -> None:
    """Load sidecars, git histories, boards, labels, transcripts and run logs into DuckDB.

    Every load is idempotent (re-running changes nothing), records itself in the `loads`
    table, keeps each record it cannot load in `rejected` with the reason, and prints
    `read = loaded + rejected + already present`. A load of files (labels, board, ci, runs,
    transcripts, sidecars) that could not read a file to its end, or rejected every record, is
    marked failed, says why on stderr and makes the command exit 1; what it loaded stays. An
    empty input loads nothing and warns.
    """


@cli.group("hook", cls=LazyGroup, path="reflect hook")
def hook_group() -> None:
    """Install, remove or inspect the Claude Code hooks."""


@cli.group("run", cls=LazyGroup, path="reflect run", invoke_without_command=False)
def run_group() -> None:
    """Run the Phase-0 experiment notebooks (and the in-loop and cycle notebooks) by papermill."""


@cli.group("cycle", cls=LazyGroup, path="reflect cycle")
def cycle_group() -> None:
    """The reflection cycle: a rule engine over agent run logs."""


@cli.group("p2", cls=LazyGroup, path="reflect p2")
def p2_group() -> None:
    """Label P2's signals yourself: draw a blind reading sheet of them, check the filled labels."""


@cli.group("agent", cls=LazyGroup, path="reflect agent")
def agent_group() -> None:
    """Install the reflection (unblocker) subagent definition."""
