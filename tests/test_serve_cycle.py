"""The reflection cycle over telemetry: ``reflect cycle watch`` on the database ``reflect serve``
fills reacts to a failure streak that arrives through the OpenTelemetry SDK exporter."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="reflect serve needs the 'serve' extra")
pytest.importorskip("opentelemetry.sdk", reason="the tests send through the OpenTelemetry SDK")

from serve_harness import (
    claude_event,
    exporter_env,
    query,
    running_server,
    send_events,
    serve_env,
)

WAIT = 60.0


def tool_result(session: str, seq: int, ok: bool) -> dict[str, Any]:
    return claude_event(
        "tool_result",
        session,
        seq,
        tool_name="Bash",
        success="true" if ok else "false",
        duration_ms="40",
        **({} if ok else {"error": "Exit code 1"}),
    )


@pytest.mark.slow
def test_cycle_watch_reacts_to_a_failure_streak_arriving_through_otlp(
    tmp_path: Path, monkeypatch: Any
) -> None:
    live = tmp_path / "live.duckdb"
    with running_server(live) as server:
        exporter_env(monkeypatch, server.endpoint)
        send_events([tool_result("sess-F", 1, True), tool_result("sess-OK", 1, True)])
        server.wait_stored(2)
        watch = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "agent_reflection",
                "cycle",
                "watch",
                str(live),
                "--db",
                str(tmp_path / "cycle.duckdb"),
                "--poll",
                "3600",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=serve_env(),
        )
        lines: list[str] = []
        reacted = threading.Event()

        def read() -> None:
            assert watch.stdout is not None
            for line in watch.stdout:
                lines.append(line.rstrip("\n"))
                if "consecutive_failures" in line:
                    reacted.set()

        threading.Thread(target=read, daemon=True).start()
        try:
            deadline = time.monotonic() + WAIT
            while not any(line.startswith("watching ") for line in lines):
                assert time.monotonic() < deadline and watch.poll() is None, lines
                time.sleep(0.05)
            time.sleep(1.0)  # the watcher's first load (the baseline) is done or retrying
            send_events([tool_result("sess-F", i, False) for i in (2, 3, 4)])
            server.wait_stored(5)
            assert reacted.wait(WAIT), "\n".join(lines)
        finally:
            watch.send_signal(signal.SIGINT)
            watch.wait(WAIT)
    text = "\n".join(lines)
    print(text)
    assert "failure check at" in text
    finding = next(line for line in lines if "consecutive_failures" in line)
    assert "sess-F" in finding and "sess-OK" not in text
    # the live database holds the same outcomes: `reflect cycle run --db live` reads them too
    assert query(
        live,
        "SELECT status, count(*) FROM run_outcomes WHERE task_id = 'sess-F' GROUP BY 1 ORDER BY 1",
    ) == [("completed", 1), ("failed", 3)]
    assert query(
        tmp_path / "cycle.duckdb",
        "SELECT rule, subject_id FROM findings ORDER BY cycle_run_id DESC LIMIT 1",
    ) == [("consecutive_failures", "sess-F")]
