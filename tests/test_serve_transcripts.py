"""Real sessions: the five Claude Code transcripts in ../shared/, re-emitted as the telemetry
Claude Code sends for them (a ``user_prompt`` per prompt, a ``tool_result`` per tool result, at
the transcript's times, through the SDK exporter), give the in-loop analysis the same tool
calls as loading the transcripts themselves."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="reflect serve needs the 'serve' extra")
pytest.importorskip("opentelemetry.sdk", reason="the tests send through the OpenTelemetry SDK")

from agent_reflection.load.transcripts import load_transcripts
from agent_reflection.store.db import connect, read_sql
from serve_harness import exporter_env, query, running_server

COLUMNS = (
    "session_id, seq, task_index, task_seq, name, is_error, command, "
    "epoch_ms(called_at), epoch_ms(result_at)"
)


def _ms(stamp: str) -> int:
    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)


def telemetry_of(path: Path, prompt_uuids: set[str]) -> list[tuple[int, str, dict[str, Any]]]:
    """(time in ns, body, attributes) of the events Claude Code emits for one transcript."""
    uses: dict[str, tuple[str, dict[str, Any], int]] = {}
    events: list[tuple[int, str, dict[str, Any]]] = []
    sequence = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        d = json.loads(line)
        if "timestamp" not in d or "message" not in d:
            continue
        at, session = _ms(d["timestamp"]), d["sessionId"]
        content = d["message"].get("content")
        blocks = content if isinstance(content, list) else []
        common = {"session.id": session, "app.version": d.get("version", "")}
        if d.get("uuid") in prompt_uuids:
            sequence += 1
            text = content if isinstance(content, str) else ""
            events.append(
                (
                    at * 10**6,
                    "claude_code.user_prompt",
                    {**common, "event.sequence": sequence, "prompt_length": str(len(text))},
                )
            )
        for block in blocks:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                uses[block["id"]] = (block["name"], block.get("input") or {}, at)
            elif block.get("type") == "tool_result" and block.get("tool_use_id") in uses:
                name, tool_input, used_at = uses[block["tool_use_id"]]
                failed = bool(block.get("is_error"))
                params = {"bash_command": tool_input["command"]} if name == "Bash" else {}
                sequence += 1
                attributes = {
                    **common,
                    "event.sequence": sequence,
                    "tool_name": name,
                    "success": "false" if failed else "true",
                    "duration_ms": str(at - used_at),
                    "tool_parameters": json.dumps(params),
                }
                if failed:
                    attributes["error"] = "tool error"
                events.append((at * 10**6, "claude_code.tool_result", attributes))
    return events


@pytest.mark.shared
@pytest.mark.slow
def test_real_sessions_through_telemetry_match_their_transcripts(
    shared_dir: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource

    folder = shared_dir / "data" / "claude-code"
    reference = connect(":memory:")
    load_transcripts(reference, [folder])
    prompts = {
        u for (u,) in reference.execute("SELECT uuid FROM messages WHERE is_prompt").fetchall()
    }
    expected = reference.execute(f"SELECT {COLUMNS} FROM tool_calls ORDER BY 1, 2").fetchall()
    fires = read_sql("in_loop/would_fire.sql")
    cadences = {"cadences": list(range(1, 11))}
    expected_fires = reference.execute(fires, cadences).fetchall()
    events = [
        e for path in sorted(folder.glob("*.transcript.jsonl")) for e in telemetry_of(path, prompts)
    ]
    assert len(expected) == 60 and sum(b == "claude_code.tool_result" for _, b, _ in events) == 60

    db_path = tmp_path / "live.duckdb"
    with running_server(db_path) as server:
        exporter_env(monkeypatch, server.endpoint)
        provider = LoggerProvider(resource=Resource.create({"service.name": "claude-code"}))
        provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
        logger = provider.get_logger("com.anthropic.claude_code.events")
        for ts, body, attributes in events:
            logger.emit(timestamp=ts, body=body, attributes=attributes)
        assert provider.force_flush(60_000)
        provider.shutdown()
        server.wait_stored(len(events))
    got = query(db_path, f"SELECT {COLUMNS} FROM tool_calls ORDER BY 1, 2")
    assert got == expected
    assert query(db_path, fires, cadences) == expected_fires
    assert query(
        db_path, "SELECT session_id, n_prompts, n_tool_calls FROM sessions ORDER BY 1"
    ) == (
        reference.execute(
            "SELECT session_id, n_prompts, n_tool_calls FROM sessions ORDER BY 1"
        ).fetchall()
    )
    # the cycle's view: one outcome per call, the one real tool error a failed outcome
    assert query(db_path, "SELECT status, count(*) FROM run_outcomes GROUP BY 1 ORDER BY 1") == [
        ("completed", 59),
        ("failed", 1),
    ]
