"""``reflect serve`` as a real process on a free loopback port, and Claude Code-shaped telemetry
sent through the official OpenTelemetry Python SDK (LoggerProvider -> OTLPLogExporter)."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

REPO_ROOT = Path(__file__).resolve().parents[1]
WAIT = 30.0


class Server:
    """A running ``reflect serve``: its endpoint and its output lines."""

    def __init__(
        self, proc: subprocess.Popen[str], endpoint: str, token: str | None = None
    ) -> None:
        self.proc = proc
        self.endpoint = endpoint
        self.token = token  # the status page wants it when the server has one
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_line(self, text: str, timeout: float = WAIT) -> str:
        """The first output line containing ``text`` (waiting for it)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = next((line for line in list(self.lines) if text in line), None)
            if found is not None:
                return found
            time.sleep(0.02)
        raise AssertionError(f"no line with {text!r} in {self.lines}")

    def status(self) -> dict[str, Any]:
        request = urllib.request.Request(self.endpoint + "/")
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        with urllib.request.urlopen(request, timeout=10) as response:
            result: dict[str, Any] = json.loads(response.read())
        return result

    def wait_stored(self, records: int, timeout: float = WAIT) -> dict[str, Any]:
        """Wait until the server has read ``records`` records and nothing is spooled."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.status()
            if status["records_read"] >= records and status["spooled_bytes"] == 0:
                return status
            if time.monotonic() > deadline:
                raise AssertionError(f"not stored after {timeout} s: {status}")
            time.sleep(0.05)


def mapped_packages(pid: int, *names: str) -> set[str]:
    """Which of the installed packages ``names`` have files mapped into process ``pid`` (a
    server started with this interpreter; Linux's /proc/PID/maps: a package whose extension
    modules were imported shows them there), wherever this interpreter finds them."""
    maps = Path(f"/proc/{pid}/maps").read_text()
    found = set()
    for name in names:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.submodule_search_locations, f"{name} is not installed"
        if any(f"{folder}/" in maps for folder in spec.submodule_search_locations):
            found.add(name)
    return found


def serve_env(**extra: str) -> dict[str, str]:
    src = str(REPO_ROOT / "src")
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{path}" if path else src, **extra}


@contextmanager
def running_server(
    db_path: Path, *args: str, env: Mapping[str, str] | None = None, kill: bool = False
) -> Iterator[Server]:
    """``reflect serve --port 0 --db DB ARGS`` until the block ends (SIGINT, or SIGKILL when
    ``kill``: a crash)."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agent_reflection",
            "serve",
            "--port",
            "0",
            "--db",
            str(db_path),
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=dict(env or serve_env()),
    )
    assert proc.stdout is not None
    before: list[str] = []  # e.g. "cannot write to ... now" when the database is locked
    while "OTLP/HTTP on " not in (line := proc.stdout.readline()):
        if not line:
            proc.kill()
            raise AssertionError("reflect serve did not start:\n" + "".join(before))
        before.append(line)
    endpoint = line.split("OTLP/HTTP on ", 1)[1].split()[0]
    token = args[args.index("--token") + 1] if "--token" in args else None
    server = Server(proc, endpoint, token)
    server.lines[:0] = [*(b.rstrip("\n") for b in before), line.rstrip("\n")]
    try:
        yield server
    finally:
        if kill:
            proc.kill()
        else:
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(WAIT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(WAIT)


def post_json(endpoint: str, signal: str, body: dict[str, Any]) -> int:
    """POST ``body`` as OTLP/JSON to ``endpoint``'s ``/v1/<signal>``; the HTTP status."""
    request = urllib.request.Request(
        f"{endpoint}/v1/{signal}",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        status: int = response.status
    return status


def exporter_env(monkeypatch: Any, endpoint: str, token: str | None = None) -> None:
    """The environment a user puts in Claude Code's settings, for the SDK exporters here."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    if token:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Bearer {token}")
    else:
        monkeypatch.delenv("OTEL_EXPORTER_OTLP_HEADERS", raising=False)


CLAUDE_RESOURCE = {
    "service.name": "claude-code",
    "service.version": "2.1.14",
    "os.type": "linux",
}


def claude_event(name: str, session: str, seq: int, **attributes: Any) -> dict[str, Any]:
    """One Claude Code event as its exporter shapes it: body ``claude_code.<name>``, the
    ``event.name`` attribute without the prefix, standard attributes as strings."""
    return {
        "body": f"claude_code.{name}",
        "attributes": {
            "session.id": session,
            "event.name": name,
            "event.sequence": seq,
            "event.timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
            "user.id": "u-1",
            "organization.id": "org-1",
            "app.version": "2.1.14",
            "terminal.type": "vscode",
            **{
                k: v if isinstance(v, str) else json.dumps(v) if isinstance(v, dict) else v
                for k, v in attributes.items()
            },
        },
    }


def send_events(
    events: list[dict[str, Any]], *, compression: Any = None, batch_size: int = 512
) -> None:
    """Emit ``events`` through the SDK (LoggerProvider, BatchLogRecordProcessor,
    OTLPLogExporter configured from the environment) and flush."""
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource

    provider = LoggerProvider(resource=Resource.create(CLAUDE_RESOURCE))
    provider.add_log_record_processor(
        BatchLogRecordProcessor(
            OTLPLogExporter(compression=compression),
            max_export_batch_size=batch_size,
            max_queue_size=max(2048, len(events) + 1),
            schedule_delay_millis=60_000,
        )
    )
    logger = provider.get_logger("com.anthropic.claude_code.events", "2.1.14")
    base = time.time_ns()
    for i, event in enumerate(events):
        logger.emit(timestamp=base + i * 1000, body=event["body"], attributes=event["attributes"])
    assert provider.force_flush(60_000)
    provider.shutdown()


def query(
    db_path: Path, sql: str, params: list[Any] | dict[str, Any] | None = None
) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` on the database (read-only; the server may hold it for a moment)."""
    deadline = time.monotonic() + WAIT
    while True:
        try:
            con = duckdb.connect(str(db_path), read_only=True)
            break
        except duckdb.IOException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def to_otlp_json(message: Any) -> dict[str, Any]:
    """``message`` as an OTLP/JSON object (hex ids, integer enums): what a JSON exporter sends."""
    import base64

    from google.protobuf import json_format

    def hex_ids(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                key: base64.b64decode(item).hex()
                if key in ("traceId", "spanId", "parentSpanId") and isinstance(item, str)
                else hex_ids(item)
                for key, item in value.items()
            }
        if isinstance(value, list):
            return [hex_ids(item) for item in value]
        return value

    converted: dict[str, Any] = hex_ids(
        json_format.MessageToDict(message, use_integers_for_enums=True)
    )
    return converted
