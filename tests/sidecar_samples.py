"""Sample reflection.v1 records and a file writer shared by the sidecar loader tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def sidecar(i: int = 0, **changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "schema": "reflection.v1",
        "task_ref": f"PROJ-{i}",
        "agent": "claude-code",
        "session_id": f"session-{i}",
        "timestamp": "2026-03-01T12:00:00Z",
        "repo": "webapp" if i % 2 else "flask",
        "confidence": 0.75,
        "most_likely_wrong": {"surface": "auth", "description": "token refresh races logout"},
        "known_not_in_diff": "ran the migration by hand — ünïcode ✓",
        "risk": {"needs_review": True, "score": 0.8, "surface": "auth", "reason": "src/auth"},
        "files_changed": ["src/auth/session.py", "tests/test_session.py"],
        "provenance": {
            "source": "stop-hook",
            "reflection_attempt": 1,
            "degraded": False,
            "reflection_mode": "solo",
        },
    }
    record.update(changes)
    return record


def write(path: Path, content: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content, "utf-8")
    else:
        path.write_text(json.dumps(content, indent=2, ensure_ascii=False), "utf-8")
    return path


#: The ``reflections`` table as the first release made it (before the optional ``git`` object):
#: a database of that age, for the tests of how an existing database gains declared columns.
FIRST_RELEASE_DDL = """
CREATE TABLE reflections (
    content_hash VARCHAR PRIMARY KEY, schema_version VARCHAR NOT NULL, task_ref VARCHAR NOT NULL,
    agent VARCHAR NOT NULL, session_id VARCHAR NOT NULL, "timestamp" TIMESTAMPTZ NOT NULL,
    repo VARCHAR NOT NULL, confidence DOUBLE, mlw_surface VARCHAR, mlw_description VARCHAR,
    known_not_in_diff VARCHAR, risk_needs_review BOOLEAN NOT NULL, risk_score DOUBLE NOT NULL,
    risk_surface VARCHAR NOT NULL, risk_reason VARCHAR NOT NULL, files_changed VARCHAR[] NOT NULL,
    source VARCHAR NOT NULL, reflection_attempt INTEGER NOT NULL, degraded BOOLEAN NOT NULL,
    reflection_mode VARCHAR NOT NULL, source_file VARCHAR NOT NULL, raw JSON NOT NULL,
    load_id BIGINT NOT NULL
)
"""
