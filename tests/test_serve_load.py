"""Load: >= 100,000 log records from several concurrent SDK exporters; none lost or doubled."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="reflect serve needs the 'serve' extra")
pytest.importorskip("opentelemetry.sdk", reason="the tests send through the OpenTelemetry SDK")

from serve_harness import (
    claude_event,
    exporter_env,
    query,
    running_server,
    send_events,
)

EXPORTERS = 4
PER_EXPORTER = 25_000


@pytest.mark.slow(reason="100,000 records from four SDK exporters into a live server")
def test_100k_records_from_concurrent_exporters_arrive_exactly_once(
    tmp_path: Path, monkeypatch: Any
) -> None:
    db_path = tmp_path / "live.duckdb"
    errors: list[BaseException] = []

    def exporter(n: int) -> None:
        try:
            events = [
                claude_event(
                    "tool_result",
                    f"sess-{n}",
                    i,
                    tool_name="Bash",
                    success="false" if i % 7 == 0 else "true",
                    duration_ms=str(i % 100),
                    **{"load.index": str(n * PER_EXPORTER + i)},
                )
                for i in range(PER_EXPORTER)
            ]
            send_events(events)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    with running_server(db_path) as server:
        exporter_env(monkeypatch, server.endpoint)
        threads = [threading.Thread(target=exporter, args=(n,)) for n in range(EXPORTERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, errors
        total = EXPORTERS * PER_EXPORTER
        status = server.wait_stored(total, timeout=300)
    assert status["records_read"] == total and status["records_stored"] == total
    ((rows, distinct, low, high),) = query(
        db_path,
        "SELECT count(*), count(DISTINCT attributes ->> '$.\"load.index\"'),"
        " min(CAST(attributes ->> '$.\"load.index\"' AS INTEGER)),"
        " max(CAST(attributes ->> '$.\"load.index\"' AS INTEGER)) FROM otel_records",
    )
    assert (rows, distinct, low, high) == (total, total, 0, total - 1)
    assert query(
        db_path, "SELECT count(*), count(*) FILTER (WHERE NOT success) FROM otel_tool_results"
    ) == [(total, EXPORTERS * len(range(0, PER_EXPORTER, 7)))]
    assert query(db_path, "SELECT sum(n_tool_results) FROM otel_sessions") == [(total,)]
    assert query(db_path, "SELECT count(*) FROM run_outcomes") == [(total,)]
