"""The records loads could not take, with where they were and why (the ``rejected`` table)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

import duckdb

from agent_reflection.store.db import read_sql


@dataclass(frozen=True)
class RejectedRecord:
    load_id: int
    source: str
    location: str
    reason: str
    raw: str | None
    rejected_at: datetime

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "rejected_at": self.rejected_at.isoformat()}


def list_rejected(
    con: duckdb.DuckDBPyConnection,
    *,
    load_id: int | None = None,
    source: str | None = None,
    limit: int = 1000,
) -> list[RejectedRecord]:
    """Rejected records of one load and/or one source (newest load first), at most ``limit``."""
    rows = con.execute(
        read_sql("core/list_rejected.sql"),
        {"load_id": load_id, "source": source, "limit": limit},
    ).fetchall()
    return [RejectedRecord(*row) for row in rows]
