"""``reflect serve``: the OTLP/HTTP receiver for Claude Code's telemetry."""

from __future__ import annotations

import contextlib

import click

from agent_reflection.cli._groups import cli

_INSTALL_HINT = (
    "reflect serve needs the 'serve' extra (starlette, uvicorn, opentelemetry-proto): in a "
    "checkout of this repository, pip install -e '.[serve]'; from the package index, "
    "pip install 'agent-reflection[serve]'"
)


@cli.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=4318,
    show_default=True,
    help="Port (OTLP/HTTP's default; 0: any free port, printed at start).",
)
@click.option(
    "--db",
    "db_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="DuckDB file to fill. Default: $REFLECT_DB, else data/reflection.duckdb.",
)
@click.option(
    "--spool",
    "spool_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Write-ahead folder: exports are fsync'd here before they are acknowledged. "
    "Default: <db>.otlp-spool/ beside the database.",
)
@click.option(
    "--token",
    default=None,
    help="Require 'Authorization: Bearer TOKEN' on every export. Default: $REFLECT_SERVE_TOKEN "
    "(none: no authentication; keep the server on 127.0.0.1 then).",
)
@click.option(
    "--max-body",
    "max_body_mb",
    type=click.FloatRange(min=0.001),
    default=16.0,
    show_default=True,
    help="Largest request body accepted, in MiB (also after gzip); larger ones get 413.",
)
@click.option(
    "--spool-limit",
    "spool_limit_mb",
    type=click.FloatRange(min=0.001),
    default=1024.0,
    show_default=True,
    help="MiB queued for a database that refuses writes before exports get 503 + Retry-After.",
)
def serve_command(
    host: str,
    port: int,
    db_path: str | None,
    spool_dir: str | None,
    token: str | None,
    max_body_mb: float,
    spool_limit_mb: float,
) -> None:
    """Receive OTLP/HTTP logs and metrics (Claude Code's telemetry) into the database.

    Accepts /v1/logs, /v1/metrics and /v1/traces, protobuf or JSON, gzip or not. Every record
    is kept in otel_records; Claude Code's events fill otel_tool_results, otel_api_requests,
    otel_api_errors, otel_prompts, otel_tool_decisions and otel_sessions, metric data points
    otel_metric_points, and tool results become run outcomes the reflection cycle reads
    (reflect cycle watch DB --format otlp). An export is acknowledged only once it is
    fsync'd to the spool folder; the database is written from there, so a locked or failing
    database delays rows but never loses them. Prints the settings for Claude Code on start.

    \b
    Examples:
      reflect serve                                  # 127.0.0.1:4318 -> data/reflection.duckdb
      reflect serve --db live.duckdb --token s3cret  # exporters must send the bearer token
    """
    from pathlib import Path

    try:
        from agent_reflection.serve.app import ServeSettings, run_server
    except ImportError as exc:
        raise click.ClickException(f"{_INSTALL_HINT} ({exc})") from None
    from agent_reflection import config
    from agent_reflection.store.db import resolve_db_path

    database = resolve_db_path(db_path)
    database.parent.mkdir(parents=True, exist_ok=True)
    token, _ = config.resolve(config.SERVE_TOKEN, cli=token or None)
    settings = ServeSettings(
        db_path=database,
        spool_dir=Path(spool_dir) if spool_dir else Path(f"{database}.otlp-spool"),
        host=host,
        port=port,
        token=token,
        max_body_bytes=int(max_body_mb * 1024 * 1024),
        spool_limit_bytes=int(spool_limit_mb * 1024 * 1024),
    )

    # uvicorn re-raises Ctrl-C after its graceful shutdown (the spool drained, the load closed)
    with contextlib.suppress(KeyboardInterrupt):
        run_server(settings, click.echo)
    click.echo("reflect serve: stopped")
