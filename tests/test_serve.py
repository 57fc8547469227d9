"""``reflect serve``: Claude Code telemetry through the official OpenTelemetry SDK exporters into
the typed tables, protobuf and JSON, gzip, metrics, bad input, auth, and durability."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="reflect serve needs the 'serve' extra")
pytest.importorskip("opentelemetry.sdk", reason="the tests send through the OpenTelemetry SDK")

from agent_reflection.store.db import read_sql
from serve_harness import (
    claude_event,
    exporter_env,
    mapped_packages,
    query,
    running_server,
    send_events,
    to_otlp_json,
)


def session_events(session: str) -> list[dict[str, Any]]:
    """One small Claude Code session: each documented event once, two tool results (one
    failing), and an event the receiver does not know."""
    return [
        claude_event("user_prompt", session, 1, prompt_length="23", **{"prompt.id": "p1"}),
        claude_event(
            "api_request",
            session,
            2,
            model="claude-sonnet-4-5",
            cost_usd="0.0123",
            duration_ms="2100",
            input_tokens="1200",
            output_tokens="340",
            cache_read_tokens="800",
            cache_creation_tokens="0",
        ),
        claude_event(
            "tool_decision", session, 3, tool_name="Bash", decision="accept", source="config"
        ),
        claude_event(
            "tool_result",
            session,
            4,
            tool_name="Bash",
            success="true",
            duration_ms="812",
            decision_type="accept",
            decision_source="config",
            tool_result_size_bytes="2048",
            tool_parameters={"bash_command": "pytest", "full_command": "pytest -q"},
        ),
        claude_event(
            "tool_result",
            session,
            5,
            tool_name="Edit",
            success="false",
            duration_ms="3",
            error="String to replace not found in file",
        ),
        claude_event(
            "api_error",
            session,
            6,
            model="claude-sonnet-4-5",
            error="overloaded",
            status_code="529",
            duration_ms="900",
            attempt="2",
        ),
        claude_event("skill_activated", session, 7, skill_name="pdf"),
    ]


@pytest.mark.slow
def test_sdk_exporter_protobuf_fills_the_typed_tables(tmp_path: Path, monkeypatch: Any) -> None:
    db_path = tmp_path / "live.duckdb"
    with running_server(db_path) as server:
        exporter_env(monkeypatch, server.endpoint)
        send_events(session_events("sess-A"))
        server.wait_stored(7)
        if sys.platform == "linux":
            # it stored its rows through pyarrow without pulling in pandas, which DuckDB's
            # first bound parameter imports: 47 MiB of an idle server
            assert mapped_packages(server.proc.pid, "pandas", "pyarrow") == {"pyarrow"}
    assert query(db_path, "SELECT name FROM otel_records ORDER BY name") == [
        ("claude_code.api_error",),
        ("claude_code.api_request",),
        ("claude_code.skill_activated",),
        ("claude_code.tool_decision",),
        ("claude_code.tool_result",),
        ("claude_code.tool_result",),
        ("claude_code.user_prompt",),
    ]
    # the unknown event is kept raw, attributes and all
    ((attrs, service, scope),) = query(
        db_path,
        "SELECT attributes, service_name, scope_name FROM otel_records "
        "WHERE name = 'claude_code.skill_activated'",
    )
    assert json.loads(attrs)["skill_name"] == "pdf"
    assert (service, scope) == ("claude-code", "com.anthropic.claude_code.events")
    assert query(
        db_path,
        "SELECT tool_name, success, duration_ms, error, decision_type, tool_result_size_bytes,"
        " json_extract_string(tool_parameters, '$.bash_command'), event_sequence"
        " FROM otel_tool_results ORDER BY event_sequence",
    ) == [
        ("Bash", True, 812.0, None, "accept", 2048, "pytest", 4),
        ("Edit", False, 3.0, "String to replace not found in file", None, None, None, 5),
    ]
    assert query(
        db_path,
        "SELECT model, cost_usd, input_tokens, output_tokens, cache_read_tokens"
        " FROM otel_api_requests",
    ) == [("claude-sonnet-4-5", 0.0123, 1200, 340, 800)]
    assert query(db_path, "SELECT model, error, status_code, attempt FROM otel_api_errors") == [
        ("claude-sonnet-4-5", "overloaded", "529", 2)
    ]
    assert query(db_path, "SELECT prompt_id, prompt_length, prompt FROM otel_prompts") == [
        ("p1", 23, None)
    ]
    assert query(db_path, "SELECT tool_name, decision, source FROM otel_tool_decisions") == [
        ("Bash", "accept", "config")
    ]
    assert query(
        db_path,
        "SELECT session_id, app_version, user_id, n_events, n_prompts, n_tool_results,"
        " n_tool_failures, n_api_requests, n_api_errors, cost_usd, input_tokens"
        " FROM otel_sessions",
    ) == [("sess-A", "2.1.14", "u-1", 7, 1, 2, 1, 1, 1, 0.0123, 1200)]
    # the reflection cycle's tables: each tool result an outcome of its session
    assert query(
        db_path,
        "SELECT task_id, status, source_format FROM run_outcomes ORDER BY finished_at",
    ) == [("sess-A", "completed", "otlp"), ("sess-A", "failed", "otlp")]
    assert query(db_path, "SELECT task_id, status, run_count, implicit FROM run_tasks") == [
        ("sess-A", "active", 2, True)
    ]
    # the in-loop analysis's tables: the session and its tool calls, numbered per task
    assert query(
        db_path,
        "SELECT session_id, source_file, n_prompts, n_tool_calls, cli_version FROM sessions",
    ) == [("sess-A", "otlp", 1, 2, "2.1.14")]
    assert query(
        db_path,
        "SELECT seq, task_index, task_seq, name, command, is_error FROM tool_calls ORDER BY seq",
    ) == [(1, 1, 1, "Bash", "pytest", False), (2, 1, 2, "Edit", None, True)]
    assert query(db_path, read_sql("in_loop/would_fire.sql"), {"cadences": [2]}) == [
        (2, "sess-A", 2, 1, 2)
    ]
    ((source, origin, read, loaded, status),) = query(
        db_path, "SELECT source, origin, rows_read, rows_loaded, status FROM loads"
    )
    assert (source, origin, read, loaded, status) == (
        "otlp",
        f"reflect serve {server.endpoint}",
        7,
        7,
        "ok",
    )


@pytest.mark.slow
def test_json_and_gzip_decode_to_the_same_records(tmp_path: Path, monkeypatch: Any) -> None:
    """The same SDK records as OTLP/JSON (hex ids, integer enums, camelCase), gzip'd protobuf
    from the exporter, and plain protobuf: each stored once (one record key per record)."""
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
    from opentelemetry.sdk.resources import Resource

    memory = InMemoryLogRecordExporter()
    provider = LoggerProvider(resource=Resource.create({"service.name": "claude-code"}))
    provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
    logger = provider.get_logger("com.anthropic.claude_code.events")
    for event in session_events("sess-J")[:4]:
        logger.emit(
            timestamp=time.time_ns(),
            body=event["body"],
            attributes=event["attributes"],
            severity_number=None,
        )
    request = encode_logs(memory.get_finished_logs())
    request.resource_logs[0].scope_logs[0].log_records[0].trace_id = bytes(range(16))
    body = json.dumps(to_otlp_json(request)).encode()
    assert b'"traceId": "000102030405060708090a0b0c0d0e0f"' in body

    db_path = tmp_path / "live.duckdb"
    with running_server(db_path) as server:
        reply = _post(server.endpoint + "/v1/logs", body, "application/json")
        assert reply == (200, "application/json", b"{}")
        gz = _post(
            server.endpoint + "/v1/logs",
            gzip.compress(body),
            "application/json",
            {"Content-Encoding": "gzip"},
        )
        assert gz[0] == 200
        _post(server.endpoint + "/v1/logs", request.SerializeToString(), "application/x-protobuf")
        exporter_env(monkeypatch, server.endpoint)
        send_events(session_events("sess-G"), compression=Compression.Gzip)
        server.wait_stored(4 * 3 + 7)
    assert query(
        db_path, "SELECT session_id, count(*) FROM otel_records GROUP BY 1 ORDER BY 1"
    ) == [
        ("sess-G", 7),
        ("sess-J", 4),
    ]
    ((read, loaded, present),) = query(
        db_path, "SELECT rows_read, rows_loaded, rows_already_present FROM loads"
    )
    assert (read, loaded, present) == (19, 11, 8)


@pytest.mark.slow
def test_sdk_metric_exporter_fills_metric_points(tmp_path: Path, monkeypatch: Any) -> None:
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource

    db_path = tmp_path / "live.duckdb"
    with running_server(db_path) as server:
        exporter_env(monkeypatch, server.endpoint)
        reader = PeriodicExportingMetricReader(
            OTLPMetricExporter(), export_interval_millis=3_600_000
        )
        provider = MeterProvider(
            resource=Resource.create({"service.name": "claude-code"}), metric_readers=[reader]
        )
        meter = provider.get_meter("com.anthropic.claude_code", "2.1.14")
        session = {"session.id": "sess-M"}
        meter.create_counter("claude_code.session.count", unit="count").add(1, session)
        tokens = meter.create_counter("claude_code.token.usage", unit="tokens")
        tokens.add(1200, {**session, "type": "input", "model": "claude-sonnet-4-5"})
        tokens.add(340, {**session, "type": "output", "model": "claude-sonnet-4-5"})
        meter.create_counter("claude_code.cost.usage", unit="USD").add(
            0.0123, {**session, "model": "claude-sonnet-4-5"}
        )
        meter.create_counter("claude_code.lines_of_code.count").add(
            12, {**session, "type": "added"}
        )
        provider.shutdown()  # collects and exports once (each export repeats cumulative sums)
        server.wait_stored(5)
    assert query(
        db_path,
        "SELECT name, kind, temporality, session_id, value, model, type FROM otel_metric_points "
        "ORDER BY name, type",
    ) == [
        (
            "claude_code.cost.usage",
            "sum",
            "cumulative",
            "sess-M",
            0.0123,
            "claude-sonnet-4-5",
            None,
        ),
        ("claude_code.lines_of_code.count", "sum", "cumulative", "sess-M", 12.0, None, "added"),
        ("claude_code.session.count", "sum", "cumulative", "sess-M", 1.0, None, None),
        (
            "claude_code.token.usage",
            "sum",
            "cumulative",
            "sess-M",
            1200.0,
            "claude-sonnet-4-5",
            "input",
        ),
        (
            "claude_code.token.usage",
            "sum",
            "cumulative",
            "sess-M",
            340.0,
            "claude-sonnet-4-5",
            "output",
        ),
    ]
    assert query(db_path, "SELECT count(*) FROM otel_records WHERE signal = 'metric'") == [(5,)]


def _post(
    url: str, body: bytes, content_type: str | None, headers: dict[str, str] | None = None
) -> tuple[int, str, bytes]:
    request = urllib.request.Request(url, data=body, method="POST")
    if content_type is not None:
        request.add_header("Content-Type", content_type)
    for key, value in (headers or {}).items():
        request.add_header(key, value)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read()


def test_bad_input_gets_its_status_and_loses_nothing_else(tmp_path: Path) -> None:
    from google.rpc import status_pb2
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    good = ExportLogsServiceRequest()
    record = good.resource_logs.add().scope_logs.add().log_records.add()
    record.body.string_value = "claude_code.tool_result"
    record.time_unix_nano = time.time_ns()
    attr = record.attributes.add()
    attr.key, attr.value.string_value = "session.id", "sess-B"
    db_path = tmp_path / "live.duckdb"
    with running_server(db_path, "--max-body", "0.01") as server:
        url = server.endpoint + "/v1/logs"
        status, kind, body = _post(url, b"\xff\xff\xff garbage", "application/x-protobuf")
        assert (status, kind) == (400, "application/x-protobuf")
        assert (
            "not a protobuf ExportLogsServiceRequest" in status_pb2.Status.FromString(body).message
        )
        status, kind, body = _post(url, b"{not json", "application/json")
        assert (status, kind) == (400, "application/json")
        assert "not JSON" in json.loads(body)["message"]
        assert (
            _post(
                url,
                b'{"resourceLogs": [{"scopeLogs": [{"logRecords": [{"traceId": "zz"}]}]}]}',
                "application/json",
            )[0]
            == 400
        )
        assert _post(url, good.SerializeToString(), "text/plain")[0] == 415
        assert _post(url, good.SerializeToString(), None)[0] == 415
        assert (
            _post(
                url, good.SerializeToString(), "application/x-protobuf", {"Content-Encoding": "br"}
            )[0]
            == 415
        )
        assert _post(url, b"x" * 20_000, "application/x-protobuf")[0] == 413
        bomb = gzip.compress(b"\x00" * 200_000)
        assert _post(url, bomb, "application/x-protobuf", {"Content-Encoding": "gzip"})[0] == 413
        assert (
            _post(
                url, b"\x1f\x8b not gzip", "application/x-protobuf", {"Content-Encoding": "gzip"}
            )[0]
            == 400
        )
        traces = _post(server.endpoint + "/v1/traces", b"", "application/x-protobuf")
        assert traces[:2] == (200, "application/x-protobuf")
        assert _post(url, good.SerializeToString(), "application/x-protobuf")[0] == 200
        server.wait_stored(1)
    assert query(db_path, "SELECT session_id, name FROM otel_records") == [
        ("sess-B", "claude_code.tool_result")
    ]


def test_bearer_token(tmp_path: Path, monkeypatch: Any) -> None:
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    empty = ExportLogsServiceRequest().SerializeToString()
    db_path = tmp_path / "live.duckdb"
    with running_server(db_path, "--token", "s3cret-token") as server:
        server.wait_line("or in the shell: ")
        assert '"OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer s3cret-token"' in "\n".join(
            server.lines
        )
        url = server.endpoint + "/v1/logs"
        assert _post(url, empty, "application/x-protobuf")[0] == 401
        assert (
            _post(url, empty, "application/x-protobuf", {"Authorization": "Bearer wrong"})[0] == 401
        )
        assert (
            _post(url, empty, "application/x-protobuf", {"Authorization": "Bearer s3cret-token"})[0]
            == 200
        )
        exporter_env(monkeypatch, server.endpoint, token="s3cret-token")
        send_events(session_events("sess-T")[:2])
        server.wait_stored(2)
        # the status page (the database's path, its last error) wants the token too
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(server.endpoint + "/", timeout=10)
        assert refused.value.code == 401 and b"live.duckdb" not in refused.value.read()
    assert query(db_path, "SELECT count(*) FROM otel_records") == [(2,)]


def test_startup_line_prints_the_claude_code_settings(tmp_path: Path) -> None:
    with running_server(tmp_path / "live.duckdb") as server:
        server.wait_line("or in the shell: ")
        text = "\n".join(server.lines)
    for line in (
        '"CLAUDE_CODE_ENABLE_TELEMETRY": "1"',
        '"OTEL_LOGS_EXPORTER": "otlp"',
        '"OTEL_METRICS_EXPORTER": "otlp"',
        '"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"',
        f'"OTEL_EXPORTER_OTLP_ENDPOINT": "{server.endpoint}"',
    ):
        assert line in text
    assert server.endpoint.startswith("http://127.0.0.1:")


HOLD_LOCK = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1])
print("locked", flush=True)
sys.stdin.readline()
con.close()
"""


@pytest.mark.slow
def test_acknowledged_exports_survive_a_locked_database_and_a_crash(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """Another process holds the database: exports are still acknowledged (spooled, fsync'd);
    the server is then killed (SIGKILL). The next start, with the database free, stores every
    acknowledged record exactly once."""
    db_path = tmp_path / "live.duckdb"
    with running_server(db_path) as server:  # create the database, then stop
        pass
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(db_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with running_server(db_path, kill=True) as server:
            exporter_env(monkeypatch, server.endpoint)
            send_events(session_events("sess-L"))  # flush asserts every export got 200
            status = server.status()
            assert status["records_read"] == 0 and status["spooled_bytes"] > 0
            deadline = time.monotonic() + 10
            while status["database_error"] is None and time.monotonic() < deadline:
                time.sleep(0.05)
                status = server.status()
            assert "lock" in status["database_error"]
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(30)
    spool = Path(f"{db_path}.otlp-spool")
    assert list(spool.glob("*.otlp")), "the acknowledged exports are on disk"
    with running_server(db_path) as server:
        server.wait_stored(7)
    assert query(db_path, "SELECT count(*), count(DISTINCT record_key) FROM otel_records") == [
        (7, 7)
    ]
    assert not list(spool.glob("*.otlp"))


def test_503_with_retry_after_once_the_spool_is_over_its_limit(tmp_path: Path) -> None:
    """The database refuses writes (locked) and the spool passes --spool-limit: exports get
    503 + Retry-After, so the exporter retries; once the database is free they are taken."""
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    def export(n: int) -> bytes:
        request = ExportLogsServiceRequest()
        record = request.resource_logs.add().scope_logs.add().log_records.add()
        record.body.string_value = "x" * 1500
        record.time_unix_nano = n
        return request.SerializeToString()

    db_path = tmp_path / "live.duckdb"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(db_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    with running_server(db_path, "--spool-limit", "0.001") as server:
        url = server.endpoint + "/v1/logs"
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        assert _post(url, export(1), "application/x-protobuf")[0] == 200
        request = urllib.request.Request(
            url, data=export(2), method="POST", headers={"Content-Type": "application/x-protobuf"}
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        assert refused.value.code == 503 and refused.value.headers["Retry-After"] == "5"
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(30)
        server.wait_stored(1)
        assert _post(url, export(2), "application/x-protobuf")[0] == 200
        server.wait_stored(2)
    assert query(db_path, "SELECT count(*) FROM otel_records") == [(2,)]
