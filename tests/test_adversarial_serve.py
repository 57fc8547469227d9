"""``reflect serve`` never wedges (issue 34, item 1): records the tables cannot hold (times after
2262, counts over 2**63 - 1) go to ``rejected`` with the reason; the rest of their export and
every later export are stored; a spool left wedged by an older receiver drains on start."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="reflect serve needs the 'serve' extra")

from agent_reflection.serve.spool import Spool
from serve_harness import post_json, query, running_server

pytestmark = pytest.mark.adversarial

U64_MAX = str(2**64 - 1)
I64_MIN = str(-(2**63))
FIRST_OUT = str(2**63)  # one nanosecond after 2262-04-11T23:47:16.854775807Z


def log(name: str, **fields: Any) -> dict[str, Any]:
    attributes = fields.pop("attributes", {})
    return {
        "body": {"stringValue": name},
        "attributes": [{"key": k, "value": v} for k, v in attributes.items()],
        **fields,
    }


def logs(*records: dict[str, Any]) -> dict[str, Any]:
    return {"resourceLogs": [{"scopeLogs": [{"logRecords": list(records)}]}]}


#: Every extreme the OTLP protobufs allow in a time, a count or a value, one record each.
EXTREME_LOGS = [
    log("bad-time-u64", timeUnixNano=U64_MAX),
    log("bad-time-first", timeUnixNano=FIRST_OUT),
    log("bad-observed", observedTimeUnixNano=U64_MAX),
    log(
        "bad-event-ts-late", attributes={"event.timestamp": {"stringValue": "9999-12-31T23:59:59Z"}}
    ),
    log(
        "bad-event-ts-early",
        attributes={"event.timestamp": {"stringValue": "0001-01-01T00:00:00Z"}},
    ),
]
EDGE_LOGS = [  # values at the edge that fit: stored
    log("ok-last-ns", timeUnixNano=str(2**63 - 1)),
    log(
        "ok-ints",
        timeUnixNano="1",
        attributes={
            "big": {"intValue": str(2**63 - 1)},
            "small": {"intValue": I64_MIN},
            "inf": {"doubleValue": "Infinity"},
            "nan": {"doubleValue": "NaN"},
            "nul": {"stringValue": "a\u0000b"},
            "event.sequence": {"intValue": str(2**63 - 1)},
            "duration_ms": {"stringValue": "1e400"},
        },
    ),
    log(
        "claude_code.tool_result",
        attributes={
            "event.name": {"stringValue": "tool_result"},
            "event.sequence": {"stringValue": "99999999999999999999999"},
            "tool_result_size_bytes": {"stringValue": "-1e30"},
            "duration_ms": {"stringValue": "NaN"},
            "success": {"stringValue": "true"},
        },
    ),
]


def metrics() -> dict[str, Any]:
    def point(**fields: Any) -> dict[str, Any]:
        return {"timeUnixNano": "1700000000000000000", **fields}

    return {
        "resourceMetrics": [
            {
                "scopeMetrics": [
                    {
                        "metrics": [
                            {
                                "name": "extreme.histogram",
                                "histogram": {
                                    "aggregationTemporality": 2,
                                    "dataPoints": [
                                        point(count=U64_MAX, sum=1e308),
                                        point(count="3", sum=-1e308, bucketCounts=[U64_MAX]),
                                    ],
                                },
                            },
                            {
                                "name": "extreme.sum",
                                "sum": {
                                    "aggregationTemporality": 1,
                                    "dataPoints": [
                                        point(timeUnixNano=U64_MAX, asInt="1"),
                                        point(startTimeUnixNano=U64_MAX, asInt="1"),
                                        point(asInt=I64_MIN),
                                        point(asDouble="NaN"),
                                        point(asDouble="-Infinity"),
                                    ],
                                },
                            },
                        ]
                    }
                ]
            }
        ]
    }


def spans() -> dict[str, Any]:
    def span(name: str, **fields: Any) -> dict[str, Any]:
        return {
            "traceId": "0123456789abcdef0123456789abcdef",
            "spanId": "0123456789abcdef",
            "name": name,
            **fields,
        }

    return {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            span("bad-end", startTimeUnixNano="1", endTimeUnixNano=U64_MAX),
                            span("bad-start", startTimeUnixNano=U64_MAX),
                            span("ok-span", startTimeUnixNano="1", endTimeUnixNano="2"),
                        ]
                    }
                ]
            }
        ]
    }


#: A stored record's name: the event, metric or span name, else a log's body text.
NAMES = "SELECT coalesce(name, json_extract_string(body, '$')) FROM otel_records"


def good(i: int) -> dict[str, Any]:
    return log(f"good-{i}", timeUnixNano=str(1_700_000_000_000_000_000 + i))


@pytest.mark.slow
def test_extreme_values_are_rejected_with_the_reason_and_the_rest_is_stored(
    tmp_path: Path,
) -> None:
    db_path = tmp_path / "live.duckdb"
    started = time.monotonic()
    with running_server(db_path) as server:
        # the issue's reproduction first, alone in its export, then every extreme
        assert post_json(server.endpoint, "logs", logs(log("x", timeUnixNano=U64_MAX))) == 200
        assert post_json(server.endpoint, "logs", logs(*EXTREME_LOGS, *EDGE_LOGS, good(0))) == 200
        assert post_json(server.endpoint, "metrics", metrics()) == 200
        assert post_json(server.endpoint, "traces", spans()) == 200
        for i in range(1, 4):
            assert post_json(server.endpoint, "logs", logs(good(i))) == 200
        sent = 1 + len(EXTREME_LOGS) + len(EDGE_LOGS) + 1 + 7 + 3 + 3
        status = server.wait_stored(sent)
    assert time.monotonic() - started < 60
    rejected_names = ["x", *(r["body"]["stringValue"] for r in EXTREME_LOGS)]
    assert status["records_rejected"] == len(rejected_names) + 3 + 2, status  # + metrics, spans
    assert status["records_stored"] + status["records_rejected"] == sent
    assert status["database_error"] is None
    stored = {name for (name,) in query(db_path, NAMES)}
    assert {f"good-{i}" for i in range(4)} <= stored
    assert {"ok-last-ns", "ok-ints", "claude_code.tool_result", "ok-span"} <= stored
    assert not stored & set(rejected_names)
    assert len(query(db_path, "SELECT * FROM otel_metric_points")) == 4
    reasons = query(db_path, "SELECT location, raw, reason FROM rejected ORDER BY location")
    assert len(reasons) == status["records_rejected"]
    for location, raw, reason in reasons:
        assert location.startswith("otlp ") and " record " in location
        assert "does not fit a stored time or count" in reason
        assert raw  # the record as sent, to replay once the rule changes
    fields = " ".join(reason.split()[0] for _, _, reason in reasons)
    for field in (
        "timeUnixNano",
        "observedTimeUnixNano",
        "event.timestamp",
        "count",
        "startTimeUnixNano",
        "endTimeUnixNano",
    ):
        assert field in fields
    ((read, loaded, rejected, present),) = query(
        db_path,
        "SELECT rows_read, rows_loaded, rows_rejected, rows_already_present FROM loads"
        " WHERE source = 'otlp'",
    )
    assert read == loaded + rejected + present and rejected == status["records_rejected"]


def test_a_spool_wedged_by_an_older_receiver_drains_on_start(tmp_path: Path) -> None:
    """The issue's state: the bad export acknowledged and spooled, good ones behind it."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    db_path = tmp_path / "live.duckdb"
    spool = Spool(Path(f"{db_path}.otlp-spool"))
    for body in (logs(log("x", timeUnixNano=U64_MAX)), logs(good(0), good(1))):
        message = json_format.ParseDict(body, ExportLogsServiceRequest())
        spool.append("logs", time.time_ns(), message.SerializeToString())
    spool.append("logs", time.time_ns(), b"\x0a\xff\xff not a protobuf")  # a damaged frame
    spool.close()
    with running_server(db_path) as server:
        assert post_json(server.endpoint, "logs", logs(good(2))) == 200
        status = server.wait_stored(5)
    assert status["records_stored"] == 3 and status["records_rejected"] == 2
    stored = {name for (name,) in query(db_path, NAMES)}
    assert stored == {"good-0", "good-1", "good-2"}
    reasons = " | ".join(r for (r,) in query(db_path, "SELECT reason FROM rejected"))
    assert "timeUnixNano 18446744073709551615 does not fit a stored time" in reasons
    assert "the spooled logs export cannot be read" in reasons
    assert not list(Path(f"{db_path}.otlp-spool").glob("*.otlp"))


def test_a_record_the_database_refuses_is_rejected_and_the_rest_of_its_batch_stored(
    tmp_path: Path,
) -> None:
    """Past the rules on times and counts: whatever else the database refuses (here text Arrow
    cannot encode, as a bug upstream could make) costs that record only."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    from agent_reflection.serve.rows import merge, rows_from_logs
    from agent_reflection.serve.writer import Writer

    request = json_format.ParseDict(logs(good(0), good(1), good(2)), ExportLogsServiceRequest())
    rows = rows_from_logs(request, time.time_ns())
    broken = dict(rows.records[1], body='"\ud800 not encodable"')
    batch = merge([dataclasses.replace(rows, records=(rows.records[0], broken, rows.records[2]))])
    messages: list[str] = []
    writer = Writer(
        tmp_path / "db.duckdb", Spool(tmp_path / "spool"), "test", on_message=messages.append
    )
    con = writer._connection()
    writer.store_batch(con, batch, 3)
    assert (writer.read, writer.loaded, writer.rejected) == (3, 2, 1)
    assert "storing it record by record" in messages[0]
    bodies = con.execute("SELECT body FROM otel_records ORDER BY body").fetchall()
    assert bodies == [('"good-0"',), ('"good-2"',)]
    ((location, raw, reason),) = con.execute(
        "SELECT location, raw, reason FROM rejected"
    ).fetchall()
    assert location == f"otlp log record {broken['record_key']}"
    assert reason.startswith("the database refused the record: ") and "surrogates" in reason
    assert "not encodable" in raw
    ((read, loaded, rejected),) = con.execute(
        "SELECT rows_read, rows_loaded, rows_rejected FROM loads"
    ).fetchall()
    assert (read, loaded, rejected) == (3, 2, 1)
    writer.stop()


@pytest.mark.slow
def test_a_client_dribbling_its_headers_is_cut_off(tmp_path: Path) -> None:
    """Issue 34, item 11: a connection that never finishes its request headers is closed after
    HEADER_TIMEOUT_SECONDS instead of being held for good; other clients are served meanwhile."""
    import socket
    from urllib.parse import urlsplit

    from agent_reflection.serve.app import HEADER_TIMEOUT_SECONDS

    with running_server(tmp_path / "live.duckdb") as server:
        address = urlsplit(server.endpoint)
        slow = socket.create_connection((address.hostname, address.port), timeout=60)
        try:
            started = time.monotonic()
            slow.sendall(b"POST /v1/logs HTTP/1.1\r\nHost: x\r\n")  # and never the blank line
            assert post_json(server.endpoint, "logs", logs(good(0))) == 200  # others are served
            closed = slow.recv(1024)
            waited = time.monotonic() - started
        finally:
            slow.close()
    assert closed == b""
    assert HEADER_TIMEOUT_SECONDS - 1 <= waited <= HEADER_TIMEOUT_SECONDS + 15
