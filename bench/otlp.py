"""Throughput of ``reflect serve`` (whole process, OpenTelemetry SDK exporters) against DuckDB's
own bulk insert of the same records.

For each size: start ``reflect serve --port 0`` on a fresh database, then time from the first
record emitted by ``--exporters`` concurrent SDK exporters (LoggerProvider ->
BatchLogRecordProcessor -> OTLPLogExporter, http/protobuf, 512 records per export) until the
server reports every record stored (committed, spool empty). The baseline, in the same run and
interleaved with it: the same number of ``otel_records`` rows (same columns and sizes, built
beforehand) inserted by DuckDB from one Arrow table into a fresh database. Prints medians of
``--repeats`` runs of each, records/s, the ratio and the load average per size, then one
verdict line.

Goal: none is set for this path in any issue, so the verdict line reports the ratios without a
pass/fail. Baseline, stated: the in-process DuckDB bulk insert above, the floor of storing these
rows. Ours is the server as a whole process (``python -m agent_reflection serve``, the command a
user runs), fed over HTTP; its start-up is not timed (a server starts once and then serves),
the clock runs from the first emitted record to the last one committed.

    python bench/otlp.py [--sizes 5000,20000,50000] [--repeats 3] [--exporters 4]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pyarrow as pa

REPO_ROOT = Path(__file__).resolve().parents[1]


def claude_tool_result(session: str, i: int) -> dict[str, Any]:
    return {
        "session.id": session,
        "event.name": "tool_result",
        "event.sequence": i,
        "tool_name": "Bash",
        "success": "false" if i % 7 == 0 else "true",
        "duration_ms": str(i % 300),
        "user.id": "u-1",
        "app.version": "2.1.14",
        "tool_parameters": json.dumps({"bash_command": "pytest", "full_command": f"pytest -k {i}"}),
    }


def start_server(db_path: Path) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent_reflection", "serve", "--port", "0", "--db", str(db_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    while "OTLP/HTTP on " not in (line := proc.stdout.readline()):
        assert line, "reflect serve did not start"
    endpoint = line.split("OTLP/HTTP on ", 1)[1].split()[0]
    threading.Thread(target=proc.stdout.read, daemon=True).start()
    return proc, endpoint


def stored(endpoint: str) -> tuple[int, int]:
    with urllib.request.urlopen(endpoint + "/", timeout=30) as response:
        status = json.loads(response.read())
    return status["records_stored"], status["spooled_bytes"]


def server_run(size: int, exporters: int, workdir: Path) -> tuple[float, float]:
    """Seconds from the first emitted record until every export was acknowledged (the SDK's
    flush returned), and until all ``size`` records are committed."""
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource

    proc, endpoint = start_server(workdir / f"serve-{time.monotonic_ns()}.duckdb")
    try:
        per = size // exporters
        batches = [[claude_tool_result(f"s{n}", i) for i in range(per)] for n in range(exporters)]
        providers = []
        for _ in range(exporters):
            provider = LoggerProvider(resource=Resource.create({"service.name": "claude-code"}))
            provider.add_log_record_processor(
                BatchLogRecordProcessor(
                    OTLPLogExporter(endpoint=endpoint + "/v1/logs"),
                    max_export_batch_size=512,
                    max_queue_size=max(per + 1, 2048),
                    schedule_delay_millis=200,
                )
            )
            providers.append(provider)

        def emit(provider: LoggerProvider, events: list[dict[str, Any]]) -> None:
            logger = provider.get_logger("com.anthropic.claude_code.events")
            for attributes in events:
                logger.emit(body="claude_code.tool_result", attributes=attributes)
            provider.force_flush(120_000)

        start = time.perf_counter()
        threads = [
            threading.Thread(target=emit, args=pair)
            for pair in zip(providers, batches, strict=True)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        acked = time.perf_counter() - start
        while stored(endpoint) != (per * exporters, 0):
            time.sleep(0.01)
        elapsed = time.perf_counter() - start
        for provider in providers:
            provider.shutdown()
        return acked, elapsed
    finally:
        proc.terminate()
        proc.wait(60)


def baseline_rows(size: int) -> pa.Table:
    now = time.time_ns()
    rows = [
        {
            "record_key": f"{i:032x}",
            "signal": "log",
            "name": "claude_code.tool_result",
            "session_id": f"s{i % 4}",
            "ts": now + i,
            "service_name": "claude-code",
            "scope_name": "com.anthropic.claude_code.events",
            "attributes": json.dumps(claude_tool_result(f"s{i % 4}", i)),
            "resource": '{"service.name": "claude-code"}',
            "body": '"claude_code.tool_result"',
            "received_at": now,
            "load_id": 1,
        }
        for i in range(size)
    ]
    ts = pa.timestamp("ns", tz="UTC")
    schema = pa.schema(
        [
            ("record_key", pa.string()),
            ("signal", pa.string()),
            ("name", pa.string()),
            ("session_id", pa.string()),
            ("ts", ts),
            ("service_name", pa.string()),
            ("scope_name", pa.string()),
            ("attributes", pa.string()),
            ("resource", pa.string()),
            ("body", pa.string()),
            ("received_at", ts),
            ("load_id", pa.int64()),
        ]
    )
    return pa.Table.from_pylist(rows, schema=schema)


def baseline_run(table: pa.Table, workdir: Path) -> float:
    """Seconds for DuckDB to insert ``table`` into otel_records of a fresh database."""
    sys.path.insert(0, str(REPO_ROOT / "src"))
    from agent_reflection.store import db

    con = db.connect(workdir / f"base-{time.monotonic_ns()}.duckdb")
    try:
        con.register("bench_rows", table)
        start = time.perf_counter()
        con.execute("INSERT INTO otel_records BY NAME SELECT * FROM bench_rows")
        con.commit()
        return time.perf_counter() - start
    finally:
        con.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5000,20000,50000", help="records per run")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each (default 3)")
    parser.add_argument("--exporters", type=int, default=4, help="concurrent SDK exporters")
    args = parser.parse_args()
    ratios: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for size in (int(s) for s in args.sizes.split(",")):
            table = baseline_rows(size)
            acked, served, base, loads = [], [], [], []
            for _ in range(args.repeats):
                loads.append(os.getloadavg()[0])
                ack, stored_after = server_run(size, args.exporters, workdir)
                acked.append(ack)
                served.append(stored_after)
                base.append(baseline_run(table, workdir))
            a = statistics.median(acked)
            s, b = statistics.median(served), statistics.median(base)
            print(
                f"{size:>7,} records  reflect serve {size / s:>7,.0f} rec/s stored "
                f"({s:6.2f} s; all acknowledged after {a:6.2f} s)  "
                f"DuckDB bulk insert {size / b:>8,.0f} rec/s ({b:6.3f} s)  "
                f"ratio {s / b:5.1f}x  (medians of {args.repeats}, {args.exporters} exporters; "
                f"load average {statistics.median(loads):.1f}, {min(loads):.1f}-{max(loads):.1f})"
            )
            ratios.append(f"{s / b:.1f}x at {size:,} records")
    print(
        f"verdict: no goal set for this path; reflect serve takes {', '.join(ratios)} the time "
        "of DuckDB's bulk insert of the same rows (medians)"
    )


if __name__ == "__main__":
    main()
