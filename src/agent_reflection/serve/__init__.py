"""``reflect serve``: an OTLP/HTTP receiver for Claude Code's telemetry.

* :mod:`.decode`: request bodies (protobuf, OTLP/JSON, gzip) into ``opentelemetry-proto``
  messages, with the HTTP status of each refusal.
* :mod:`.rows`: messages into rows (pure): every record raw, Claude Code's events typed.
* :mod:`.spool`: the write-ahead log an export is fsync'd to before it is acknowledged.
* :mod:`.store` and :mod:`.writer`: the spool into DuckDB, in bulk, one transaction per batch.
* :mod:`.app`: the Starlette application and the uvicorn server.
* :mod:`.cycle_source`: the reflection cycle's telemetry source (``cycle watch --format otlp``).

Only :mod:`.cycle_source` is imported by the rest of the package; the others need the
``serve`` extra (starlette, uvicorn, opentelemetry-proto).
"""
