"""Tier 2: fill the prompt with findings, recent failed sub-sessions and active tasks, ask the
configured endpoint, keep its answer and the skill / task actions it recommends."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb

from agent_reflection.cycle.config import CycleConfig
from agent_reflection.cycle.extract import count_markers, json_tail, recommended_skill_actions
from agent_reflection.cycle.findings import ReflectionFinding
from agent_reflection.cycle.llm import LLMCallFailed, chat
from agent_reflection.store.db import read_sql

MAX_FAILED_SESSIONS = 20
MAX_ACTIVE_TASKS = 30


@dataclass(frozen=True)
class Analysis:
    """What tier 2 did. ``status``: ok | skipped | failed (``detail`` says why)."""

    status: str
    detail: str
    prompt: str = ""
    answer: str = ""
    model: str = ""
    skill_actions: tuple[str, ...] = ()
    task_actions: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    actions_recommended: int = 0


def template(config: CycleConfig) -> str:
    """The user's template (``llm.prompt_path``) or the packaged one."""
    if config.llm.prompt_path:
        return Path(config.llm.prompt_path).read_text("utf-8")
    return (
        resources.files("agent_reflection")
        .joinpath("data/prompts/reflection_analysis.txt")
        .read_text("utf-8")
    )


def build_prompt(
    con: duckdb.DuckDBPyConnection,
    findings: Sequence[ReflectionFinding],
    now: datetime,
    config: CycleConfig,
) -> str:
    """The template with its three placeholders filled (other braces are left alone)."""
    failed = con.execute(
        read_sql("cycle/prompt_failed_sessions.sql"),
        {"now": now, "lookback_seconds": config.lookback_seconds, "limit": MAX_FAILED_SESSIONS},
    ).fetchall()
    tasks = con.execute(
        read_sql("cycle/prompt_active_tasks.sql"), {"limit": MAX_ACTIVE_TASKS}
    ).fetchall()
    values = {
        "{findings}": "\n".join(f"- {f.line()}" for f in findings) or "(none)",
        "{failed_sessions}": "\n".join(
            f"- {s} (task {t}, {st} at {at.isoformat()}): {obj}" for s, t, st, at, obj in failed
        )
        or "(none)",
        "{active_tasks}": "\n".join(f"- {t} (runs {n}): {p}" for t, n, p in tasks) or "(none)",
    }
    text = template(config)
    for key, value in values.items():
        text = text.replace(key, value)
    return text


def analyse(
    con: duckdb.DuckDBPyConnection,
    findings: Sequence[ReflectionFinding],
    now: datetime,
    config: CycleConfig,
    *,
    deadline: float | None = None,
) -> Analysis:
    """Run tier 2 when it should run: findings exist and an endpoint is configured.

    ``deadline`` (a :func:`time.monotonic` value) ends the pass's LLM budget."""
    if not findings:
        return Analysis("skipped", "no findings: tier 2 not called")
    if not config.llm.url:
        return Analysis(
            "skipped",
            "no LLM endpoint configured ([reflection.llm].url or $REFLECT_LLM_URL): tier 2 skipped",
        )
    prompt = build_prompt(con, findings, now, config)
    try:
        answer = chat(config.llm, prompt, deadline=deadline)
    except LLMCallFailed as exc:
        return Analysis("failed", str(exc), prompt=prompt, model=config.llm.model)
    try:
        tail = json_tail(answer.text)
        skill_actions = tuple(recommended_skill_actions(answer.text))
        markers = count_markers(answer.text)
    except (RecursionError, MemoryError, ValueError) as exc:
        # whatever the answer holds, tier 1 (its pauses, the cycle_runs row) goes on
        reason = f"the answer could not be read ({type(exc).__name__}: {exc})"
        return Analysis("failed", reason, prompt=prompt, model=answer.model)
    return Analysis(
        status="ok",
        detail=f"answered in {answer.attempts} attempt(s)",
        prompt=prompt,
        answer=answer.text,
        model=answer.model,
        skill_actions=skill_actions,
        task_actions=tail.task_actions,
        actions_recommended=markers + len(tail.skill_actions),
    )
