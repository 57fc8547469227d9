"""Hand-built run histories for the reflection-cycle tests, written as real JSONL and loaded."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb

from agent_reflection.load.runs import load_runs
from agent_reflection.store import db

#: The clock of every hand-built history.
T = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def at(hours_before: float) -> str:
    return (T - timedelta(hours=hours_before)).isoformat()


@dataclass
class History:
    lines: list[dict[str, Any]] = field(default_factory=list)
    _n: int = 0

    def task(
        self,
        task_id: str = "A",
        status: str = "active",
        run_count: int = 3,
        ai_prompt: str = "Write the nightly status report",
        last_result_summary: str | None = "x" * 200,
    ) -> History:
        self.lines.append(
            {
                "kind": "task",
                "id": task_id,
                "status": status,
                "run_count": run_count,
                "ai_prompt": ai_prompt,
                "last_result_summary": last_result_summary,
            }
        )
        return self

    def outcome(
        self,
        status: str,
        hours_before: float,
        task_id: str | None = "A",
        result_length: int | None = 500,
        session_id: str | None = None,
        objective: str | None = None,
    ) -> str:
        self._n += 1
        sid = session_id or f"s{self._n:03d}"
        self.lines.append(
            {
                "kind": "outcome",
                "session_id": sid,
                "task_id": task_id,
                "status": status,
                "finished_at": at(hours_before),
                "result_length": result_length,
                "objective": objective or f"run {sid}",
            }
        )
        return sid

    def outcomes(
        self,
        statuses_newest_first: list[str],
        task_id: str = "A",
        start_hours: float = 1.0,
        **kw: Any,
    ) -> list[str]:
        """One outcome per status, newest first, an hour apart, the newest ``start_hours`` ago."""
        return [
            self.outcome(s, start_hours + i, task_id, **kw)
            for i, s in enumerate(statuses_newest_first)
        ]

    def step(
        self, session_id: str, text: Any, tool: str | None = None, action: str = "tool_call"
    ) -> History:
        self.lines.append(
            {
                "kind": "step",
                "session_id": session_id,
                "action": action,
                "tool": tool,
                "input": text,
                "at": T.isoformat(),
                "seq": len(self.lines),
            }
        )
        return self

    def write(self, path: Path) -> Path:
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines), "utf-8")
        return path

    def load(self, tmp_path: Path) -> duckdb.DuckDBPyConnection:
        con = db.connect(tmp_path / "cycle.duckdb")
        load_runs(con, self.write(tmp_path / "history.jsonl"))
        return con


def make_platform_db(path: Path, *, with_task_id: bool = True) -> Path:
    """A SQLite file with the agent platform's three tables, as it keeps them."""
    con = sqlite3.connect(path)
    task_col = ", task_id TEXT" if with_task_id else ""
    con.executescript(
        f"""
        CREATE TABLE sub_session_outcomes (
            id INTEGER PRIMARY KEY, session_id TEXT, workflow_id TEXT, timestamp REAL,
            objective TEXT, system_prompt_mode TEXT, tools_available TEXT, tools_used TEXT,
            tool_call_count INTEGER, duration_seconds REAL, timeout_value REAL,
            convergence_verdict TEXT, status TEXT, result_length INTEGER,
            nesting_depth INTEGER, continuation_count INTEGER, backend_used TEXT,
            objective_embedding BLOB{task_col});
        CREATE TABLE interaction_log (
            id INTEGER PRIMARY KEY, timestamp REAL, action TEXT, session TEXT, llm TEXT,
            input TEXT, output TEXT, status TEXT, raw_output TEXT);
        CREATE TABLE tasks (
            id TEXT PRIMARY KEY, content TEXT, status TEXT, run_count INTEGER,
            ai_prompt TEXT, last_result_summary TEXT, schedule TEXT);
        """
    )
    con.commit()
    con.close()
    return path


def add_outcome(
    path: Path,
    session: str,
    status: str,
    ts: float,
    *,
    task_id: str | None = None,
    objective: str = "obj",
    result_length: int = 100,
) -> None:
    with sqlite3.connect(path) as con:
        cols = [r[1] for r in con.execute("PRAGMA table_info(sub_session_outcomes)")]
        values = {
            "session_id": session,
            "timestamp": ts,
            "objective": objective,
            "status": status,
            "result_length": result_length,
            "duration_seconds": 30.0,
            "objective_embedding": b"\x00\x01",
        }
        if "task_id" in cols:
            values["task_id"] = task_id
        names = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        con.execute(
            f"INSERT INTO sub_session_outcomes ({names}) VALUES ({marks})", list(values.values())
        )


def add_task(path: Path, task_id: str, prompt: str, status: str = "active", runs: int = 3) -> None:
    with sqlite3.connect(path) as con:
        con.execute(
            "INSERT INTO tasks (id, content, status, run_count, ai_prompt, last_result_summary)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            [task_id, "c", status, runs, prompt, "y" * 100],
        )
