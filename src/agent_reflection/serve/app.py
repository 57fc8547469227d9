"""The OTLP/HTTP receiver: a Starlette application served by uvicorn.

``POST /v1/logs``, ``/v1/metrics`` and ``/v1/traces`` take an export request (protobuf or
OTLP/JSON, optionally gzip), check it decodes, append it to the spool (fsync'd) and answer 200
with an empty ``Export*ServiceResponse`` in the request's encoding. Refusals follow the
specification's statuses with a ``google.rpc.Status`` body: 400 (does not decode), 401 (bearer
token missing or wrong, when one is set), 413 (body over the limit), 415 (content type or
encoding), 503 with ``Retry-After`` (the spool holds more than its limit because the database
has been refusing writes; the exporter retries). ``GET /`` reports the writer's counts (with
the bearer token, when one is set).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import status_pb2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agent_reflection.serve.decode import (
    JSON,
    PROTOBUF,
    BadRequest,
    decode_request,
    decompress,
    encode_response,
    media_type,
)
from agent_reflection.serve.spool import Spool
from agent_reflection.serve.writer import Writer
from agent_reflection.store.db import pandas_deferred

DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 4318
DEFAULT_MAX_BODY: Final = 16 * 1024 * 1024
DEFAULT_SPOOL_LIMIT: Final = 1024 * 1024 * 1024
RETRY_AFTER_SECONDS: Final = 5
#: gRPC status codes in the error bodies.
_INVALID_ARGUMENT: Final = 3
_UNAVAILABLE: Final = 14
_UNAUTHENTICATED: Final = 16


@dataclass(frozen=True)
class ServeSettings:
    """What ``reflect serve`` was told."""

    db_path: Path
    spool_dir: Path
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    token: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY
    spool_limit_bytes: int = DEFAULT_SPOOL_LIMIT


def create_app(settings: ServeSettings, spool: Spool, writer: Writer) -> Starlette:
    """The receiver's routes over ``spool`` (drained by ``writer``)."""
    expected = f"Bearer {settings.token}".encode() if settings.token else None

    async def export(request: Request) -> Response:
        signal = request.url.path.rsplit("/", 1)[-1]
        # a refusal answers in the request's encoding (JSON to a JSON request), so the
        # content type is read before the token is checked; an unknown one is refused below
        kind = PROTOBUF
        with contextlib.suppress(BadRequest):
            kind = media_type(request.headers.get("content-type"))
        if expected is not None:
            given = request.headers.get("authorization", "").encode()
            if not hmac.compare_digest(given, expected):
                # said where the server's operator looks: an exporter only logs its retries
                client = request.client.host if request.client else "?"
                writer.on_message(
                    f"401 for POST {request.url.path} from {client}: "
                    f"{'a wrong' if given else 'no'} bearer token (--token / REFLECT_SERVE_TOKEN)"
                )
                return _status(
                    401,
                    _UNAUTHENTICATED,
                    "missing or wrong bearer token",
                    kind,
                    {"WWW-Authenticate": "Bearer"},
                )
        try:
            kind = media_type(request.headers.get("content-type"))
            body = await _read_body(request, settings.max_body_bytes)
            encoding = request.headers.get("content-encoding")
            # off the event loop: a 16 MiB body takes tens of milliseconds to inflate and parse
            body, message = await asyncio.to_thread(
                _decode, signal, body, kind, encoding, settings.max_body_bytes
            )
        except BadRequest as exc:
            return _status(exc.status, _INVALID_ARGUMENT, exc.message, kind)
        if spool.pending_bytes > settings.spool_limit_bytes:
            return _status(
                503,
                _UNAVAILABLE,
                f"the database is not taking writes ({writer.last_error}); "
                f"{spool.pending_bytes:,} bytes are queued, retry later",
                kind,
                {"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
        if message.ByteSize():
            payload = body if kind == PROTOBUF else message.SerializeToString()
            await asyncio.to_thread(spool.append, signal, time.time_ns(), payload)
            writer.wake()
        return Response(encode_response(signal, kind), media_type=kind)

    async def status(request: Request) -> Response:
        # the database's path and its last error are for whoever may send telemetry
        if expected is not None:
            given = request.headers.get("authorization", "").encode()
            if not hmac.compare_digest(given, expected):
                return JSONResponse(
                    {"error": "missing or wrong bearer token"},
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
        return JSONResponse(
            {"service": "reflect serve", "database": str(settings.db_path), **writer.status()}
        )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        writer.start()
        try:
            yield
        finally:
            await asyncio.to_thread(writer.stop)

    routes = [
        Route(f"/v1/{signal}", export, methods=["POST"]) for signal in ("logs", "metrics", "traces")
    ]
    return Starlette(routes=[*routes, Route("/", status)], lifespan=lifespan)


def _decode(
    signal: str, body: bytes, kind: str, encoding: str | None, limit: int
) -> tuple[bytes, Message]:
    plain = decompress(body, encoding, limit)
    return plain, decode_request(signal, plain, kind)


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BadRequest(
            413, f"the body ({int(declared):,} bytes) is over the limit of {limit:,} bytes"
        )
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BadRequest(413, f"the body is over the limit of {limit:,} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _status(
    code: int, grpc_code: int, message: str, kind: str, headers: dict[str, str] | None = None
) -> Response:
    status = status_pb2.Status(code=grpc_code, message=message)
    if kind == JSON:
        body = json_format.MessageToJson(status).encode()
    else:
        body = status.SerializeToString()
    return Response(body, status_code=code, media_type=kind, headers=headers)


def startup_lines(endpoint: str, settings: ServeSettings) -> list[str]:
    """What ``reflect serve`` prints once it listens: the environment variables that point
    Claude Code at this receiver."""
    env = {
        "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
        "OTEL_LOGS_EXPORTER": "otlp",
        "OTEL_METRICS_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
    }
    if settings.token:
        env["OTEL_EXPORTER_OTLP_HEADERS"] = f"Authorization=Bearer {settings.token}"
    return [
        f"reflect serve: OTLP/HTTP on {endpoint} (/v1/logs, /v1/metrics, /v1/traces) -> "
        f"{settings.db_path} (spool {settings.spool_dir})",
        "Claude Code settings (~/.claude/settings.json):",
        json.dumps({"env": env}, indent=2),
        "or in the shell: "
        + " ".join(f"{k}={v!r}" if " " in v else f"{k}={v}" for k, v in env.items()),
    ]


#: Seconds a connection may take to send a request's headers (uvicorn sets no such bound): a
#: client that opens connections and dribbles header bytes cannot hold them open.
HEADER_TIMEOUT_SECONDS: Final = 10.0


def _header_timed_protocol() -> type:
    """uvicorn's h11 protocol, closing a connection whose request headers have not all
    arrived within :data:`HEADER_TIMEOUT_SECONDS` of it opening or of its last response."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderTimedH11(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def _arm(self) -> None:
            self._disarm()
            self._header_timer = self.loop.call_later(HEADER_TIMEOUT_SECONDS, self._expire)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _expire(self) -> None:
            self._header_timer = None
            if not self.transport.is_closing():
                self.transport.close()

        def handle_events(self) -> None:
            started = self.cycle
            super().handle_events()
            if self.cycle is not started:  # a request's headers are complete
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()  # the next request on this connection gets the same bound

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return HeaderTimedH11


def run_server(settings: ServeSettings, on_line: Any) -> None:
    """Serve until interrupted; ``on_line`` gets the startup lines once the port is bound."""
    import uvicorn

    spool = Spool(settings.spool_dir)
    writer = Writer(
        settings.db_path,
        spool,
        f"http://{settings.host}:{settings.port}",
        on_message=lambda m: on_line(f"reflect serve: {m}"),
    )
    app = create_app(settings, spool, writer)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level="warning",
        lifespan="on",
        access_log=False,
        http=_header_timed_protocol(),
    )

    class _Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.should_exit:
                return
            host, port = self.servers[0].sockets[0].getsockname()[:2]
            shown = f"[{host}]" if ":" in host else host
            writer.origin = f"reflect serve http://{shown}:{port}"  # the loads row's origin
            for line in startup_lines(f"http://{shown}:{port}", settings):
                on_line(line)

    # Nothing the server runs uses pandas, which DuckDB's first bound parameter would import:
    # without it an idle server holds 47 MiB less (docs/loading.md, "Memory").
    with pandas_deferred():
        _Server(config).run()
