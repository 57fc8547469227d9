"""The ``--encoding`` option of the ``reflect load`` commands that read text files."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

encoding_option: Callable[[F], F] = click.option(
    "--encoding",
    default=None,
    metavar="NAME",
    help="Text encoding of the input files (e.g. latin-1, cp1252, utf-16). Default: detect "
    "(byte-order mark, UTF-16/32 by NUL pattern, else UTF-8 with bytes that are not UTF-8 "
    "read as Windows-1252). A byte that does not decode under NAME is an error.",
)


def echo_warnings(detail: dict[str, Any], silent: bool = False) -> None:
    """The load's warnings (e.g. bytes read as Windows-1252) on stderr."""
    if silent:
        return
    warnings: Iterable[str] = detail.get("warnings") or ()
    for warning in warnings:
        click.echo(f"Warning: {warning}", err=True)
