"""OTLP/HTTP request bodies into the official ``opentelemetry-proto`` messages.

The OpenTelemetry specification's OTLP/HTTP: ``Content-Type: application/x-protobuf`` (binary
protobuf) or ``application/json`` (OTLP/JSON: the proto3 JSON mapping with lowerCamelCase keys,
enums as integers, 64-bit integers as strings or numbers, and trace and span ids as hex strings,
not base64), optionally ``Content-Encoding: gzip``. Each failure is a :class:`BadRequest` with the
HTTP status the receiver answers (400, 413 or 415) and a message saying what was wrong.
"""

from __future__ import annotations

import base64
import json
import zlib
from typing import Any, Final

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

PROTOBUF: Final = "application/x-protobuf"
JSON: Final = "application/json"
#: The signals of OTLP/HTTP: URL path -> (request message, response message).
SIGNALS: Final[dict[str, tuple[type[Message], type[Message]]]] = {
    "logs": (ExportLogsServiceRequest, ExportLogsServiceResponse),
    "metrics": (ExportMetricsServiceRequest, ExportMetricsServiceResponse),
    "traces": (ExportTraceServiceRequest, ExportTraceServiceResponse),
}
#: OTLP/JSON fields holding ids as hex (the proto3 JSON mapping would have base64).
_HEX_ID_FIELDS: Final = frozenset(
    {"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"}
)


class BadRequest(Exception):
    """A request the receiver refuses: ``status`` is the HTTP status to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def media_type(content_type: str | None) -> str:
    """``application/x-protobuf`` or ``application/json`` (parameters dropped), else 415."""
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    if kind not in (PROTOBUF, JSON):
        raise BadRequest(
            415,
            f"Content-Type {content_type!r} is not supported: send {PROTOBUF} or {JSON} "
            "(OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf or http/json)",
        )
    return kind


def decompress(body: bytes, content_encoding: str | None, limit: int) -> bytes:
    """The body without its ``Content-Encoding`` (gzip or none), at most ``limit`` bytes."""
    encoding = (content_encoding or "identity").strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding != "gzip":
        raise BadRequest(415, f"Content-Encoding {content_encoding!r} is not supported: gzip")
    inflater = zlib.decompressobj(wbits=31)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise BadRequest(400, f"the gzip body does not decompress: {exc}") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise BadRequest(413, f"the decompressed body is larger than the limit of {limit:,} bytes")
    if not inflater.eof:
        raise BadRequest(400, "the gzip body is truncated")
    return out


def decode_request(signal: str, body: bytes, kind: str) -> Message:
    """The ``Export*ServiceRequest`` of ``signal`` decoded from ``body`` (already decompressed)."""
    request_type = SIGNALS[signal][0]
    message = request_type()
    if kind == PROTOBUF:
        try:
            message.ParseFromString(body)
        except DecodeError as exc:
            raise BadRequest(
                400, f"the body is not a protobuf {request_type.__name__}: {exc}"
            ) from None
        return message
    try:
        obj = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(400, f"the body is not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise BadRequest(400, f"the JSON body is a {type(obj).__name__}, not an object")
    try:
        json_format.ParseDict(_hex_ids_to_base64(obj, "$"), message, ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise BadRequest(
            400, f"the JSON body is not an OTLP {request_type.__name__}: {exc}"
        ) from None
    return message


def encode_response(signal: str, kind: str) -> bytes:
    """An empty (full success) ``Export*ServiceResponse`` in the request's encoding."""
    response = SIGNALS[signal][1]()
    if kind == JSON:
        text: str = json_format.MessageToJson(response)
        return text.encode()
    payload: bytes = response.SerializeToString()
    return payload


def _hex_ids_to_base64(value: Any, path: str) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key in _HEX_ID_FIELDS and isinstance(item, str):
                try:
                    out[key] = base64.b64encode(bytes.fromhex(item)).decode()
                except ValueError:
                    raise BadRequest(
                        400, f"{path}.{key} = {item[:80]!r} is not a hex id (OTLP/JSON)"
                    ) from None
            else:
                out[key] = _hex_ids_to_base64(item, f"{path}.{key}")
        return out
    if isinstance(value, list):
        return [_hex_ids_to_base64(item, f"{path}[{i}]") for i, item in enumerate(value)]
    return value
