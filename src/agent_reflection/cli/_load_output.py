"""What every ``reflect load`` command prints: one voice for ``--json``, summaries and hints.

Text mode prints each load's summary line as it finishes, then, when it rejected records,
``see why with: reflect rejected --load N``. ``--json`` prints one JSON document on stdout,
``{"db": ..., "loads": [summary, ...]}``, and nothing else there (warnings go to stderr).
``--silent`` prints neither summaries nor warnings; errors and ``--json`` still print.

A load whose status is ``failed`` though it ran to its end (a file it could not read to its
end, or every record rejected: :meth:`agent_reflection.store.db.LoadRun.problem`) prints its
``Error: ...`` line on stderr in every voice, and the command exits 1 once every load has run
and the summaries are out (what the loads stored stays).

The options the commands share are here too: ``--json``, ``--encoding``, ``--no-redact`` and
``--map FIELD=COLUMN``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from agent_reflection.store.db import LoadSummary

F = TypeVar("F", bound=Callable[..., Any])

JSON_HELP = (
    'Print one JSON document on stdout, {"db": ..., "loads": [summary, ...]}, and nothing '
    "else there."
)

json_option: Callable[[F], F] = click.option("--json", "as_json", is_flag=True, help=JSON_HELP)

encoding_option: Callable[[F], F] = click.option(
    "--encoding",
    default=None,
    metavar="NAME",
    help="Text encoding of the input files (e.g. latin-1, cp1252, utf-16). Default: detect "
    "(byte-order mark, UTF-16/32 by NUL pattern, else UTF-8 with bytes that are not UTF-8 "
    "read as Windows-1252). A byte that does not decode under NAME is an error.",
)

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


def parse_maps(pairs: tuple[str, ...], map_file: str | None = None) -> dict[str, str]:
    """``--map FIELD=COLUMN`` pairs (and a ``--map-file`` of FIELD: COLUMN pairs; ``--map``
    wins) as one FIELD -> COLUMN dict; a malformed pair is a usage error."""
    mapping: dict[str, str] = {}
    if map_file:
        import yaml

        loaded = yaml.safe_load(Path(map_file).read_text("utf-8")) or {}
        if not isinstance(loaded, dict):
            raise click.BadParameter(
                "a mapping file holds FIELD: COLUMN pairs", param_hint="--map-file"
            )
        mapping.update({str(k): str(v) for k, v in loaded.items()})
    for pair in pairs:
        field, sep, column = pair.partition("=")
        if not sep or not field.strip() or not column.strip():
            raise click.BadParameter(f"{pair!r}: want FIELD=COLUMN", param_hint="--map")
        mapping[field.strip()] = column.strip()
    return mapping


def echo_warnings(detail: dict[str, Any], silent: bool = False) -> None:
    """The load's warnings (e.g. bytes read as Windows-1252) on stderr."""
    if silent:
        return
    warnings: Iterable[str] = detail.get("warnings") or ()
    for warning in warnings:
        click.echo(f"Warning: {warning}", err=True)


class LoadReport:
    """Collects a command's load summaries and prints them in the chosen voice."""

    def __init__(self, *, as_json: bool, silent: bool, db_path: str | None) -> None:
        self.as_json = as_json
        self.silent = silent
        self.db_path = db_path
        self.summaries: list[LoadSummary] = []

    def add(self, summary: LoadSummary, line: str | None = None, *, warn: bool = True) -> None:
        """One finished load: its warnings (stderr; not with ``warn=False``, for a loader that
        words its own) and, in text mode, its lines now (``line`` instead of the summary's)."""
        self.summaries.append(summary)
        if warn:
            echo_warnings(summary.detail, self.silent)
        if not (self.as_json or self.silent):
            click.echo(line or summary.line())
            if summary.rejected and not summary.error:  # a failed load's error says it
                click.echo(
                    f"{summary.rejected:,} record(s) rejected; "
                    f"see why with: reflect rejected --load {summary.load_id}"
                )
        if summary.error:
            click.secho(f"Error: {summary.error}", fg="red", err=True)

    @property
    def failed(self) -> bool:
        """Whether a load failed (:attr:`LoadSummary.error`): the command then exits 1."""
        return any(s.error for s in self.summaries)

    def document(self, **extra: Any) -> dict[str, Any]:
        from agent_reflection.store.db import resolve_db_path

        loads = [s.to_dict() for s in self.summaries]
        return {"db": str(resolve_db_path(self.db_path)), "loads": loads, **extra}

    def finish(self, **extra: Any) -> None:
        """With ``--json``: the one JSON document (``extra`` keys added to it). Then exit 1
        when a load failed (:attr:`failed`)."""
        if self.as_json:
            click.echo(json.dumps(self.document(**extra), default=str))
        if self.failed:
            raise SystemExit(1)
