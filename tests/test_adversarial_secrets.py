"""The same secrets planted at every entry point of agents' text are stored nowhere raw
(issue 34, items 3 and 6): the Stop hook's input, a sidecar written by hand, a git note
written by hand, a transcript, a run log, OTLP logs, metrics and traces. The database is
searched table by table, the Parquet export file by file, and the hook's sidecar and note."""

from __future__ import annotations

import json
import random
import subprocess
import time
from pathlib import Path

import duckdb
import pytest

pytest.importorskip("starlette", reason="reflect serve needs the 'serve' extra")

from _runlog import History
from _secrets import planted
from conftest import run_reflect
from hook_harness import GitLab
from serve_harness import post_json, running_server
from sidecar_samples import sidecar

pytestmark = [pytest.mark.adversarial, pytest.mark.slow]

KINDS = {"aws-access-key", "github-token", "slack-token", "url-credentials", "anthropic-key"}
_PLANTED = [p for p in planted(random.Random(34)) if p.kind in KINDS]
#: Secrets in their usual surroundings, and the parts that must never be stored.
TEXT = " ; ".join(p.text for p in _PLANTED)
SECRETS = [p.secret for p in _PLANTED]


def reflect(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_reflect(*args, cwd=cwd)


def found_in(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


def send_telemetry(db_path: Path) -> None:
    attrs = [
        {"key": "session.id", "value": {"stringValue": "s-otlp"}},
        {"key": "error", "value": {"stringValue": TEXT}},
    ]
    now = str(time.time_ns())
    with running_server(db_path) as server:
        assert (
            post_json(
                server.endpoint,
                "logs",
                {
                    "resourceLogs": [
                        {
                            "scopeLogs": [
                                {
                                    "logRecords": [
                                        {"timeUnixNano": now, "body": {"stringValue": TEXT}},
                                        {
                                            "timeUnixNano": now,
                                            "body": {"stringValue": "claude_code.tool_result"},
                                            "attributes": [
                                                *attrs,
                                                {
                                                    "key": "event.name",
                                                    "value": {"stringValue": "tool_result"},
                                                },
                                                {
                                                    "key": "tool_parameters",
                                                    "value": {"stringValue": TEXT},
                                                },
                                            ],
                                        },
                                    ]
                                }
                            ]
                        }
                    ]
                },
            )
            == 200
        )
        point = {"timeUnixNano": now, "asDouble": 1.0, "attributes": attrs}
        assert (
            post_json(
                server.endpoint,
                "metrics",
                {
                    "resourceMetrics": [
                        {
                            "scopeMetrics": [
                                {
                                    "metrics": [
                                        {
                                            "name": "claude_code.cost.usage",
                                            "description": TEXT,
                                            "gauge": {"dataPoints": [point]},
                                        }
                                    ]
                                }
                            ]
                        }
                    ]
                },
            )
            == 200
        )
        assert (
            post_json(
                server.endpoint,
                "traces",
                {
                    "resourceSpans": [
                        {
                            "scopeSpans": [
                                {
                                    "spans": [
                                        {
                                            "traceId": "0123456789abcdef0123456789abcdef",
                                            "spanId": "0123456789abcdef",
                                            "name": TEXT,
                                            "startTimeUnixNano": now,
                                            "endTimeUnixNano": now,
                                            "attributes": attrs,
                                            "events": [{"name": TEXT, "attributes": attrs}],
                                            "status": {"code": 2, "message": TEXT},
                                        }
                                    ]
                                }
                            ]
                        }
                    ]
                },
            )
            == 200
        )
        server.wait_stored(4)


def test_planted_secrets_are_stored_nowhere_raw(tmp_path: Path) -> None:
    assert len(SECRETS) >= 5
    db_path = tmp_path / "all.duckdb"
    # 1. the Stop hook's input -> sidecar -> the post-commit hook's note
    lab = GitLab(tmp_path)
    repo = lab.init_repo(tmp_path / "repo")
    lab.start(repo, "sess-hook")
    (repo / "app.py").write_text("print('agent')\n")
    report = {
        "confidence": 0.6,
        "most_likely_wrong": {"surface": "auth", "description": TEXT},
        "known_not_in_diff": TEXT,
    }
    (repo / ".reflection").mkdir(exist_ok=True)
    (repo / ".reflection" / "input.json").write_text(json.dumps(report))
    record = lab.stop(repo, "sess-hook")
    assert "[REDACTED:" in record["known_not_in_diff"]
    sha = lab.commit(repo, "human: ship it", "app.py")
    note = lab.git(repo, "notes", "--ref=refs/notes/reflection", "show", sha)
    assert "sess-hook" in note
    # 2. a sidecar written by hand, with the secrets in every free-text field
    hand = repo / ".reflection" / "sidecars" / "by-hand.reflection.json"
    hand.write_text(
        json.dumps(
            sidecar(
                1,
                session_id="sess-hand",
                most_likely_wrong={"surface": "auth", "description": TEXT},
                known_not_in_diff=TEXT,
            )
        )
    )
    # 3. a git note written by hand (not by the hook)
    hand_note = {
        "notes_version": 1,
        "sidecars": [sidecar(2, session_id="sess-note", known_not_in_diff=TEXT)],
    }
    lab.git(
        repo, "notes", "--ref", "reflection", "add", "-f", "-m", json.dumps(hand_note), "HEAD~1"
    )
    # 4. a transcript
    transcript = tmp_path / "t.jsonl"
    lines = [
        {"type": "user", "message": {"role": "user", "content": TEXT}},
        {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": TEXT},
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": TEXT}},
                ],
            },
        },
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": TEXT}],
            },
        },
    ]
    transcript.write_text(
        "".join(
            json.dumps(
                {
                    "uuid": f"u{i}",
                    "parentUuid": f"u{i - 1}" if i else None,
                    "sessionId": "sess-transcript",
                    "timestamp": f"2026-01-21T06:20:0{i}.000Z",
                    "cwd": "/tmp/p",
                    **line,
                }
            )
            + "\n"
            for i, line in enumerate(lines)
        )
    )
    # 5. a run log
    history = History().task(ai_prompt=TEXT, last_result_summary=TEXT)
    sid = history.outcome("failed", 1.0, objective=TEXT)
    history.step(sid, TEXT, tool="Bash")
    runs = history.write(tmp_path / "runs.jsonl")
    # 6. OTLP logs, metrics and traces (the server first: it holds the database while it runs)
    send_telemetry(db_path)
    for args in (
        ("load", "sidecars", str(repo / ".reflection" / "sidecars")),
        ("load", "git", str(repo)),
        ("load", "transcripts", str(transcript)),
        ("load", "runs", str(runs)),
    ):
        done = reflect(*args, "--db", str(db_path), cwd=tmp_path)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
    export = tmp_path / "export"
    done = reflect("export", "--db", str(db_path), "--parquet", str(export), cwd=tmp_path)
    assert done.returncode == 0, done.stderr

    # the hook's outputs
    sidecar_text = "".join(
        p.read_text() for p in (repo / ".reflection" / "sidecars").glob("sess-hook*")
    )
    assert "[REDACTED:" in sidecar_text and found_in(sidecar_text) == []
    assert found_in(note) == [] and "[REDACTED:" in note
    # every table of the database, every Parquet file of the export
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        tables = [t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
        dumps = {
            t: json.dumps(con.execute(f'SELECT * FROM "{t}"').fetchall(), default=str)
            for t in tables
        }
        parquet = {
            str(p.relative_to(export)): json.dumps(
                con.execute("SELECT * FROM read_parquet(?)", [str(p)]).fetchall(), default=str
            )
            for p in export.rglob("*.parquet")
        }
    finally:
        con.close()
    leaks = {name: found_in(text) for name, text in {**dumps, **parquet}.items() if found_in(text)}
    assert leaks == {}
    # each entry point reached the database (the secrets were redacted, not dropped)
    everything = " ".join(dumps.values())
    for marker in ("sess-hook", "sess-hand", "sess-note", "sess-transcript", "s-otlp", sid):
        assert marker in everything, marker
    assert everything.count("[REDACTED:") >= 10 * len(SECRETS)
    raw_file = db_path.read_bytes()
    assert not [s for s in SECRETS if s.encode() in raw_file]
