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
