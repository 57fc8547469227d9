"""``reflect cycle run | watch | resume``: the reflection cycle's commands."""

from __future__ import annotations

import contextlib
import json
import signal
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import click

from agent_reflection.cli._groups import cycle_group, db_option, run_format_option
from agent_reflection.errors import ReflectionError

if TYPE_CHECKING:
    from agent_reflection.cycle.engine import CycleResult
    from agent_reflection.store.db import LoadSummary

#: Signals that stop ``reflect cycle watch`` cleanly (the database closed, "stopped" said).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

_CONFIG = click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="TOML file with a [reflection] table (and [reflection.llm]); default: built-in defaults.",
)
_EVENTS = click.option(
    "--events-jsonl",
    is_flag=True,
    help="Also write every emitted event to stdout as one JSON line (for other tools).",
)
#: Findings printed per pass unless --limit says otherwise: a screenful and a half; the rest are
#: in the findings table and the event stream.
DEFAULT_LIMIT = 100
_LIMIT = click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=DEFAULT_LIMIT,
    show_default=True,
    help="Print at most this many findings per pass, then how many more there are (all are "
    "stored, acted on and, with --events-jsonl, streamed); 0 prints every one.",
)
_LOOKBACK = click.option(
    "--lookback",
    "lookback_seconds",
    type=click.IntRange(min=1),
    default=None,
    help="Window of the rules in seconds (overrides the config; default 86400).",
)


def _write_event(event: dict[str, Any]) -> None:
    """``--events-jsonl``: the event as one JSON line on stdout."""
    sys.stdout.write(json.dumps(event, default=str) + "\n")
    sys.stdout.flush()


def _report(
    result: CycleResult, header: str, events_jsonl: bool, limit: int
) -> Callable[[str], None]:
    """Print a pass's header, its first ``limit`` findings (0: all) and pause actions; returns
    the printer used (stderr when stdout carries the JSON-lines event stream)."""

    def out(text: str) -> None:
        click.echo(text, err=events_jsonl)

    findings = result.findings
    shown = len(findings) if limit == 0 else min(limit, len(findings))
    out(f"{header}: {len(findings):,} finding(s)")
    for index in range(shown):
        out(f"  {findings[index].line()}")
    if shown < len(findings):
        out(
            f"  ... {len(findings) - shown:,} more finding(s) not printed (--limit {limit}); "
            f"every one is stored: table findings, cycle_run_id {result.cycle_run_id}"
        )
    for line in result.pause.lines():
        out(line)
    return out


def window_hint(con: Any, clock: datetime, lookback_seconds: int, now: str | None) -> str | None:
    """A note when every loaded outcome lies outside the rules' window (None otherwise, and
    under ``--now latest``, whose window ends at the newest outcome)."""
    from agent_reflection.store.db import read_sql

    if now == "latest":
        return None
    row = con.execute(read_sql("cycle/outcome_time_range.sql")).fetchone()
    if row is None or row[0] is None:
        return None
    first, last = (t.astimezone(UTC) for t in row)
    start = clock - timedelta(seconds=lookback_seconds)
    if last < start:
        ago = (clock - last).total_seconds()
        span = f"{ago / 86400:,.0f} day(s)" if ago >= 86400 else f"{ago / 3600:,.1f} hour(s)"
        where = f"the newest finished at {last.isoformat()}, {span} before the clock"
    elif first > clock:
        where = f"the oldest finished at {first.isoformat()}, after the clock"
    else:
        return None
    return (
        f"note: no loaded run outcome lies in the window {start.isoformat()} .. "
        f"{clock.isoformat()} ({where}); to run the rules on the loaded history, "
        "pass --now latest"
    )


@cycle_group.command("run")
@click.argument("sources", nargs=-1, type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--now",
    default=None,
    help="The clock the rules run against: ISO-8601, epoch seconds, or 'latest' (the newest "
    "outcome's finish time, for replayed history). Default: the wall clock.",
)
@click.option(
    "--apply",
    is_flag=True,
    help="Really act: pause tasks (our database and a SQLite source's tasks table), log the "
    "findings and tier 2 in the source's interaction_log, remove paused tasks' scheduler jobs. "
    "Without it: a dry run that says what it would do.",
)
@run_format_option("Format of SOURCES (default: detected per file).")
@click.option(
    "--scheduler-db",
    "scheduler_db",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="The platform's APScheduler job store (SQLite, table apscheduler_jobs) whose jobs of "
    "paused tasks --apply removes. Default: scheduler.db beside each SQLite source, if any.",
)
@_LOOKBACK
@_CONFIG
@_EVENTS
@_LIMIT
@db_option
def cycle_run_command(
    sources: tuple[str, ...],
    now: str | None,
    apply: bool,
    fmt: str | None,
    scheduler_db: str | None,
    lookback_seconds: int | None,
    config_path: str | None,
    events_jsonl: bool,
    limit: int,
    db_path: str | None,
) -> None:
    """Load SOURCES (if any), run the rules once, print the findings, act on them.

    Findings print as `rule  subject_type subject_id [action]: detail`, the first 100 of a
    pass unless --limit says otherwise (all of them are stored and acted on). Tier 2 (LLM) runs only
    when there are findings and an endpoint is configured; tier 3 writes mutation requests.
    With --apply on a platform SQLite file the pass is written back there in one transaction
    (see docs/cycle.md); a second pass over the same data adds nothing.

    \b
    Examples:
      reflect cycle run platform.db                     # dry run at the wall clock
      reflect cycle run data/conversation.db --apply    # pause, log, drop the jobs
      reflect cycle run runs/runs.jsonl \\
          --now 2025-11-19T00:50:00Z --lookback 7200    # replay a two-hour export
      reflect cycle run --now latest --events-jsonl     # the loaded database, events as JSON
    """
    from pathlib import Path

    from agent_reflection.cli._load_output import echo_warnings
    from agent_reflection.cycle.clock import resolve_clock
    from agent_reflection.cycle.config import load_config
    from agent_reflection.cycle.engine import run_cycle
    from agent_reflection.load.runs import detect_format, load_runs
    from agent_reflection.store import db

    config = load_config(config_path, lookback_seconds=lookback_seconds)
    if not config.enabled:
        click.echo("reflection cycle disabled ([reflection].enabled = false): nothing done")
        return
    con = db.connect(db_path)
    try:
        sqlite_sources: list[Path] = []
        for source in sources:
            path = Path(source)
            chosen = fmt or detect_format(path)
            summary = load_runs(con, path, chosen).summary
            echo_warnings(summary.detail)
            click.echo(summary.line(), err=events_jsonl)
            if chosen == "sqlite":
                sqlite_sources.append(path)
        clock = resolve_clock(con, now)
        result = run_cycle(
            con,
            config,
            now=clock,
            source=",".join(sources) or None,
            sqlite_sources=tuple(sqlite_sources),
            apply=apply,
            sink=_write_event if events_jsonl else None,
            scheduler_store=Path(scheduler_db) if scheduler_db else None,
        )
        out = _report(
            result,
            f"cycle run {result.cycle_run_id} at {clock.isoformat()} (lookback "
            f"{config.lookback_seconds:,} s)",
            events_jsonl,
            limit,
        )
        out(f"tier 2: {result.analysis.status}: {result.analysis.detail}")
        for path in result.mutation_files:
            out(f"tier 3: mutation request written to {path}")
        hint = window_hint(con, clock, config.lookback_seconds, now)
        if hint:
            click.echo(hint, err=True)
        if result.pause.error:
            raise ReflectionError(result.pause.error)
    finally:
        con.close()


@cycle_group.command("resume")
@click.argument("task_id")
@db_option
def cycle_resume_command(task_id: str, db_path: str | None) -> None:
    """Undo the cycle's pause of TASK_ID (in the database and in the SQLite file it paused).

    The scheduler jobs the pause removed from the platform's job store are put back as they
    were (a running scheduler picks them up at its next wake-up or restart).

    \b
    Example:
      reflect cycle resume nightly-report
    """
    from agent_reflection.cycle.actions import resume_task
    from agent_reflection.store import db

    con = db.connect(db_path)
    try:
        click.echo(resume_task(con, task_id).line())
    finally:
        con.close()


@cycle_group.command("watch")
@click.argument("source", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--apply",
    is_flag=True,
    help="Really act, as for `cycle run --apply` (pause, log in interaction_log, drop the "
    "paused tasks' scheduler jobs). Without it: dry run.",
)
@run_format_option(
    "Format of SOURCE (default: detected; otlp: the database reflect serve fills).", "otlp"
)
@click.option(
    "--poll",
    "poll_seconds",
    type=click.FloatRange(min=0.1),
    default=None,
    help="Fallback: run the rules at least this often, in seconds, even without changes "
    "(default: the config's fallback_poll_seconds, 21600).",
)
@_LOOKBACK
@_CONFIG
@_EVENTS
@_LIMIT
@db_option
def cycle_watch_command(
    source: str,
    apply: bool,
    fmt: str | None,
    poll_seconds: float | None,
    lookback_seconds: int | None,
    config_path: str | None,
    events_jsonl: bool,
    limit: int,
    db_path: str | None,
) -> None:
    """Follow SOURCE (a SQLite database, a JSONL file, or the DuckDB file reflect serve
    fills with telemetry) as it grows; stop with Ctrl-C or SIGTERM (the check in hand
    finishes and the database is closed; a second Ctrl-C interrupts at once).

    A failed or timed-out sub-session runs the rules at once on its task and the skills its
    session read; every batch_threshold completions run them on everything (and tier 2 when
    they find something). The wall clock is the rules' clock. The database (--db) is opened
    for each pass and closed after it, so `reflect load` into it works while this watches.

    \b
    Examples:
      reflect cycle watch platform.db --apply
      reflect cycle watch runs.jsonl --events-jsonl | my-dashboard
      reflect cycle watch live.duckdb --format otlp     # telemetry from reflect serve
    """
    import asyncio
    from pathlib import Path

    from agent_reflection.cycle.config import load_config
    from agent_reflection.cycle.watch import Watcher
    from agent_reflection.store import db

    config = load_config(
        config_path, lookback_seconds=lookback_seconds, fallback_poll_seconds=poll_seconds
    )
    if not config.enabled:
        click.echo("reflection cycle disabled ([reflection].enabled = false): not watching")
        return

    def report(result: CycleResult) -> None:
        header = f"{result.trigger} check at {result.clock.isoformat()}"
        _report(result, header, events_jsonl, limit)
        if result.pause.error:
            click.echo(f"Error (the next check tries again): {result.pause.error}", err=True)

    def loaded(what: LoadSummary | ReflectionError) -> None:
        if isinstance(what, ReflectionError):
            click.echo(f"Error (the next change retries the load): {what}", err=True)
        else:
            click.echo(f"{what.line()} (see: reflect rejected)", err=True)

    db.connect(db_path).close()  # create the database (and say who holds it) before watching
    watcher = Watcher(
        lambda: db.connect(db_path),  # per pass: loads into the same file go between passes
        Path(source),
        config,
        apply=apply,
        fmt=fmt,
        sink=_write_event if events_jsonl else None,
        on_result=report,
        on_load=loaded,
    )

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()

        def stop_watching() -> None:
            # The first Ctrl-C or SIGTERM ends the loop once the check in hand is done; with
            # the handlers gone, a second one interrupts at once (SIGINT) or ends the process.
            for signum in STOP_SIGNALS:
                loop.remove_signal_handler(signum)
            stop.set()

        # A stop is an event the loop waits on, not a cancelled task: Python 3.11's
        # asyncio.wait_for can drop a cancellation that arrives as its wait completes
        # (CPython gh-86296), and the watcher then slept on until its next poll.
        for signum in STOP_SIGNALS:
            try:
                loop.add_signal_handler(signum, stop_watching)
            except NotImplementedError:  # an event loop without signal handlers (Windows)
                break  # Ctrl-C then ends the run by cancelling it, as asyncio.run does
        await watcher.run(stop)

    click.echo(f"watching {source} (Ctrl-C to stop)", err=True)
    with contextlib.suppress(KeyboardInterrupt):  # a second Ctrl-C
        asyncio.run(main())
    click.echo("stopped", err=True)
