"""The ``reflect`` command: parses, calls the library, reports. No computation lives here.

Each ``cli/<area>.py`` module attaches its commands to :data:`cli` (or to a group defined in
``cli/_groups.py``). The groups import a module when one of its commands is asked for
(``_groups.COMMAND_MODULES``), so a command starts without importing the others; a new area
works with no edit here. Modules import heavy libraries (pandas, papermill) inside their
command functions, keeping ``reflect --help`` fast.
"""

from __future__ import annotations

import re
import sys

import click

from agent_reflection.cli._groups import cli
from agent_reflection.errors import ReflectionError

__all__ = ["cli", "main"]


def _skip_iri_grammar() -> None:
    """Keep jsonschema from building its IRI grammar in this process.

    nbformat (under papermill, jupytext and nbconvert) imports jsonschema, which imports
    rfc3987-syntax when it is installed (JupyterLab's dependencies bring it), and that builds an
    Earley parser at import: 2.3 s of CPU on every ``reflect run``. The grammar only serves the
    ``iri`` string formats of a format checker, which nothing in this command uses; without the
    module jsonschema simply does not offer those formats.
    """
    if "jsonschema" not in sys.modules:
        sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``reflect`` console script and ``python -m agent_reflection``."""
    _skip_iri_grammar()
    try:
        cli.main(args=argv, prog_name="reflect", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except ReflectionError as exc:
        click.secho(f"Error: {exc}", fg="red", err=True)
        sys.exit(1)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as exc:
        # A lock conflict DuckDB raised outside db.connect (which turns its own into
        # DatabaseLocked): one line, not a traceback.
        from agent_reflection.store.db import DatabaseLocked, lock_holder

        holder = lock_holder(str(exc)) if type(exc).__module__.startswith("_duckdb") else None
        if holder is None:
            raise
        # The file named in DuckDB's message: Could not set lock on file "PATH".
        found = re.search(r'file "([^"]*)"', str(exc))
        locked = DatabaseLocked(found[1] if found else "the database", holder, 0.0)
        click.secho(f"Error: {locked}", fg="red", err=True)
        sys.exit(1)
