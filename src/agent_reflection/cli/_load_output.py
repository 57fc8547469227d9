"""What every ``reflect load`` command prints: one voice for ``--json``, summaries and hints.

Text mode prints each load's summary line as it finishes, then, when it rejected records,
``see why with: reflect rejected --load N``. ``--json`` prints one JSON document on stdout,
``{"db": ..., "loads": [summary, ...]}``, and nothing else there (warnings go to stderr).
``--silent`` prints neither summaries nor warnings; errors and ``--json`` still print.

A load whose status is ``failed`` though it ran to its end (a file it could not read to its
end, or every record rejected: :func:`agent_reflection.store.db.load_problem`) prints its
``Error: ...`` line on stderr in every voice, and the command exits 1 once every load has run
and the summaries are out (what the loads stored stays).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from agent_reflection.cli._encoding import echo_warnings

if TYPE_CHECKING:
    from agent_reflection.store.db import LoadSummary

F = TypeVar("F", bound=Callable[..., Any])

JSON_HELP = (
    'Print one JSON document on stdout, {"db": ..., "loads": [summary, ...]}, and nothing '
    "else there."
)

json_option: Callable[[F], F] = click.option("--json", "as_json", is_flag=True, help=JSON_HELP)


def rejected_hint(summary: LoadSummary) -> str | None:
    """The line that tells how to see a load's rejects (None when it rejected nothing, or
    when the load failed: its error says it)."""
    if not summary.rejected or summary.error:
        return None
    return (
        f"{summary.rejected:,} record(s) rejected; "
        f"see why with: reflect rejected --load {summary.load_id}"
    )


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
            hint = rejected_hint(summary)
            if hint:
                click.echo(hint)
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
