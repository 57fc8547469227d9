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

Times are stored as nanoseconds since the epoch in a signed 64-bit integer, so the last one a
table holds is 2262-04-11T23:47:16Z (:data:`LAST_NS`); OTLP's unsigned 64-bit fields allow
later ones. A record with a time after it (``timeUnixNano``, ``observedTimeUnixNano``, an
``event.timestamp`` used as its time, a point's or span's start or end) or a count over the
largest signed 64-bit integer is not stored: it comes back in :attr:`TelemetryRows.rejected`
with the field and value that ruled it out, and the writer keeps it in ``rejected``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Final

import orjson
from google.protobuf import json_format
from google.protobuf.message import Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

from agent_reflection.redact import Redactor, redact_text

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
#: The largest time (ns since the epoch) and count a table column holds: 2**63 - 1.
LAST_NS: Final = 2**63 - 1


@dataclass(frozen=True)
class Rejected:
    """A record that cannot be stored: where it came from, its text and why."""

    location: str
    raw: str | None
    reason: str


@dataclass(frozen=True)
class TelemetryRows:
    """Rows for each table of ``sql/schema/70_otlp.sql`` (dicts keyed by column name), and the
    records that cannot be stored (:attr:`rejected`)."""

    records: tuple[dict[str, Any], ...] = ()
    tool_results: tuple[dict[str, Any], ...] = ()
    api_requests: tuple[dict[str, Any], ...] = ()
    api_errors: tuple[dict[str, Any], ...] = ()
    prompts: tuple[dict[str, Any], ...] = ()
    tool_decisions: tuple[dict[str, Any], ...] = ()
    metric_points: tuple[dict[str, Any], ...] = ()
    rejected: tuple[Rejected, ...] = ()


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
    out: dict[str, Any] = {}
    for kv in kvs:
        key, value = kv.key, kv.value
        # most attributes are non-empty strings: no WhichOneof call (an empty string_value may
        # be another kind of value, or an empty string: any_value tells them apart)
        text = value.string_value
        if text:
            out[key] = text if key in IDENTIFIER_KEYS else scrub(text)
        else:
            out[key] = any_value(value, None if key in IDENTIFIER_KEYS else scrub)
    return out


def json_text(value: Any) -> str:
    """``value`` (attributes, a body) as the JSON text a table stores. orjson's text (a tenth
    of ``json.dumps``'s time, which was about a twentieth of the receiver's CPU): no spaces,
    non-ASCII as UTF-8. The standard library's (as before) where the text holds a null, since
    orjson writes NaN and infinities as null where the standard library keeps them (``NaN``,
    ``Infinity``, which DuckDB's JSON reads), and where orjson refuses the value (a lone
    surrogate, an integer past 64 bits)."""
    try:
        text = orjson.dumps(value, default=str)
        if b"null" not in text:
            return text.decode()
    except orjson.JSONEncodeError:
        pass
    return json.dumps(value, default=str)


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


def rows_redacted_in_one_pass(
    signal: str, request: Message, received_ns: int, redactor: Redactor
) -> TelemetryRows:
    """:func:`rows_from_request` with ``redactor``, its free text redacted in one pass over all
    of it (:meth:`Redactor.texts`) rather than one call per value: the rows are made with the
    text as sent while the text is noted, and made again with the redacted text only when the
    pass changed any of it (an export with a secret)."""
    sent: dict[str, None] = {}

    def note(text: str) -> str:
        sent[text] = None
        return text

    rows = rows_from_request(signal, request, received_ns, note)
    texts = list(sent)
    redacted = redactor.texts(texts)
    if redacted == texts:
        return rows
    table = dict(zip(texts, redacted, strict=True))

    def scrub(text: str) -> str:
        found = table.get(text)
        return redactor.text(text) if found is None else found

    return rows_from_request(signal, request, received_ns, scrub)


#: The fields of :class:`TelemetryRows` that are tables (``otel_<name>``).
TABLES: Final = tuple(f.name for f in fields(TelemetryRows) if f.name != "rejected")


def merge(parts: Iterable[TelemetryRows]) -> TelemetryRows:
    """One :class:`TelemetryRows` of many, each record once (the first copy of a record key)."""
    columns: dict[str, dict[str, dict[str, Any]]] = {name: {} for name in TABLES}
    rejected: dict[tuple[str, str], Rejected] = {}
    for part in parts:
        for name in TABLES:
            table = columns[name]
            for row in getattr(part, name):
                table.setdefault(row["record_key"], row)
        for reject in part.rejected:
            rejected.setdefault((reject.location, reject.reason), reject)
    return TelemetryRows(
        **{name: tuple(rows.values()) for name, rows in columns.items()},
        rejected=tuple(rejected.values()),
    )


def per_record(rows: TelemetryRows) -> list[TelemetryRows]:
    """``rows`` split into one :class:`TelemetryRows` per record (its raw row and typed rows),
    so that a record the database refuses can be told from the rest of its batch."""
    split: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for name in TABLES:
        for row in getattr(rows, name):
            split.setdefault(row["record_key"], {}).setdefault(name, []).append(row)
    return [
        TelemetryRows(**{n: tuple(r) for n, r in tables.items()}, rejected=())
        for tables in split.values()
    ]


def record_location(signal: str, record_key: str) -> str:
    """Where a rejected record came from: its signal and key (the same record, the same key)."""
    return f"otlp {signal} record {record_key}"


def _out_of_range(values: Mapping[str, int | None]) -> str | None:
    """Why a record cannot be stored: the first of ``values`` (field name -> number) outside
    the signed 64-bit range of the tables' times and counts; None when all fit."""
    for field, value in values.items():
        if value is not None and not -LAST_NS <= value <= LAST_NS:
            return (
                f"{field} {value} does not fit a stored time or count (at most {LAST_NS}: "
                f"2262-04-11T23:47:16Z in nanoseconds); the record is kept here, not stored"
            )
    return None


def _rejected(signal: str, key: str, message: Message, reason: str) -> Rejected:
    raw = json_format.MessageToJson(message, indent=None)
    return Rejected(record_location(signal, key), raw, reason)


class _Context:
    """A resource and scope: their attributes and the hash prefix of their records' keys."""

    def __init__(self, resource: Resource, scope: InstrumentationScope, scrub: Scrub) -> None:
        self.resource = attributes(resource.attributes, scrub)
        self.resource_json = json_text(self.resource)
        self.scope_name = scrub(scope.name) if scope.name else None
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
            "attributes": json_text(attrs),
            "resource": self.resource_json,
            "body": body,
            "received_at": received_ns,
        }


def rows_from_logs(
    request: ExportLogsServiceRequest, received_ns: int, scrub: Scrub = redact_text
) -> TelemetryRows:
    """Every log record raw; Claude Code's five events also typed."""
    records: list[dict[str, Any]] = []
    rejected: list[Rejected] = []
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
                if name is not None and not _known_event(name):
                    name = scrub(name)  # a name the sender chose is free text
                if isinstance(sent, str):
                    body: Any = scrub(sent)
                else:
                    body = any_value(record.body, scrub) if has_body else None
                times = {
                    "timeUnixNano": record.time_unix_nano,
                    "observedTimeUnixNano": record.observed_time_unix_nano,
                }
                if not any(times.values()):
                    times["event.timestamp"] = _iso_ns(attrs.get("event.timestamp"))
                problem = _out_of_range(times)
                if problem is not None:
                    rejected.append(_rejected("log", key, record, problem))
                    continue
                ts = (
                    times["timeUnixNano"]
                    or times["observedTimeUnixNano"]
                    or times.get("event.timestamp")
                    or received_ns
                )
                body_json = None if body is None else json_text(body)
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
    return TelemetryRows(
        records=tuple(records),
        **{t: tuple(r) for t, r in typed.items()},
        rejected=tuple(rejected),
    )


def _known_event(name: str) -> bool:
    return name.startswith(EVENT_PREFIX) and name.removeprefix(EVENT_PREFIX) in EVENT_TABLES


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
    rejected: list[Rejected] = []
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
                name = scrub(metric.name)
                for point in data.data_points:
                    key = ctx.key(name_bytes, point.SerializeToString(deterministic=True))
                    attrs = attributes(point.attributes, scrub)
                    value, count = _point_value(kind, point)
                    problem = _out_of_range(
                        {
                            "timeUnixNano": point.time_unix_nano,
                            "startTimeUnixNano": getattr(point, "start_time_unix_nano", 0),
                            "count": count,
                        }
                    )
                    if problem is not None:
                        rejected.append(_rejected("metric", key, point, problem))
                        continue
                    ts = point.time_unix_nano or received_ns
                    raw = json_format.MessageToDict(point)
                    raw.pop("attributes", None)  # stored parsed, as the record's attributes
                    raw = _scrubbed(raw, scrub)  # exemplars' attributes
                    meta = {
                        "kind": kind,
                        "description": scrub(metric.description),
                        "unit": metric.unit,
                    }
                    body = json.dumps({**meta, **raw})
                    records.append(ctx.record(key, "metric", name, attrs, ts, body, received_ns))
                    session = records[-1]["session_id"]
                    points.append(
                        {
                            "record_key": key,
                            "name": name,
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
                            "attributes": json_text(attrs),
                        }
                    )
    return TelemetryRows(
        records=tuple(records), metric_points=tuple(points), rejected=tuple(rejected)
    )


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
    rejected: list[Rejected] = []
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            ctx = _Context(resource_spans.resource, scope_spans.scope, scrub)
            for span in scope_spans.spans:
                attrs = attributes(span.attributes, scrub)
                body = json_format.MessageToDict(span, use_integers_for_enums=True)
                body.pop("attributes", None)
                # events, links, status and trace state are free text too
                body = _scrubbed(body, scrub)
                for field in ("traceId", "spanId", "parentSpanId"):
                    if field in body:
                        body[field] = getattr(span, _SNAKE[field]).hex()
                key = ctx.key(span.SerializeToString(deterministic=True))
                problem = _out_of_range(
                    {
                        "startTimeUnixNano": span.start_time_unix_nano,
                        "endTimeUnixNano": span.end_time_unix_nano,
                    }
                )
                if problem is not None:
                    rejected.append(_rejected("span", key, span, problem))
                    continue
                ts = span.end_time_unix_nano or span.start_time_unix_nano or received_ns
                body_json = json_text(body)
                records.append(
                    ctx.record(key, "span", scrub(span.name), attrs, ts, body_json, received_ns)
                )
    return TelemetryRows(records=tuple(records), rejected=tuple(rejected))


_SNAKE: Final = {"traceId": "trace_id", "spanId": "span_id", "parentSpanId": "parent_span_id"}
#: Fields of a span's JSON form that are ids, times or enums: kept as sent.
_NOT_TEXT: Final = frozenset(
    {*_SNAKE, "startTimeUnixNano", "endTimeUnixNano", "timeUnixNano", "kind", "code", "flags"}
)


def _scrubbed(value: Any, scrub: Scrub) -> Any:
    """``value`` (a message's JSON form) with every string but ids and times through ``scrub``."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, list):
        return [_scrubbed(item, scrub) for item in value]
    if isinstance(value, dict):
        return {
            key: item if key in _NOT_TEXT else _scrubbed(item, scrub) for key, item in value.items()
        }
    return value


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().lower()
        if word == "true":
            return True
        if word == "false":
            return False
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
