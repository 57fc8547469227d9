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
)
from agent_reflection.serve.rows import merge, rows_from_logs
from agent_reflection.serve.spool import Spool, read_segment
from serve_harness import to_otlp_json

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


def test_a_full_segment_is_closed_so_a_backlog_is_taken_a_segment_at_a_time(
    tmp_path: Path,
) -> None:
    """The writer's batches are whole segments: a segment closes once it holds
    ``segment_bytes``, so how far the writer is behind never makes one batch larger."""
    spool = Spool(tmp_path / "spool", segment_bytes=30)
    payloads = [bytes([65 + i]) * 20 for i in range(5)]  # 37-byte frames: one per segment
    for i, payload in enumerate(payloads):
        spool.append("logs", i, payload)
        assert len(spool.segments()) == i + 1  # each closed at once, before any rotate
    assert spool.pending_bytes == 5 * 37
    segments = spool.rotate()
    assert [[f.payload for f in read_segment(s)] for s in segments] == [[p] for p in payloads]
    for segment in segments:
        spool.done(segment)
    assert spool.pending_bytes == 0
    small = Spool(tmp_path / "small", segment_bytes=1000)
    for i in range(3):
        small.append("logs", i, b"x")
    assert len(small.rotate()) == 1  # under the size: the three frames in one segment


def _events(*events: tuple[str, int]) -> ExportLogsServiceRequest:
    """A request with Claude Code events (name, time in seconds) of session s-1."""
    request = ExportLogsServiceRequest()
    scope = request.resource_logs.add().scope_logs.add()
    for name, at in events:
        record = scope.log_records.add()
        record.time_unix_nano = at * 10**9
        record.body.string_value = f"claude_code.{name}"
        for key, value in (("session.id", "s-1"), ("tool_name", f"T{at}"), ("success", "true")):
            attribute = record.attributes.add()
            attribute.key, attribute.value.string_value = key, value
    return request


def test_in_loop_numbering_appends_in_order_and_renumbers_a_late_batch() -> None:
    from agent_reflection.serve.store import SOURCE, store_rows
    from agent_reflection.store.db import connect, start_load

    con = connect(":memory:")
    load_id = start_load(con, SOURCE, "test").load_id

    def store(request: ExportLogsServiceRequest) -> list[tuple[object, ...]]:
        rows = rows_from_logs(request, received_ns=0)
        store_rows(con, rows, load_id)
        return con.execute(
            "SELECT name, seq, task_index, task_seq FROM tool_calls ORDER BY seq"
        ).fetchall()

    assert store(_events(("tool_result", 10), ("tool_result", 20))) == [
        ("T10", 1, 0, 1),
        ("T20", 2, 0, 2),
    ]
    assert store(_events(("user_prompt", 25), ("tool_result", 30))) == [
        ("T10", 1, 0, 1),
        ("T20", 2, 0, 2),
        ("T30", 3, 1, 1),
    ]
    # a late batch: a call and a prompt from before the last numbered call
    assert store(_events(("tool_result", 15), ("user_prompt", 5))) == [
        ("T10", 1, 1, 1),
        ("T15", 2, 1, 2),
        ("T20", 3, 1, 3),
        ("T30", 4, 2, 1),
    ]
    assert con.execute("SELECT n_tool_calls, n_prompts FROM sessions").fetchall() == [(4, 2)]


def test_spans_are_kept_raw_with_hex_ids() -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    from agent_reflection.serve.rows import rows_from_spans

    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.name, span.trace_id, span.span_id = "claude_code.interaction", bytes(16), b"\x01" * 8
    span.start_time_unix_nano, span.end_time_unix_nano = 5, 9
    attribute = span.attributes.add()
    attribute.key, attribute.value.string_value = "session.id", "s-9"
    (record,) = rows_from_spans(request, received_ns=1).records
    assert (record["signal"], record["name"], record["session_id"], record["ts"]) == (
        "span",
        "claude_code.interaction",
        "s-9",
        9,
    )
    body = json.loads(record["body"])
    assert (body["traceId"], body["spanId"]) == ("0" * 32, "01" * 8)


def test_free_text_passes_the_redaction_step_and_ids_do_not() -> None:
    """The one call site: every free-text attribute goes through the redaction step."""
    spec = json.loads(json.dumps(SPEC_JSON))
    record = spec["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]
    record["attributes"] = [a for a in record["attributes"] if a["key"] != "event.name"]
    message = decode_request("logs", json.dumps(spec).encode(), "application/json")
    assert isinstance(message, ExportLogsServiceRequest)
    parsed = rows_from_logs(message, received_ns=1, scrub=lambda text: f"<redacted:{len(text)}>")
    (tool,) = parsed.tool_results
    assert (tool["session_id"], tool["tool_name"]) == ("s-1", "Read")
    assert tool["error"] == "<redacted:14>"
    assert json.loads(tool["tool_parameters"]) == {"paths": ["<redacted:4>"]}
    assert "File not found" not in parsed.records[0]["attributes"]
    # the event is still recognised by its body as sent; the stored body is scrubbed
    assert parsed.records[0]["name"] == "claude_code.tool_result"
    assert json.loads(parsed.records[0]["body"]) == "<redacted:23>"


@pytest.mark.parametrize(
    "value",
    [
        {"tool_name": "Bash", "error": "café ✓ \u007f", "n": 3, "ok": True, "x": 0.1},
        {"nested": {"list": [1, 2.5, "three", {"four": [False]}]}, "big": 2**63 - 1},
        {"empty": "", "small": 1e-7, "large": 1e22, "neg": -0.0},
        "claude_code.tool_result",
    ],
)
def test_json_text_is_the_same_json_as_the_standard_librarys(value: object) -> None:
    from agent_reflection.serve.rows import json_text

    assert json.loads(json_text(value)) == json.loads(json.dumps(value, default=str))


@pytest.mark.parametrize(
    "value",
    [
        {"value": float("nan")},
        {"value": [float("inf"), float("-inf")]},
        {"value": None, "other": "x"},
        {"text": "a \ud800 lone surrogate"},
        {"huge": 2**70},
    ],
)
def test_json_text_keeps_what_orjson_would_change_or_refuse(value: object) -> None:
    """NaN and infinities (orjson writes null), a lone surrogate and an integer past 64 bits
    (orjson refuses them) are written as the standard library writes them."""
    from agent_reflection.serve.rows import json_text

    assert json_text(value) == json.dumps(value, default=str)
