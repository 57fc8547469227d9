"""One pass of the reflection cycle: rules → tier 2 → act and write back → record → tier 3."""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from agent_reflection.cycle import events
from agent_reflection.cycle.actions import PauseResult, pause_tasks, platform_files, targets_of
from agent_reflection.cycle.analysis import Analysis, analyse
from agent_reflection.cycle.config import CycleConfig
from agent_reflection.cycle.events import EventSink
from agent_reflection.cycle.findings import Findings
from agent_reflection.cycle.mutations import write_requests
from agent_reflection.cycle.rules import Scope, evaluate
from agent_reflection.cycle.writeback import Writeback, analysed_finding_ids, finding_id, route
from agent_reflection.names import name_text
from agent_reflection.store.db import pandas_deferred, read_sql


@dataclass(frozen=True)
class CycleResult:
    """Everything one pass did."""

    cycle_run_id: int
    trigger: str
    clock: datetime
    findings: Findings
    pause: PauseResult
    analysis: Analysis
    mutation_files: tuple[Path, ...]


def run_cycle(
    con: duckdb.DuckDBPyConnection,
    config: CycleConfig,
    *,
    now: datetime | None = None,
    trigger: str = "manual",
    source: str | None = None,
    sqlite_sources: tuple[Path, ...] = (),
    apply: bool = False,
    scope: Scope | None = None,
    sink: EventSink | None = None,
    scheduler_store: Path | None = None,
) -> CycleResult:
    """Evaluate the rules at ``now`` (default: the wall clock), run tier 2 when there are
    findings, pause tasks and write the pass back to the platform's SQLite files (really only
    with ``apply``), store findings and events, then tier 3.

    Tier 2 runs before the pass acts: a pass's writes to a platform file are one transaction,
    and that transaction must not hold the platform's write lock while an LLM answers. Under
    ``apply``, tier 2 is skipped when every finding was analysed by an earlier pass (its id is in
    an analysis the platform logged). ``scheduler_store``: the APScheduler job store of the
    platform (default: ``scheduler.db`` beside each platform file, when it has the table).

    A pause that could not be applied is in ``result.pause.failed`` / ``.error`` (its findings
    stored as not applied); tier 2 gets at most ``llm.max_pass_seconds`` for the whole pass."""
    # DuckDB's parameter binding would import pandas (0.3 s of a `reflect cycle run`)
    with pandas_deferred():
        clock = now or datetime.now(UTC)
        pass_deadline = time.monotonic() + config.llm.max_pass_seconds
        row = con.execute(read_sql("cycle/next_cycle_run_id.sql")).fetchone()
        run_id = int(row[0]) if row else 0
        found = evaluate(con, clock, config, scope)
        files = platform_files(sqlite_sources)
        task_files = targets_of(con, found.subject_ids_where(subject_type="task"), files)
        routes = route(found, task_files, files)
        if apply and found and config.llm.url and _analysed_before(routes, found, config):
            analysis = Analysis(
                "skipped",
                "every finding was analysed by an earlier pass (interaction_log of the platform): "
                "tier 2 not called again",
            )
        else:
            analysis = analyse(con, found, clock, config, deadline=pass_deadline)
        plan = Writeback(found, routes, analysis, scheduler_store) if files and found else None
        # Act first, record after: a pause that cannot be applied (the platform database locked)
        # must not leave findings marked applied; the next pass finds the task again and retries.
        to_pause = found.subject_ids_where(action_taken="paused_task")
        pause = pause_tasks(
            con,
            to_pause,
            apply=apply,
            sqlite_sources=sqlite_sources,
            cycle_run_id=run_id,
            lock_timeout=config.platform_lock_timeout_seconds,
            writeback=plan,
        )
        applied = apply and not pause.failed and not pause.error  # a write-back that failed too
        con.execute(
            read_sql("cycle/insert_cycle_run.sql"),
            {
                "cycle_run_id": run_id,
                "trigger": trigger,
                "clock": clock,
                "lookback_seconds": config.lookback_seconds,
                "source": source,
                "applied": applied,
                "findings": len(found),
                "started_at": datetime.now(UTC),
            },
        )
        _store_findings(con, run_id, found, clock, _applied(found, apply, pause), sink)
        mutation_files: list[Path] = []
        if found:
            _store_analysis(con, run_id, analysis)
        if analysis.status == "ok":
            completed = {
                "findings_count": len(found),
                "actions_recommended": analysis.actions_recommended,
                "skill_actions": list(analysis.skill_actions),
                "task_actions": list(analysis.task_actions),
            }
            written = write_requests(analysis.skill_actions, Path(config.mutation_dir), run_id)
            mutation_files = [path for _, path in written]
            types = [events.ANALYSIS_COMPLETED] + [events.MUTATION_REQUESTED] * len(written)
            data = [
                completed,
                *({**request.to_dict(), "file": name_text(path)} for request, path in written),
            ]
            texts = [events.payload_text(d) for d in data]
            events.store_encoded(con, types, texts, cycle_run_id=run_id, sink=sink, data=data)
        return CycleResult(run_id, trigger, clock, found, pause, analysis, tuple(mutation_files))


def _analysed_before(
    routes: tuple[tuple[str, tuple[int, ...]], ...],
    found: Findings,
    config: CycleConfig,
) -> bool:
    """Whether every finding is named in an analysis logged in a platform file it goes to (a
    finding written to no platform, or an unreadable file, counts as not analysed: tier 2 runs)."""
    covered: set[int] = set()
    for source, indices in routes:
        try:
            analysed = analysed_finding_ids(source, config.platform_lock_timeout_seconds)
        except sqlite3.Error:
            return False
        covered.update(i for i in indices if finding_id(found[i]) in analysed)
    return len(covered) == len(found)


def _applied(found: Findings, apply: bool, pause: PauseResult) -> list[bool]:
    """Per finding: its action counts as applied when it needs none, or it was made for real."""
    failed = set(pause.failed)
    return [
        not action.endswith("_task") or (apply and subject not in failed)
        for action, subject in zip(found.actions_taken, found.subject_ids, strict=True)
    ]


def _store_findings(
    con: duckdb.DuckDBPyConnection,
    run_id: int,
    found: Findings,
    clock: datetime,
    applied: list[bool],
    sink: EventSink | None,
) -> None:
    """The pass's findings and their events (a finding event each, and a skill-flagged event
    after each skill's), each table in one statement, from the findings' columns."""
    if not found:
        return
    con.execute(
        read_sql("cycle/insert_findings.sql"),
        {
            "cycle_run_id": run_id,
            # one JSON text per list (see sql/cycle/insert_findings.sql)
            "seqs": json.dumps(list(range(len(found)))),
            "rules": json.dumps(found.rules),
            "severities": json.dumps(found.severities),
            "subject_types": json.dumps(found.subject_types),
            "subject_ids": json.dumps(found.subject_ids),
            "details": json.dumps(found.details),
            "actions": json.dumps(found.actions_taken),
            "applied": json.dumps(applied),
            "clock": clock,
        },
    )
    # one loop decides which events each finding makes, for the table and for the sink (whose
    # dicts are built only when there is one: --events-jsonl)
    types: list[str] = []
    texts: list[str] = []
    sunk: list[dict[str, Any]] = []
    for rule, severity, subject_type, subject_id, action, detail, count, done in zip(
        found.rules,
        found.severities,
        found.subject_types,
        found.subject_ids,
        found.actions_taken,
        found.details,
        found.counts,
        applied,
        strict=True,
    ):
        types.append(events.FINDING)
        texts.append(
            events.finding_payload_text(
                rule, severity, subject_type, subject_id, action, detail, not done
            )
        )
        if sink is not None:
            sunk.append(
                {
                    "rule": rule,
                    "severity": severity,
                    "subject_type": subject_type,
                    "subject_id": subject_id,
                    "action_taken": action,
                    "detail": detail,
                    "dry_run": not done,
                }
            )
        if rule == "skill_failure_correlation":
            types.append(events.SKILL_FLAGGED)
            texts.append(events.skill_flagged_payload_text(subject_id, count))
            if sink is not None:
                sunk.append({"skill_name": subject_id, "failure_count": count})
    events.store_encoded(con, types, texts, cycle_run_id=run_id, sink=sink, data=sunk)


def _store_analysis(con: duckdb.DuckDBPyConnection, run_id: int, analysis: Analysis) -> None:
    con.execute(
        read_sql("cycle/insert_analysis.sql"),
        {
            "cycle_run_id": run_id,
            "status": analysis.status,
            "model": analysis.model or None,
            "prompt": analysis.prompt or None,
            "answer": analysis.answer or None,
            "skill_actions": json.dumps(list(analysis.skill_actions)),
            "task_actions": json.dumps(list(analysis.task_actions)),
            "detail": analysis.detail,
            "at": datetime.now(UTC),
        },
    )
