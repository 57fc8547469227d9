"""One pass of the reflection cycle: rules → record → act → (tier 2 → tier 3)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from agent_reflection.cycle import events
from agent_reflection.cycle.actions import PauseResult, pause_tasks
from agent_reflection.cycle.analysis import Analysis, analyse
from agent_reflection.cycle.config import CycleConfig
from agent_reflection.cycle.events import EventSink
from agent_reflection.cycle.findings import ReflectionFinding
from agent_reflection.cycle.mutations import write_requests
from agent_reflection.cycle.rules import Scope, evaluate
from agent_reflection.store.db import read_sql


@dataclass(frozen=True)
class CycleResult:
    """Everything one pass did."""

    cycle_run_id: int
    trigger: str
    clock: datetime
    findings: tuple[ReflectionFinding, ...]
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
    sqlite_source: Path | None = None,
    sqlite_sources: tuple[Path, ...] = (),
    apply: bool = False,
    scope: Scope | None = None,
    sink: EventSink | None = None,
    analyse_findings: bool = True,
) -> CycleResult:
    """Evaluate the rules at ``now`` (default: the wall clock), pause tasks (really only with
    ``apply``), store findings and events, then tiers 2 and 3 when there are findings.

    A pause that could not be applied is in ``result.pause.failed`` / ``.error`` (its findings
    stored as not applied); tier 2 gets at most ``llm.max_pass_seconds`` for the whole pass."""
    clock = now or datetime.now(UTC)
    pass_deadline = time.monotonic() + config.llm.max_pass_seconds
    row = con.execute(read_sql("cycle/next_cycle_run_id.sql")).fetchone()
    run_id = int(row[0]) if row else 0
    found = evaluate(con, clock, config, scope)
    # Act first, record after: a pause that cannot be applied (the platform database locked)
    # must not leave findings marked applied; the next pass finds the task again and retries.
    to_pause = [f.subject_id for f in found if f.action_taken == "paused_task"]
    pause = pause_tasks(
        con,
        to_pause,
        apply=apply,
        sqlite_source=sqlite_source,
        sqlite_sources=sqlite_sources,
        cycle_run_id=run_id,
        lock_timeout=config.platform_lock_timeout_seconds,
    )
    applied = apply and not pause.failed
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
    for seq, finding in enumerate(found):
        con.execute(
            read_sql("cycle/insert_finding.sql"),
            {
                "cycle_run_id": run_id,
                "seq": seq,
                "rule": finding.rule,
                "severity": finding.severity,
                "subject_type": finding.subject_type,
                "subject_id": finding.subject_id,
                "detail": finding.detail,
                "action_taken": finding.action_taken,
                "applied": _applied(finding, apply, pause),
                "clock": clock,
            },
        )
        events.emit(
            con,
            events.FINDING,
            {
                "rule": finding.rule,
                "severity": finding.severity,
                "subject_type": finding.subject_type,
                "subject_id": finding.subject_id,
                "action_taken": finding.action_taken,
                "detail": finding.detail,
                "dry_run": not _applied(finding, apply, pause),
            },
            cycle_run_id=run_id,
            sink=sink,
        )
        if finding.rule == "skill_failure_correlation":
            events.emit(
                con,
                events.SKILL_FLAGGED,
                {"skill_name": finding.subject_id, "failure_count": finding.count},
                cycle_run_id=run_id,
                sink=sink,
            )
    if analyse_findings:
        analysis = analyse(con, found, clock, config, deadline=pass_deadline)
    else:
        analysis = Analysis("skipped", "tier 2 not requested for this trigger")
    files: list[Path] = []
    if found:
        _store_analysis(con, run_id, analysis)
    if analysis.status == "ok":
        events.emit(
            con,
            events.ANALYSIS_COMPLETED,
            {
                "findings_count": len(found),
                "actions_recommended": analysis.actions_recommended,
                "skill_actions": list(analysis.skill_actions),
                "task_actions": list(analysis.task_actions),
            },
            cycle_run_id=run_id,
            sink=sink,
        )
        written = write_requests(analysis.skill_actions, Path(config.mutation_dir), run_id)
        for request, path in written:
            events.emit(
                con,
                events.MUTATION_REQUESTED,
                {**request.to_dict(), "file": str(path)},
                cycle_run_id=run_id,
                sink=sink,
            )
            files.append(path)
    return CycleResult(run_id, trigger, clock, found, pause, analysis, tuple(files))


def _applied(finding: ReflectionFinding, apply: bool, pause: PauseResult) -> bool:
    """A finding's action counts as applied when it needs none, or it was made for real."""
    if not finding.action_taken.endswith("_task"):
        return True
    return apply and finding.subject_id not in pause.failed


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
