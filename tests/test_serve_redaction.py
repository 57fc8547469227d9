"""`reflect serve` stores free text with its database's keyed placeholders (issue 15)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

pytest.importorskip("starlette", reason="reflect serve needs the 'serve' extra")
pytest.importorskip("opentelemetry.sdk", reason="the tests send through the OpenTelemetry SDK")

from agent_reflection.redact import database_redactor, redact_text
from serve_harness import claude_event, exporter_env, query, running_server, send_events

TOKEN = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
ERROR = f"clone failed: https://x:{TOKEN}@github.com/o/r"


def test_served_secret_gets_the_databases_keyed_placeholder(
    tmp_path: Path, monkeypatch: Any
) -> None:
    db_path = tmp_path / "live.duckdb"
    event = claude_event("tool_result", "s-1", 0, tool_name="Bash", success="false", error=ERROR)
    with running_server(db_path) as server:
        exporter_env(monkeypatch, server.endpoint)
        send_events([event])
        server.wait_stored(1)
    ((stored,),) = query(db_path, "SELECT error FROM otel_tool_results")
    ((attrs,),) = query(db_path, "SELECT attributes FROM otel_records")
    with duckdb.connect(str(db_path), read_only=True) as con:
        keyed = database_redactor(con).text(ERROR)
    assert TOKEN not in stored and TOKEN not in attrs
    assert stored == keyed and "[REDACTED:github-token:" in stored
    # keyed, not the public fallback key: the placeholder cannot be recomputed without the key
    assert stored != redact_text(ERROR)
