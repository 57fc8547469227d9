"""OTLP messages into table rows: every record raw, Claude Code's events and metrics typed.

Pure functions: an ``Export*ServiceRequest`` in, a :class:`TelemetryRows` out. Claude Code's
telemetry (its "Monitoring" documentation) sends events as OTLP log records named
``claude_code.<event>`` (in the record's ``event_name``, its body, or the ``event.name``
attribute, which carries the name without the prefix) with the documented attributes
(``session.id``, ``tool_name``, ``success``, ``duration_ms``, ``error``, ``model``,
``cost_usd``, ``input_tokens``, ...), most of them as strings ("true", "123"); they are
converted to typed columns here. A record that is not one of the five known events is kept in
``otel_records`` only, never dropped.

Free text from telemetry attributes (prompts, errors, tool parameters, anything not in
:data:`IDENTIFIER_KEYS`) goes through the ``scrub`` function before it is stored anywhere: the
writer passes its database's keyed redactor (``database_redactor(con).text``), so a secret
gets the same placeholder here as in every other loader of that database.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Final

from google.protobuf import json_format
from google.protobuf.message import Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

from agent_reflection.redact import redact_text

#: The redaction step applied to free text: a string in, the string as it may be stored.
Scrub = Callable[[str], str]

#: Claude Code's events with a typed table (short name -> table).
EVENT_TABLES: Final = {
    "user_prompt": "prompts",
    "tool_result": "tool_results",
    "api_request": "api_requests",
    "api_error": "api_errors",
    "tool_decision": "tool_decisions",
}
EVENT_PREFIX: Final = "claude_code."
#: Attributes that name things (ids, names, versions): stored as sent. Every other string
#: attribute value is free text and passes the redaction step.
IDENTIFIER_KEYS: Final = frozenset(
    {
        "session.id",
        "prompt.id",
        "event.name",
        "event.timestamp",
        "event.sequence",
        "user.id",
        "user.account_uuid",
        "user.email",
        "organization.id",
        "app.version",
        "terminal.type",
        "service.name",
        "service.version",
        "os.type",
        "os.version",
        "host.arch",
        "tool_name",
        "model",
        "decision",
        "decision_type",
        "decision_source",
        "source",
        "type",
        "success",
        "status_code",
        "language",
    }
)
_TEMPORALITY: Final = {1: "delta", 2: "cumulative"}


@dataclass(frozen=True)
class TelemetryRows:
    """Rows for each table of ``sql/schema/70_otlp.sql`` (dicts keyed by column name)."""

    records: tuple[dict[str, Any], ...] = ()
    tool_results: tuple[dict[str, Any], ...] = ()
    api_requests: tuple[dict[str, Any], ...] = ()
    api_errors: tuple[dict[str, Any], ...] = ()
    prompts: tuple[dict[str, Any], ...] = ()
    tool_decisions: tuple[dict[str, Any], ...] = ()
    metric_points: tuple[dict[str, Any], ...] = ()


def any_value(value: AnyValue, scrub: Scrub | None = redact_text) -> Any:
    """An OTLP ``AnyValue`` as JSON-able Python (bytes as hex); strings passed through
    ``scrub`` (None: not free text, kept as sent)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "string_value":
        return value.string_value if scrub is None else scrub(value.string_value)
    if kind == "array_value":
        return [any_value(v, scrub) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value, scrub) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, kind)


def attributes(kvs: Iterable[KeyValue], scrub: Scrub = redact_text) -> dict[str, Any]:
    """Attributes as a dict; values of keys not in :data:`IDENTIFIER_KEYS` are scrubbed."""
    return {kv.key: any_value(kv.value, None if kv.key in IDENTIFIER_KEYS else scrub) for kv in kvs}


def rows_from_request(
    signal: str, request: Message, received_ns: int, scrub: Scrub = redact_text
) -> TelemetryRows:
    """The rows of one export request (``logs``, ``metrics`` or ``traces``); free text through
    ``scrub`` (default: the unkeyed redactor; the server passes its database's keyed one)."""
    if signal == "logs":
        assert isinstance(request, ExportLogsServiceRequest)
        return rows_from_logs(request, received_ns, scrub)
    if signal == "metrics":
        assert isinstance(request, ExportMetricsServiceRequest)
        return rows_from_metrics(request, received_ns, scrub)
    assert isinstance(request, ExportTraceServiceRequest)
    return rows_from_spans(request, received_ns, scrub)


def merge(parts: Iterable[TelemetryRows]) -> TelemetryRows:
    """One :class:`TelemetryRows` of many, each record once (the first copy of a record key)."""
    columns: dict[str, dict[str, dict[str, Any]]] = {name: {} for name in _FIELDS}
    for part in parts:
        for name in _FIELDS:
            table = columns[name]
            for row in getattr(part, name):
                table.setdefault(row["record_key"], row)
    return TelemetryRows(**{name: tuple(rows.values()) for name, rows in columns.items()})


_FIELDS: Final = tuple(f.name for f in fields(TelemetryRows))


class _Context:
    """A resource and scope: their attributes and the hash prefix of their records' keys."""

    def __init__(self, resource: Resource, scope: InstrumentationScope, scrub: Scrub) -> None:
        self.resource = attributes(resource.attributes, scrub)
        self.resource_json = json.dumps(self.resource, default=str)
        self.scope_name = scope.name or None
        service = self.resource.get("service.name")
        self.service_name = service if isinstance(service, str) else None
        digest = hashlib.sha256()
        digest.update(resource.SerializeToString(deterministic=True))
        digest.update(b"\x00")
        digest.update(scope.SerializeToString(deterministic=True))
        self.prefix = digest.digest()

    def key(self, *parts: bytes) -> str:
        digest = hashlib.sha256(self.prefix)
        for part in parts:
            digest.update(b"\x00")
            digest.update(part)
        return digest.hexdigest()[:32]

    def lookup(self, attrs: Mapping[str, Any], key: str) -> Any:
        return attrs[key] if key in attrs else self.resource.get(key)

    def record(
        self,
        key: str,
        signal: str,
        name: str | None,
        attrs: Mapping[str, Any],
        ts: int,
        body: str | None,
        received_ns: int,
    ) -> dict[str, Any]:
        """The ``otel_records`` row of one log record, metric point or span."""
        return {
            "record_key": key,
            "signal": signal,
            "name": name,
            "session_id": _text(self.lookup(attrs, "session.id")),
            "ts": ts,
            "service_name": self.service_name,
            "scope_name": self.scope_name,
            "attributes": json.dumps(attrs, default=str),
            "resource": self.resource_json,
            "body": body,
            "received_at": received_ns,
        }


def rows_from_logs(
    request: ExportLogsServiceRequest, received_ns: int, scrub: Scrub = redact_text
) -> TelemetryRows:
    """Every log record raw; Claude Code's five events also typed."""
    records: list[dict[str, Any]] = []
    typed: dict[str, list[dict[str, Any]]] = {t: [] for t in EVENT_TABLES.values()}
    for resource_logs in request.resource_logs:
        for scope_logs in resource_logs.scope_logs:
            ctx = _Context(resource_logs.resource, scope_logs.scope, scrub)
            for record in scope_logs.log_records:
                key = ctx.key(record.SerializeToString(deterministic=True))
                attrs = attributes(record.attributes, scrub)
                has_body = record.HasField("body")
                # the name from the body as sent; the body is stored scrubbed
                sent = any_value(record.body, None) if has_body else None
                name = _event_name(record.event_name, sent, attrs.get("event.name"))
                body = any_value(record.body, scrub) if has_body else None
                ts = (
                    record.time_unix_nano
                    or record.observed_time_unix_nano
                    or _iso_ns(attrs.get("event.timestamp"))
                    or received_ns
                )
                body_json = None if body is None else json.dumps(body, default=str)
                records.append(ctx.record(key, "log", name, attrs, ts, body_json, received_ns))
                session = records[-1]["session_id"]
                table = EVENT_TABLES.get((name or "").removeprefix(EVENT_PREFIX))
                if table is not None:
                    common = {
                        "record_key": key,
                        "session_id": session,
                        "ts": ts,
                        "prompt_id": _text(attrs.get("prompt.id")),
                    }
                    typed[table].append({**common, **_EVENT_COLUMNS[table](attrs)})
    return TelemetryRows(records=tuple(records), **{t: tuple(r) for t, r in typed.items()})


def _event_name(field: str, body: Any, attribute: Any) -> str | None:
    """``claude_code.<event>`` for a known event wherever its name is; else the name given."""
    for candidate in (field, body, attribute):
        if isinstance(candidate, str) and candidate.removeprefix(EVENT_PREFIX) in EVENT_TABLES:
            return EVENT_PREFIX + candidate.removeprefix(EVENT_PREFIX)
    if isinstance(body, str) and body.startswith(EVENT_PREFIX):
        return body  # Claude Code's body is the full event name
    for candidate in (field, attribute):
        if isinstance(candidate, str) and candidate:
            return candidate
    return None


def _tool_result(a: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "event_sequence": _int(a.get("event.sequence")),
        "tool_name": _text(a.get("tool_name")),
        "success": _bool(a.get("success")),
        "duration_ms": _float(a.get("duration_ms")),
        "error": _text(a.get("error")),
        "decision_type": _text(a.get("decision_type", a.get("decision"))),
        "decision_source": _text(a.get("decision_source", a.get("source"))),
        "tool_parameters": _text(a.get("tool_parameters")),
        "tool_result_size_bytes": _int(a.get("tool_result_size_bytes")),
    }


def _api_request(a: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "model": _text(a.get("model")),
        "cost_usd": _float(a.get("cost_usd")),
        "duration_ms": _float(a.get("duration_ms")),
        "input_tokens": _int(a.get("input_tokens")),
        "output_tokens": _int(a.get("output_tokens")),
        "cache_read_tokens": _int(a.get("cache_read_tokens")),
        "cache_creation_tokens": _int(a.get("cache_creation_tokens")),
    }


def _api_error(a: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "model": _text(a.get("model")),
        "error": _text(a.get("error")),
        "status_code": _text(a.get("status_code")),
        "duration_ms": _float(a.get("duration_ms")),
        "attempt": _int(a.get("attempt")),
    }


def _user_prompt(a: Mapping[str, Any]) -> dict[str, Any]:
    return {"prompt_length": _int(a.get("prompt_length")), "prompt": _text(a.get("prompt"))}


def _tool_decision(a: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "tool_name": _text(a.get("tool_name")),
        "decision": _text(a.get("decision")),
        "source": _text(a.get("source")),
    }


_EVENT_COLUMNS: Final[dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]]] = {
    "tool_results": _tool_result,
    "api_requests": _api_request,
    "api_errors": _api_error,
    "prompts": _user_prompt,
    "tool_decisions": _tool_decision,
}


def rows_from_metrics(
    request: ExportMetricsServiceRequest, received_ns: int, scrub: Scrub = redact_text
) -> TelemetryRows:
    """One raw record and one ``otel_metric_points`` row per data point."""
    records: list[dict[str, Any]] = []
    points: list[dict[str, Any]] = []
    for resource_metrics in request.resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            ctx = _Context(resource_metrics.resource, scope_metrics.scope, scrub)
            for metric in scope_metrics.metrics:
                kind = metric.WhichOneof("data")
                if kind is None:
                    continue
                data = getattr(metric, kind)
                temporality = _TEMPORALITY.get(getattr(data, "aggregation_temporality", 0))
                name_bytes = metric.name.encode()
                for point in data.data_points:
                    key = ctx.key(name_bytes, point.SerializeToString(deterministic=True))
                    attrs = attributes(point.attributes, scrub)
                    value, count = _point_value(kind, point)
                    ts = point.time_unix_nano or received_ns
                    raw = json_format.MessageToDict(point)
                    raw.pop("attributes", None)  # stored parsed, as the record's attributes
                    meta = {"kind": kind, "description": metric.description, "unit": metric.unit}
                    body = json.dumps({**meta, **raw})
                    records.append(
                        ctx.record(key, "metric", metric.name, attrs, ts, body, received_ns)
                    )
                    session = records[-1]["session_id"]
                    points.append(
                        {
                            "record_key": key,
                            "name": metric.name,
                            "kind": kind,
                            "unit": metric.unit or None,
                            "temporality": temporality,
                            "session_id": session,
                            "start_ts": getattr(point, "start_time_unix_nano", 0) or None,
                            "ts": ts,
                            "value": value,
                            "count": count,
                            "model": _text(attrs.get("model")),
                            "type": _text(attrs.get("type")),
                            "attributes": json.dumps(attrs, default=str),
                        }
                    )
    return TelemetryRows(records=tuple(records), metric_points=tuple(points))


def _point_value(kind: str, point: Any) -> tuple[float | None, int | None]:
    if kind in ("sum", "gauge"):
        which = point.WhichOneof("value")
        return (float(getattr(point, which)) if which else None), None
    has_sum = kind == "summary" or point.HasField("sum")
    return (float(point.sum) if has_sum else None), int(point.count)


def rows_from_spans(
    request: ExportTraceServiceRequest, received_ns: int, scrub: Scrub = redact_text
) -> TelemetryRows:
    """Spans are kept raw (``signal = 'span'``): no analysis reads them yet."""
    records: list[dict[str, Any]] = []
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            ctx = _Context(resource_spans.resource, scope_spans.scope, scrub)
            for span in scope_spans.spans:
                attrs = attributes(span.attributes, scrub)
                body = json_format.MessageToDict(span, use_integers_for_enums=True)
                body.pop("attributes", None)
                for field in ("traceId", "spanId", "parentSpanId"):
                    if field in body:
                        body[field] = getattr(span, _SNAKE[field]).hex()
                key = ctx.key(span.SerializeToString(deterministic=True))
                ts = span.end_time_unix_nano or span.start_time_unix_nano or received_ns
                body_json = json.dumps(body, default=str)
                records.append(
                    ctx.record(key, "span", span.name, attrs, ts, body_json, received_ns)
                )
    return TelemetryRows(records=tuple(records))


_SNAKE: Final = {"traceId": "trace_id", "spanId": "span_id", "parentSpanId": "parent_span_id"}


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def _float(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _int(value: Any) -> int | None:
    number = _float(value)
    if number is None or number != number or abs(number) >= 2**63:
        return None
    return int(number)


def _iso_ns(value: Any) -> int | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return None
    return int(parsed.timestamp() * 1e9)
