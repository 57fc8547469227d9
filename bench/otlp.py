"""``reflect serve`` against the trivial receiver on the same stack, fed by the OpenTelemetry SDK.

For each size and each turn, two whole server processes take turns (the order alternates), each
fed the same records by ``--exporters`` concurrent SDK pipelines in this process
(LoggerProvider -> BatchLogRecordProcessor -> OTLPLogExporter, http/protobuf, 512 records per
export) shaped like Claude Code's ``tool_result`` events:

* ours: ``python -m agent_reflection serve --port 0`` on a fresh database; the clock runs from
  the first record emitted until the server reports every record stored (committed, spool
  empty);
* the baseline: ``bench/_otlp_trivial_receiver.py``, a Starlette app served by uvicorn that
  appends each raw body to a file; the clock runs until the SDK's flush returned (every export
  acknowledged). That is the least a receiver on this transport does.

Per server and size: records/s (medians), the ratio of the times, server CPU per record
(user + system of the server process from /proc, start-up excluded: counted from the moment it
listens), peak RSS (``VmHWM``, start-up included; beside it the resident size once it listened,
before any record: what no backlog can lower) and records lost (sent minus stored; for the
baseline, sent minus the records its file decodes to). Then the load average and one verdict
line against issue 36's goal: <= 1.5x the trivial receiver at 20k and 100k records, peak RSS
<= 150 MiB at any backlog, 0 lost.

``--held N``: each server first takes N other records, untimed (ours stores them; its peak RSS
is counted from then on), so the timed records go into a database that already holds N, as a
receiver's do after its first day. Storing slows as the database grows (its primary-key
indexes), which a fresh database each turn does not show.

``--code DIR`` adds a third contestant taking turns with them: ``reflect serve`` from the
``src/`` of another checkout in DIR (the code before a change), with its ratios.

    python bench/otlp.py [--sizes 20000,100000] [--repeats 3] [--exporters 4] [--held N]
                         [--code DIR]
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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _measure import checkout_src, child_env

REPO_ROOT = Path(__file__).resolve().parents[1]
TRIVIAL = Path(__file__).resolve().parent / "_otlp_trivial_receiver.py"
GOAL_RATIO = 1.5
GOAL_RSS_MIB = 150
MIB = 2**20
_TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Turn:
    seconds: float
    cpu: float  # server CPU seconds after it listened
    peak_rss: int  # bytes
    lost: int
    listening_rss: int  # bytes resident once it listened, before any record: its fixed part


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


def _cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def _status_bytes(pid: int, field: str) -> int:
    """``field`` of /proc/PID/status (``VmHWM``: peak resident, ``VmRSS``: resident now)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
    return 0


def _start(
    command: list[str], marker: str, src: Path = REPO_ROOT / "src"
) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=child_env(src)
    )
    assert proc.stdout is not None
    while marker not in (line := proc.stdout.readline()):
        assert line, f"{command} did not start"
    endpoint = line.split(marker, 1)[1].split()[0]
    threading.Thread(target=proc.stdout.read, daemon=True).start()
    return proc, endpoint


def _status(endpoint: str) -> dict[str, Any]:
    with urllib.request.urlopen(endpoint + "/", timeout=30) as response:
        status: dict[str, Any] = json.loads(response.read())
    return status


def _send(endpoint: str, size: int, exporters: int, first: int = 0) -> None:
    """Emit ``size`` records through ``exporters`` SDK pipelines; returns once all are acked.
    ``first``: the first event sequence number (records of another ``first`` are other records)."""
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource

    per = size // exporters
    batches = [
        [claude_tool_result(f"s{n}", i) for i in range(first, first + per)]
        for n in range(exporters)
    ]
    providers = []
    for _ in range(exporters):
        provider = LoggerProvider(resource=Resource.create({"service.name": "claude-code"}))
        provider.add_log_record_processor(
            BatchLogRecordProcessor(
                OTLPLogExporter(endpoint=endpoint + "/v1/logs", timeout=60),
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
        provider.force_flush(300_000)

    threads = [
        threading.Thread(target=emit, args=pair) for pair in zip(providers, batches, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for provider in providers:
        provider.shutdown()


def _stored(endpoint: str, sent: int) -> dict[str, Any]:
    """The server's status once ``sent`` records are stored or rejected and its spool is empty."""
    while True:
        status = _status(endpoint)
        done = status["records_stored"] + status["records_rejected"]
        if done >= sent and status["spooled_bytes"] == 0:
            return status
        time.sleep(0.05)  # each look costs the server about a millisecond of CPU


def _reset_peak_rss(pid: int) -> None:
    """Start ``VmHWM`` again from the current resident size (Linux: ``clear_refs`` 5)."""
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


def ours(
    size: int, exporters: int, workdir: Path, src: Path = REPO_ROOT / "src", held: int = 0
) -> Turn:
    db = workdir / f"serve-{time.monotonic_ns()}.duckdb"
    command = [sys.executable, "-m", "agent_reflection", "serve", "--port", "0", "--db", str(db)]
    proc, endpoint = _start(command, "OTLP/HTTP on ", src)
    listening = _status_bytes(proc.pid, "VmRSS")
    try:
        before = 0
        if held:
            _send(endpoint, held, exporters, first=size)
            before = _stored(endpoint, held // exporters * exporters)["records_stored"]
            _reset_peak_rss(proc.pid)
        sent = size // exporters * exporters
        cpu0 = _cpu(proc.pid)
        start = time.perf_counter()
        _send(endpoint, size, exporters)
        status = _stored(endpoint, before + sent)
        seconds = time.perf_counter() - start
        lost = before + sent - status["records_stored"]
        return Turn(
            seconds, _cpu(proc.pid) - cpu0, _status_bytes(proc.pid, "VmHWM"), lost, listening
        )
    finally:
        proc.terminate()
        proc.wait(60)


def trivial(size: int, exporters: int, workdir: Path, held: int = 0) -> Turn:
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    out = workdir / f"trivial-{time.monotonic_ns()}.bin"
    proc, endpoint = _start([sys.executable, str(TRIVIAL), str(out)], "listening on ")
    listening = _status_bytes(proc.pid, "VmRSS")
    try:
        if held:  # the same untimed records first, so both servers take the same traffic
            _send(endpoint, held, exporters, first=size)
            _reset_peak_rss(proc.pid)
        sent = size // exporters * exporters + held // exporters * exporters
        cpu0 = _cpu(proc.pid)
        start = time.perf_counter()
        _send(endpoint, size, exporters)
        seconds = time.perf_counter() - start
        cpu, rss = _cpu(proc.pid) - cpu0, _status_bytes(proc.pid, "VmHWM")
    finally:
        proc.terminate()
        proc.wait(60)
    data, pos, received = out.read_bytes(), 0, 0
    while pos < len(data):
        length = int.from_bytes(data[pos : pos + 4], "big")
        request = ExportLogsServiceRequest.FromString(data[pos + 4 : pos + 4 + length])
        received += sum(len(s.log_records) for r in request.resource_logs for s in r.scope_logs)
        pos += 4 + length
    out.unlink()
    return Turn(seconds, cpu, rss, sent - received, listening)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20000,100000", help="records per run")
    parser.add_argument("--repeats", type=int, default=3, help="turns of each (default 3)")
    parser.add_argument("--exporters", type=int, default=4, help="concurrent SDK exporters")
    parser.add_argument(
        "--held",
        type=int,
        default=0,
        help="records each server takes first, untimed: the timed ones then go into a database "
        "that already holds them (default 0: a new database)",
    )
    parser.add_argument(
        "--code",
        type=Path,
        help="another checkout (e.g. DIR after `git archive REV src | tar -x -C DIR`): the "
        "reflect serve of its src/ takes turns with the two others, reported as 'code before'",
    )
    args = parser.parse_args()
    held = args.held
    contestants: list[tuple[str, Callable[[int, int, Path], Turn]]] = [
        ("reflect serve", lambda n, e, w: ours(n, e, w, held=held)),
        ("trivial", lambda n, e, w: trivial(n, e, w, held)),
    ]
    if args.code is not None:
        before = checkout_src(args.code)
        contestants.append(("code before", lambda n, e, w: ours(n, e, w, before, held)))
    verdicts: list[str] = []
    met = True
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for size in (int(s) for s in args.sizes.split(",")):
            runs: dict[str, list[Turn]] = {name: [] for name, _ in contestants}
            loads: list[float] = []
            for turn in range(args.repeats):
                for name, run in contestants if turn % 2 == 0 else contestants[::-1]:
                    loads.append(os.getloadavg()[0])
                    runs[name].append(run(size, args.exporters, workdir))
            med: dict[str, dict[str, float]] = {}
            for name, turns in runs.items():
                med[name] = {
                    "seconds": statistics.median(t.seconds for t in turns),
                    "cpu_us": statistics.median(t.cpu for t in turns) / size * 1e6,
                    "rss": max(t.peak_rss for t in turns) / MIB,
                    "listening_rss": statistics.median(t.listening_rss for t in turns) / MIB,
                    "lost": max(t.lost for t in turns),
                }
                m = med[name]
                print(
                    f"{size:>7,} records  {name:<13} {size / m['seconds']:>7,.0f} rec/s "
                    f"({m['seconds']:6.2f} s; per turn "
                    f"{', '.join(f'{t.seconds:.2f}' for t in turns)})  "
                    f"server CPU {m['cpu_us']:6.1f} us/record  peak RSS {m['rss']:5.0f} MiB "
                    f"(listening {m['listening_rss']:.0f})  lost {m['lost']:.0f}"
                )
            if args.code is not None:
                seconds = {name: m["seconds"] for name, m in med.items()}
                print(
                    f"{size:>7,} records  code before "
                    f"{seconds['code before'] / seconds['trivial']:.2f}x the trivial receiver; "
                    f"reflect serve takes {seconds['reflect serve'] / seconds['code before']:.2f}x "
                    "its time"
                )
            ratio = med["reflect serve"]["seconds"] / med["trivial"]["seconds"]
            rss = med["reflect serve"]["rss"]
            lost = med["reflect serve"]["lost"]
            met &= ratio <= GOAL_RATIO and rss <= GOAL_RSS_MIB and lost == 0
            print(
                f"{size:>7,} records  ratio {ratio:.2f}x the trivial receiver  (medians of "
                f"{args.repeats} interleaved turns, {args.exporters} exporters, {held:,} records "
                f"held before; load average "
                f"{statistics.median(loads):.1f}, {min(loads):.1f}-{max(loads):.1f})"
            )
            verdicts.append(f"{ratio:.2f}x, {rss:.0f} MiB, {lost:.0f} lost at {size:,}")
    print(
        f"verdict: {'meets' if met else 'misses'} the goal (<= {GOAL_RATIO}x the trivial "
        f"receiver, peak RSS <= {GOAL_RSS_MIB} MiB, 0 lost): {'; '.join(verdicts)}"
    )


if __name__ == "__main__":
    main()
