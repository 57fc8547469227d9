"""Insert the Apache Jira export straight into tasks/task_links (a stand-in for the board
loader, so the P3 real-data test does not depend on it)."""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
from pathlib import Path

import duckdb


def insert_jira(con: duckdb.DuckDBPyConnection, path: Path) -> int:
    with gzip.open(path, "rb") as fh:
        reader = csv.DictReader(io.TextIOWrapper(fh, encoding="utf-8"), delimiter=";")
        rows = list(reader)
    tasks, links = [], set()
    for r in rows:
        key = r["Key"]
        tasks.append(
            (
                key,
                hashlib.sha1(f"{path.name}:{key}".encode()).hexdigest(),
                str(path),
                "jira",
                "bug",
                r["LastUpdateDate"] or None,
                None,
                "Bug",
                r["Project"],
                r["CreationDate"] or None,
                r["ResolutionDate"] or None,
                r["Status"],
                "Fixed",
                r["Priority"],
                [],
                hashlib.sha1(key.encode()).hexdigest(),
                json.dumps({"Key": key}),
                0,
            )
        )
        for column, direction in (("InwardIssueLinks", "inward"), ("OutwardIssueLinks", "outward")):
            for token in (r[column] or "").split():
                kind, _, target = token.rpartition(":")
                if kind and target:
                    links.add((key, target, kind, direction, 0))
    con.executemany(
        "INSERT INTO tasks (task_ref, uuid, origin, source, category, updated_on, title, kind,"
        " project, created_at, completed_at, status, resolution, priority, labels, fingerprint,"
        " raw, load_id) VALUES (?, ?, ?, ?, ?, ?::TIMESTAMPTZ, ?, ?, ?, ?::TIMESTAMPTZ,"
        " ?::TIMESTAMPTZ, ?, ?, ?, ?, ?, ?, ?)",
        tasks,
    )
    con.executemany(
        "INSERT INTO task_links (task_ref, target_ref, kind, direction, load_id)"
        " VALUES (?, ?, ?, ?, ?)",
        sorted(links),
    )
    return len(tasks)
