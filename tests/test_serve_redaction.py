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


def test_spans_metrics_and_names_are_redacted_too() -> None:
    """Issue 34, item 3: a span's name, attributes, events, links and status, a metric's name,
    description and exemplars, a scope name and a log's own event name are free text."""
    import json
    import time

    from agent_reflection.serve.decode import JSON, decode_request
    from agent_reflection.serve.rows import rows_from_request

    text = {"stringValue": ERROR}
    attrs = [{"key": "note", "value": text}]
    scope = {"name": f"scope {TOKEN}"}
    spans = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "scope": scope,
                        "spans": [
                            {
                                "traceId": "0123456789abcdef0123456789abcdef",
                                "spanId": "0123456789abcdef",
                                "name": ERROR,
                                "traceState": f"k={TOKEN}",
                                "attributes": attrs,
                                "events": [{"name": ERROR, "attributes": attrs}],
                                "links": [
                                    {
                                        "traceId": "0123456789abcdef0123456789abcdef",
                                        "spanId": "0123456789abcdef",
                                        "attributes": attrs,
                                    }
                                ],
                                "status": {"code": 2, "message": ERROR},
                            }
                        ],
                    }
                ]
            }
        ]
    }
    point = {
        "timeUnixNano": "1",
        "asDouble": 1.0,
        "attributes": attrs,
        "exemplars": [{"asDouble": 1.0, "filteredAttributes": attrs}],
    }
    metrics = {
        "resourceMetrics": [
            {
                "scopeMetrics": [
                    {
                        "scope": scope,
                        "metrics": [
                            {"name": ERROR, "description": ERROR, "gauge": {"dataPoints": [point]}}
                        ],
                    }
                ]
            }
        ]
    }
    logs = {
        "resourceLogs": [
            {"scopeLogs": [{"scope": scope, "logRecords": [{"eventName": ERROR, "body": text}]}]}
        ]
    }
    for signal, body in (("traces", spans), ("metrics", metrics), ("logs", logs)):
        request = decode_request(signal, json.dumps(body).encode(), JSON)
        rows = rows_from_request(signal, request, time.time_ns())
        stored = json.dumps(
            [row for name in ("records", "metric_points") for row in getattr(rows, name)]
        )
        assert rows.records and TOKEN not in stored, (signal, stored)
        assert "[REDACTED:github-token:" in stored
        if signal == "traces":  # ids are kept as sent
            assert json.loads(rows.records[0]["body"])["traceId"] == "0123456789abcdef" * 2


def test_one_pass_over_an_export_gives_the_rows_of_one_call_per_value() -> None:
    """The writer redacts an export's free text in one pass (``rows_redacted_in_one_pass``):
    with a secret in a body, an attribute, a nested value and a name, and without one, its
    rows are those of one redaction call per value."""
    import json
    import time

    from agent_reflection.redact import Redactor
    from agent_reflection.serve.decode import JSON, decode_request
    from agent_reflection.serve.rows import rows_from_request, rows_redacted_in_one_pass

    redactor = Redactor(b"k" * 32)
    nested = {"kvlistValue": {"values": [{"key": "cmd", "value": {"stringValue": ERROR}}]}}
    for secret in (ERROR, "nothing secret here"):
        attrs = [
            {"key": "session.id", "value": {"stringValue": "s-1"}},
            {"key": "error", "value": {"stringValue": secret}},
            {"key": "tool_parameters", "value": nested if secret == ERROR else {"intValue": 1}},
            {"key": "duration_ms", "value": {"stringValue": "12"}},
        ]
        records = [
            {"timeUnixNano": "1", "body": {"stringValue": body}, "attributes": attrs}
            for body in ("claude_code.tool_result", secret, f"{secret} again")
        ]
        logs = {
            "resourceLogs": [{"scopeLogs": [{"scope": {"name": secret}, "logRecords": records}]}]
        }
        request = decode_request("logs", json.dumps(logs).encode(), JSON)
        now = time.time_ns()
        one_pass = rows_redacted_in_one_pass("logs", request, now, redactor)
        assert one_pass == rows_from_request("logs", request, now, redactor.text)
        assert len(one_pass.records) == 3
        assert (TOKEN in json.dumps(one_pass.records)) is False
