"""The trivial OTLP/HTTP receiver ``bench/otlp.py`` compares ``reflect serve`` with (not a bench
itself: the leading underscore).

The least a receiver on the same stack (Starlette served by uvicorn, one worker, the same
``log_level`` and no access log) can do: ``POST /v1/logs``, ``/v1/metrics`` and ``/v1/traces``
append the raw body to one file, flush it (no fsync, no decoding, no database) and answer 200
with an empty body. What a user would write to "just collect the telemetry".

    python bench/_otlp_trivial_receiver.py OUT_FILE   # prints "listening on http://HOST:PORT"
"""

from __future__ import annotations

import socket
import sys
import threading

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


def main() -> None:
    out = open(sys.argv[1], "ab")  # noqa: SIM115 - open for the server's life
    lock = threading.Lock()

    async def export(request: Request) -> Response:
        body = await request.body()
        with lock:
            out.write(len(body).to_bytes(4, "big") + body)
            out.flush()
        return Response(b"", media_type=request.headers.get("content-type"))

    routes = [Route(f"/v1/{s}", export, methods=["POST"]) for s in ("logs", "metrics", "traces")]
    config = uvicorn.Config(
        Starlette(routes=routes), host="127.0.0.1", port=0, log_level="warning", access_log=False
    )

    class _Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            host, port = self.servers[0].sockets[0].getsockname()[:2]
            print(f"listening on http://{host}:{port}", flush=True)

    _Server(config).run()


if __name__ == "__main__":
    main()
