"""The receiver's pure parts: OTLP/JSON decoding, Claude Code's rows, the spool's framing."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.proto", reason="reflect serve needs the 'serve' extra")

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
)

from agent_reflection.serve.decode import (
    BadRequest,
    decode_request,
    decompress,
    media_type,
    to_otlp_json,
)
from agent_reflection.serve.rows import merge, rows_from_logs
from agent_reflection.serve.spool import Spool, read_segment

#: An OTLP/JSON body as the specification writes it: hex ids, integer enum, camelCase keys,
#: 64-bit integers as strings, an int attribute, a kvlist and an array.
SPEC_JSON = {
    "resourceLogs": [
        {
            "resource": {
                "attributes": [{"key": "service.name", "value": {"stringValue": "claude-code"}}]
            },
            "scopeLogs": [
                {
                    "scope": {"name": "com.anthropic.claude_code.events", "version": "2.1.14"},
                    "logRecords": [
                        {
                            "timeUnixNano": "1763900000123456789",
                            "severityNumber": 9,
                            "traceId": "5b8efff798038103d269b633813fc60c",
                            "spanId": "eee19b7ec3c1b174",
                            "body": {"stringValue": "claude_code.tool_result"},
                            "attributes": [
                                {"key": "session.id", "value": {"stringValue": "s-1"}},
                                {"key": "event.name", "value": {"stringValue": "tool_result"}},
                                {"key": "tool_name", "value": {"stringValue": "Read"}},
                                {"key": "success", "value": {"boolValue": False}},
                                {"key": "duration_ms", "value": {"intValue": "17"}},
                                {"key": "error", "value": {"stringValue": "File not found"}},
                                {
                                    "key": "tool_parameters",
                                    "value": {
                                        "kvlistValue": {
                                            "values": [
                                                {
                                                    "key": "paths",
                                                    "value": {
                                                        "arrayValue": {
                                                            "values": [{"stringValue": "a.py"}]
                                                        }
                                                    },
                                                }
                                            ]
                                        }
                                    },
                                },
                            ],
                        }
                    ],
                }
            ],
        }
    ]
}


def test_otlp_json_per_the_spec_decodes_to_the_protobuf_message() -> None:
    message = decode_request("logs", json.dumps(SPEC_JSON).encode(), "application/json")
    assert isinstance(message, ExportLogsServiceRequest)
    record = message.resource_logs[0].scope_logs[0].log_records[0]
    assert record.trace_id.hex() == "5b8efff798038103d269b633813fc60c"
    assert record.span_id.hex() == "eee19b7ec3c1b174"
    assert record.severity_number == 9
    assert record.time_unix_nano == 1763900000123456789
    assert to_otlp_json(message) == SPEC_JSON


def test_rows_type_claude_code_attributes() -> None:
    message = decode_request("logs", json.dumps(SPEC_JSON).encode(), "application/json")
    assert isinstance(message, ExportLogsServiceRequest)
    rows = rows_from_logs(message, received_ns=1)
    (record,) = rows.records
    assert (record["name"], record["session_id"], record["ts"]) == (
        "claude_code.tool_result",
        "s-1",
        1763900000123456789,
    )
    (tool,) = rows.tool_results
    assert (tool["tool_name"], tool["success"], tool["duration_ms"], tool["error"]) == (
        "Read",
        False,
        17.0,
        "File not found",
    )
    assert json.loads(tool["tool_parameters"]) == {"paths": ["a.py"]}
    # the same record twice (a retried export) is one row
    assert merge([rows, rows]) == rows


def test_refusals_name_their_status() -> None:
    with pytest.raises(BadRequest) as exc:
        media_type("text/plain")
    assert exc.value.status == 415
    assert media_type("application/json; charset=utf-8") == "application/json"
    with pytest.raises(BadRequest) as exc:
        decompress(gzip.compress(b"x" * 1000), "gzip", limit=100)
    assert exc.value.status == 413
    assert decompress(gzip.compress(b"abc"), "gzip", limit=100) == b"abc"
    with pytest.raises(BadRequest) as exc:
        decode_request("logs", b"[1, 2]", "application/json")
    assert (exc.value.status, exc.value.message) == (400, "the JSON body is a list, not an object")
    bad_id = {"resourceLogs": [{"scopeLogs": [{"logRecords": [{"spanId": "xyz"}]}]}]}
    with pytest.raises(BadRequest) as exc:
        decode_request("logs", json.dumps(bad_id).encode(), "application/json")
    assert "$.resourceLogs[0].scopeLogs[0].logRecords[0].spanId" in exc.value.message


def test_spool_keeps_whole_frames_and_drops_a_torn_tail(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    spool.append("logs", 11, b"first")
    spool.append("metrics", 12, b"second")
    (segment,) = spool.rotate()
    with segment.open("ab") as fh:
        fh.write(b"\x01\x00\x00")  # a frame cut short by a crash (never acknowledged)
    frames = list(read_segment(segment))
    assert [(f.signal, f.received_ns, f.payload) for f in frames] == [
        ("logs", 11, b"first"),
        ("metrics", 12, b"second"),
    ]
    assert spool.pending_bytes > 0
    spool.done(segment)
    assert spool.pending_bytes == 0 and spool.rotate() == []
    # a restart numbers new segments after the ones left on disk
    spool.append("logs", 13, b"third")
    spool.close()
    again = Spool(tmp_path / "spool")
    assert [p.name for p in again.segments()] == ["000000000002.otlp"]
    again.append("logs", 14, b"fourth")
    assert [p.name for p in again.rotate()] == ["000000000002.otlp", "000000000003.otlp"]
