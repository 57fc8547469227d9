"""Rows of the loader tables for tests that choose every value: commits (with the sha a test
names), board tasks, events, links, task-commit links, labels and sidecar records.

The demo builds its data through the loaders (``simulate/phase0.py``); these tests need commits
whose sha they pick (their SZZ rows and abbreviated-hash reverts name it), which git derives
itself, and tasks whose events they add one at a time, so they write the rows directly, by
column name. A commit row carries no message parsing of its own: every message-derived column
comes from :func:`agent_reflection.load.git.signals.derive_signals`, stamped with its
:data:`~agent_reflection.load.git.signals.SIGNALS_VERSION`, and ``is_merge`` is "more than one
parent", exactly what the git loader does with each parsed commit
(``tests/test_simulate_phase0.py`` checks these rows equal what ``reflect load git`` writes for
the same commits of a real repository). A sidecar record goes through the sidecar loader's own
checks, row and insert.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import duckdb

from agent_reflection.load.git.agents import AGENT_PATTERNS_VERSION, identity
from agent_reflection.load.git.ai_notes import decide_agent
from agent_reflection.load.git.signals import SIGNALS_VERSION, derive_signals
from agent_reflection.load.sidecars.loader import insert_records
from agent_reflection.simulate.phase0 import sim_reflection

SIM_LOAD_ID = 0

INSERT_COMMITS = """
INSERT INTO commits (
    repo, sha, parents, author_name, author_email, author_time, author_tz_offset,
    committer_name, committer_email, committer_time, committer_tz_offset, subject, body,
    is_merge, signals_version, is_revert, reverts_sha, is_reapply, pr_number, cc_type,
    cc_scope, cc_breaking, is_fix_like, files_available, load_id, agent, agent_version,
    agent_source
)
VALUES (
    $repo, $sha, $parents, $author_name, $author_email, $author_time, $author_tz_offset,
    $committer_name, $committer_email, $committer_time, $committer_tz_offset, $subject, $body,
    $is_merge, $signals_version, $is_revert, $reverts_sha, $is_reapply, $pr_number, $cc_type,
    $cc_scope, $cc_breaking, $is_fix_like, $files_available, $load_id, $agent, $agent_version,
    $agent_source
)
"""
#: One modified text file per row (1 line added, none deleted).
INSERT_COMMIT_FILES = """
INSERT INTO commit_files (repo, sha, path, old_path, added, deleted, "binary", load_id)
VALUES ($repo, $sha, $path, NULL, 1, 0, false, $load_id)
"""
#: Source jsonl unless given, category and kind 'task'.
INSERT_TASK = """
INSERT INTO tasks (
    task_ref, uuid, origin, source, category, updated_on, title, kind, project, created_at,
    completed_at, status, labels, fingerprint, raw, load_id
)
VALUES (
    $task_ref, $uuid, $origin, $source, 'task', $updated_on, $title, 'task', $project,
    $created_at, $completed_at, $status, $labels, $fingerprint, $raw, $load_id
)
"""
INSERT_EVENT = """
INSERT INTO task_events (task_ref, "at", kind, detail, load_id)
VALUES ($task_ref, $at, $kind, $detail, $load_id)
"""
INSERT_LINK = """
INSERT INTO task_links (task_ref, target_ref, kind, direction, load_id)
VALUES ($task_ref, $target_ref, $kind, $direction, $load_id)
"""
#: As the task matcher's task-ref rule would make it.
INSERT_TASK_COMMIT = """
INSERT INTO task_commits (task_ref, repo, sha, matched_by, load_id)
VALUES ($task_ref, $repo, $sha, 'task-ref', $load_id)
"""
INSERT_LABELS = """
INSERT INTO labels (corpus, record_key, confidence, correct, groups, source_file, line, load_id)
VALUES ($corpus, $record_key, $confidence, $correct, $groups, $source_file, $line, $load_id)
"""


def commit_row(
    repo: str,
    sha: str,
    when: datetime,
    subject: str,
    body: str = "",
    parents: Sequence[str] = (),
) -> dict[str, Any]:
    """One ``commits`` row, column name to value; the message-derived columns are the git
    loader's (:func:`derive_signals`, :func:`decide_agent`)."""
    s = derive_signals(subject, body)
    sim = identity("Sim", "sim@example.com")  # author and committer of every simulated commit
    agent, agent_source = decide_agent(subject, body, sim, sim, None, None)
    return {
        "repo": repo,
        "sha": sha,
        "parents": list(parents),
        "author_name": "Sim",
        "author_email": "sim@example.com",
        "author_time": when,
        "author_tz_offset": 0,
        "committer_name": "Sim",
        "committer_email": "sim@example.com",
        "committer_time": when,
        "committer_tz_offset": 0,
        "subject": subject,
        "body": body,
        "is_merge": len(parents) > 1,
        "signals_version": SIGNALS_VERSION,
        "is_revert": s.is_revert,
        "reverts_sha": s.reverts_sha,
        "is_reapply": s.is_reapply,
        "pr_number": s.pr_number,
        "cc_type": s.cc_type,
        "cc_scope": s.cc_scope,
        "cc_breaking": s.cc_breaking,
        "is_fix_like": s.is_fix_like,
        "files_available": True,
        "load_id": SIM_LOAD_ID,
        "agent": agent,
        "agent_version": AGENT_PATTERNS_VERSION,
        "agent_source": agent_source,
    }


def insert_commit_rows(
    con: duckdb.DuckDBPyConnection,
    commits: Sequence[Mapping[str, Any]],
    files: Sequence[tuple[str, str, str]],
) -> None:
    """Insert ``commit_row`` rows and (repo, sha, path) file rows."""
    if commits:
        con.executemany(INSERT_COMMITS, [dict(c) for c in commits])
    if files:
        con.executemany(
            INSERT_COMMIT_FILES,
            [{"repo": r, "sha": s, "path": p, "load_id": SIM_LOAD_ID} for r, s, p in files],
        )


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
    insert_commit_rows(
        con,
        [commit_row(repo, sha, when, subject, body, parents)],
        [(repo, sha, path) for path in files],
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
    raw = json.dumps({"task_ref": task_ref})
    con.execute(
        INSERT_TASK,
        {
            "task_ref": task_ref,
            "uuid": hashlib.sha1(f"{origin}:{task_ref}".encode()).hexdigest(),
            "origin": origin,
            "source": source,
            "updated_on": updated_on or completed_at or created_at,
            "title": task_ref,
            "project": project,
            "created_at": created_at,
            "completed_at": completed_at,
            "status": status,
            "labels": list(labels),
            "fingerprint": hashlib.sha1(raw.encode()).hexdigest(),
            "raw": raw,
            "load_id": SIM_LOAD_ID,
        },
    )


def insert_event(
    con: duckdb.DuckDBPyConnection, task_ref: str, at: datetime, kind: str, detail: str = ""
) -> None:
    con.execute(
        INSERT_EVENT,
        {"task_ref": task_ref, "at": at, "kind": kind, "detail": detail, "load_id": SIM_LOAD_ID},
    )


def insert_link(
    con: duckdb.DuckDBPyConnection, task_ref: str, target: str, kind: str, direction: str
) -> None:
    con.execute(
        INSERT_LINK,
        {
            "task_ref": task_ref,
            "target_ref": target,
            "kind": kind,
            "direction": direction,
            "load_id": SIM_LOAD_ID,
        },
    )


def insert_task_commit(con: duckdb.DuckDBPyConnection, task_ref: str, repo: str, sha: str) -> None:
    con.execute(
        INSERT_TASK_COMMIT, {"task_ref": task_ref, "repo": repo, "sha": sha, "load_id": SIM_LOAD_ID}
    )


def insert_labels(
    con: duckdb.DuckDBPyConnection,
    corpus: str,
    confidence: Sequence[float],
    correct: Sequence[bool],
    groups: Sequence[dict[str, str]] | None = None,
) -> None:
    rows = [
        {
            "corpus": corpus,
            "record_key": f"sim-{i}",
            "confidence": float(c),
            "correct": bool(y),
            "groups": json.dumps(groups[i] if groups else {}),
            "source_file": "simulated",
            "line": i + 1,
            "load_id": SIM_LOAD_ID,
        }
        for i, (c, y) in enumerate(zip(confidence, correct, strict=True))
    ]
    if rows:
        con.executemany(INSERT_LABELS, rows)


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
    """One sidecar row (:func:`sim_reflection`), stored as ``reflect load sidecars`` stores a
    file holding it: the loader's own checks, row, content hash and insert."""
    record = sim_reflection(task_ref, confidence, when=when, agent=agent, repo=repo, files=files)
    insert_records(con, [record], source_file="simulated", load_id=SIM_LOAD_ID)
