"""A seeded Phase-0 simulator with known truth, and ``run_demo``.

It builds a DuckDB database in which every experiment's true answer is known:

- ``labels``: a calibration corpus whose confidence has a true AUC of 0.70 on the
  self-rated-high subset (binormal scores mapped monotonically into [0.8, 1.0]);
- ``commits`` / ``commit_files``: a small **real** git repository built on the fly (features,
  fixes within and outside the window, reverts), read back with ``git log``;
- ``tasks`` / ``task_events`` / ``task_links`` / ``task_commits``: a board export (also written
  as JSONL) with a known number of detectable, undetectable and right-censored tasks;
- ``reflections``: sidecar rows whose confidence tracks the tasks' outcomes.

The row writers (``insert_*``) fill the loader tables directly, with the same columns the
loaders write; tests use them too.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import duckdb

SIM_LOAD_ID = 0
REVERT_RE = re.compile(r'^Revert "', re.IGNORECASE)
REVERTS_SHA_RE = re.compile(r"This reverts commit ([0-9a-fA-F]{7,40})")
REAPPLY_RE = re.compile(r'^Reapply "', re.IGNORECASE)
CC_RE = re.compile(r"^(?P<type>[a-zA-Z]+)(?:\((?P<scope>[^)]*)\))?(?P<bang>!)?:\s")
PR_RE = re.compile(r"Merge pull request #(\d+)|\(#(\d+)\)\s*$")
FIX_RE = re.compile(r"^(fix|hotfix|bugfix)\b|\bhotfix\b", re.IGNORECASE)


# --------------------------------------------------------------------------- row writers


def derive_signals(subject: str, body: str) -> dict[str, Any]:
    """Signal columns of ``commits`` from a message (a simple stand-in for the git loader)."""
    cc = CC_RE.match(subject)
    pr = PR_RE.search(subject)
    reverts = REVERTS_SHA_RE.search(body)
    is_revert = bool(REVERT_RE.match(subject))
    return {
        "is_revert": is_revert,
        "reverts_sha": reverts.group(1).lower() if reverts and is_revert else None,
        "is_reapply": bool(REAPPLY_RE.match(subject)),
        "pr_number": int(pr.group(1) or pr.group(2)) if pr else None,
        "cc_type": cc.group("type").lower() if cc else None,
        "cc_scope": cc.group("scope") if cc else None,
        "cc_breaking": bool(cc and cc.group("bang")),
        "is_fix_like": bool(FIX_RE.search(subject)) and not is_revert,
    }


def insert_commit(
    con: duckdb.DuckDBPyConnection,
    repo: str,
    sha: str,
    when: datetime,
    subject: str,
    body: str = "",
    *,
    parents: Sequence[str] = (),
    files: Iterable[str] = (),
) -> None:
    s = derive_signals(subject, body)
    con.execute(
        "INSERT INTO commits VALUES (?, ?, ?, 'Sim', 'sim@example.com', ?, 0, 'Sim',"
        " 'sim@example.com', ?, 0, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, true, ?)",
        [repo, sha, list(parents), when, when, subject, body, len(parents) > 1,
         s["is_revert"], s["reverts_sha"], s["is_reapply"], s["pr_number"], s["cc_type"],
         s["cc_scope"], s["cc_breaking"], s["is_fix_like"], SIM_LOAD_ID],
    )  # fmt: skip
    for path in files:
        con.execute(
            "INSERT INTO commit_files VALUES (?, ?, ?, NULL, 1, 0, false, ?)",
            [repo, sha, path, SIM_LOAD_ID],
        )


def insert_task(
    con: duckdb.DuckDBPyConnection,
    task_ref: str,
    *,
    created_at: datetime | None = None,
    completed_at: datetime | None = None,
    project: str = "DEMO",
    status: str = "Done",
    labels: Sequence[str] = (),
    updated_on: datetime | None = None,
    source: str = "jsonl",
) -> None:
    origin = "simulated-board.jsonl"
    con.execute(
        "INSERT INTO tasks VALUES (?, ?, ?, ?, 'task', ?, ?, 'task', ?, ?, ?, ?, NULL, NULL, ?,"
        " ?, ?)",
        [task_ref, hashlib.sha1(f"{origin}:{task_ref}".encode()).hexdigest(), origin, source,
         updated_on or completed_at or created_at, task_ref, project, created_at, completed_at,
         status, list(labels), json.dumps({"task_ref": task_ref}), SIM_LOAD_ID],
    )  # fmt: skip


def insert_event(
    con: duckdb.DuckDBPyConnection, task_ref: str, at: datetime, kind: str, detail: str = ""
) -> None:
    con.execute("INSERT INTO task_events VALUES (?, ?, ?, ?, ?)",
                [task_ref, at, kind, detail, SIM_LOAD_ID])  # fmt: skip


def insert_link(
    con: duckdb.DuckDBPyConnection, task_ref: str, target: str, kind: str, direction: str
) -> None:
    con.execute("INSERT INTO task_links VALUES (?, ?, ?, ?, ?)",
                [task_ref, target, kind, direction, SIM_LOAD_ID])  # fmt: skip


def insert_task_commit(con: duckdb.DuckDBPyConnection, task_ref: str, repo: str, sha: str) -> None:
    con.execute("INSERT INTO task_commits VALUES (?, ?, ?, 'task-ref')", [task_ref, repo, sha])


def insert_labels(
    con: duckdb.DuckDBPyConnection,
    corpus: str,
    confidence: Sequence[float],
    correct: Sequence[bool],
    groups: Sequence[dict[str, str]] | None = None,
) -> None:
    rows = [
        (corpus, f"sim-{i}", float(c), bool(y), json.dumps(groups[i] if groups else {}),
         "simulated", i + 1, SIM_LOAD_ID)
        for i, (c, y) in enumerate(zip(confidence, correct, strict=True))
    ]  # fmt: skip
    con.executemany("INSERT INTO labels VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)


def insert_reflection(
    con: duckdb.DuckDBPyConnection,
    task_ref: str,
    confidence: float | None,
    *,
    when: datetime,
    agent: str = "sim-agent",
    repo: str = "demo-repo",
    files: Sequence[str] = (),
) -> None:
    reason = "no changed file matched a risk surface"
    doc: dict[str, Any] = {
        "schema": "reflection.v1", "task_ref": task_ref, "agent": agent,
        "session_id": f"sim-{task_ref}", "timestamp": when.astimezone(UTC).isoformat(),
        "repo": repo, "confidence": confidence,
        "most_likely_wrong": None, "known_not_in_diff": None,
        "risk": {"needs_review": False, "score": 0.0, "surface": "none",
                 "reason": "no changed file matched a risk surface"},
        "files_changed": list(files),
        "provenance": {"source": "stop-hook", "reflection_attempt": 1,
                       "degraded": confidence is None, "reflection_mode": "solo"},
    }  # fmt: skip
    canon = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    con.execute(
        "INSERT INTO reflections VALUES (?, 'reflection.v1', ?, ?, ?, ?, ?, ?, NULL, NULL, NULL,"
        " false, 0.0, 'none', ?, ?, 'stop-hook', 1, ?, 'solo', 'simulated', ?, ?)",
        [hashlib.sha256(canon.encode()).hexdigest(), task_ref, agent, doc["session_id"], when,
         repo, confidence, reason, list(files), confidence is None, canon,
         SIM_LOAD_ID],
    )  # fmt: skip
