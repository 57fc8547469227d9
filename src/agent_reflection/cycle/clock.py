"""The clock rules run against: the wall clock, an explicit time, or the data's newest outcome."""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb

from agent_reflection.errors import ReflectionError
from agent_reflection.load.runs.records import parse_time
from agent_reflection.store.db import read_sql


class InvalidClock(ReflectionError, ValueError):
    """``--now`` is neither a time, epoch seconds nor ``latest``."""


def resolve_clock(con: duckdb.DuckDBPyConnection, value: str | None) -> datetime:
    """``None`` → now; ``latest`` → newest ``finished_at`` in run_outcomes; else parsed (UTC)."""
    if value is None:
        return datetime.now(UTC)
    if value == "latest":
        row = con.execute(read_sql("cycle/latest_outcome.sql")).fetchone()
        if row is None or row[0] is None:
            raise InvalidClock("--now latest: run_outcomes is empty; load runs first")
        latest: datetime = row[0]
        return latest.astimezone(UTC)
    try:
        return parse_time(value, "--now")
    except ValueError as exc:
        raise InvalidClock(f"{exc}; or pass --now latest") from exc
