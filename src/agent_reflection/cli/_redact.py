"""The ``--no-redact`` option of the ``reflect load`` commands that store agents' free text."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

no_redact_option: Callable[[F], F] = click.option(
    "--no-redact",
    "no_redact",
    is_flag=True,
    help="Store the text as it is: do not replace secrets (tokens, keys, passwords) by "
    "[REDACTED:kind:hash] placeholders. Only for inputs known to hold none (see "
    "docs/loading.md, Secrets).",
)


def warn_no_redact(no_redact: bool, what: str) -> None:
    """Say on stderr that secrets in ``what`` will be stored as they are."""
    if no_redact:
        click.secho(
            f"warning: --no-redact: secrets in {what} are stored as they are (in the database, "
            "its Parquet export and reports)",
            fg="yellow",
            err=True,
        )
