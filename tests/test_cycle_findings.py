"""A pass's findings in bulk (``Findings``) and the stored texts of their events."""

from __future__ import annotations

import json
from dataclasses import astuple
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import given
from hypothesis import strategies as st

from _runlog import History, T
from agent_reflection.cycle import events
from agent_reflection.cycle.config import CycleConfig
from agent_reflection.cycle.engine import run_cycle
from agent_reflection.cycle.findings import Findings, ReflectionFinding
from agent_reflection.store import db

# text with quotes, backslashes, control characters, non-ASCII and astral characters
TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=30)
FINDING = st.builds(
    ReflectionFinding,
    rule=st.sampled_from(["consecutive_failures", "stale_task", "skill_failure_correlation"]),
    severity=st.sampled_from(["warning", "action_taken"]),
    subject_type=st.sampled_from(["task", "skill", "sub_session"]),
    subject_id=TEXT,
    detail=TEXT,
    action_taken=st.sampled_from(["", "paused_task", "already_paused", "flagged_skill"]),
    count=st.integers(min_value=0, max_value=10**12),
    evidence=TEXT,
)


@given(st.lists(FINDING, max_size=8))
def test_findings_read_back_as_the_findings_they_were_built_from(
    found: list[ReflectionFinding],
) -> None:
    bulk = Findings.from_rows([astuple(f) for f in found])
    assert len(bulk) == len(found)
    assert list(bulk) == found
    assert [bulk[i] for i in range(len(found))] == found
    assert list(bulk[1::2]) == found[1::2]
    assert bulk.subject_ids_where(subject_type="task") == [
        f.subject_id for f in found if f.subject_type == "task"
    ]
    assert bulk.subject_ids_where(action_taken="paused_task") == [
        f.subject_id for f in found if f.action_taken == "paused_task"
    ]


def test_findings_columns_must_have_one_length() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        Findings(("a", "b"), ("warning",), ("task",), ("x",), ("d",), ("",), (0,), ("",))


@given(
    rule=TEXT,
    severity=TEXT,
    subject_type=TEXT,
    subject_id=TEXT,
    action_taken=TEXT,
    detail=TEXT,
    dry_run=st.booleans(),
)
def test_a_finding_event_text_is_what_json_dumps_writes(
    rule: str,
    severity: str,
    subject_type: str,
    subject_id: str,
    action_taken: str,
    detail: str,
    dry_run: bool,
) -> None:
    data = {
        "rule": rule,
        "severity": severity,
        "subject_type": subject_type,
        "subject_id": subject_id,
        "action_taken": action_taken,
        "detail": detail,
        "dry_run": dry_run,
    }
    text = events.finding_payload_text(
        rule, severity, subject_type, subject_id, action_taken, detail, dry_run
    )
    assert text == events.payload_text(data)


@given(skill=TEXT, count=st.integers(min_value=-(10**20), max_value=10**20))
def test_a_skill_flagged_event_text_is_what_json_dumps_writes(skill: str, count: int) -> None:
    expected = events.payload_text({"skill_name": skill, "failure_count": count})
    assert events.skill_flagged_payload_text(skill, count) == expected


def test_an_event_text_holding_the_list_separator_is_refused_and_nothing_is_stored(
    tmp_path: Path,
) -> None:
    con = db.connect(tmp_path / "db.duckdb")
    with pytest.raises(ValueError, match="U\\+001E"):
        events.store_encoded(
            con, [events.FINDING] * 2, ['{"a": 1}', '{"b": "\x1e"}'], cycle_run_id=1
        )
    assert con.execute("SELECT count(*) FROM events").fetchone() == (0,)


def _pass_with_findings(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    """Two tasks failing three times (paused), one skill read in three failed sessions."""
    history = History().task("A").task("B")
    history.outcomes(["failed"] * 3, task_id="A")
    history.outcomes(["failed", "timeout", "failed"], task_id="B")
    for hours in (1, 2, 3):
        session = history.outcome("failed", hours, task_id=None)
        read = {"tool": "skill", "arguments": {"action": "read", "skill_name": 'd\u00e9 "ploy'}}
        history.step(session, read, tool="skill")
    return history.load(tmp_path)


def test_a_pass_stores_each_event_as_the_sink_receives_it(tmp_path: Path) -> None:
    con = _pass_with_findings(tmp_path)
    sunk: list[dict[str, Any]] = []
    result = run_cycle(con, CycleConfig(), now=T, sink=sunk.append)
    kinds = {f.rule for f in result.findings}
    assert {"consecutive_failures", "skill_failure_correlation"} <= kinds
    assert 'd\u00e9 "ploy' in result.findings.subject_ids
    stored = con.execute(
        "SELECT event_id, cycle_run_id, type, strftime(\"at\", '%Y'), data::VARCHAR "
        "FROM events ORDER BY event_id"
    ).fetchall()
    assert [(e["event_id"], e["cycle_run_id"], e["type"]) for e in sunk] == [
        row[:3] for row in stored
    ]
    assert [json.dumps(e["data"], default=str, sort_keys=True) for e in sunk] == [
        row[4] for row in stored
    ]
    # one finding event per finding, then a skill-flagged one after each flagged skill
    expected_types = []
    for finding in result.findings:
        expected_types.append(events.FINDING)
        if finding.rule == "skill_failure_correlation":
            expected_types.append(events.SKILL_FLAGGED)
    assert [row[2] for row in stored] == expected_types
    stored_findings = con.execute(
        "SELECT rule, severity, subject_type, subject_id, detail, action_taken, applied "
        "FROM findings ORDER BY seq"
    ).fetchall()
    assert stored_findings == [
        (f.rule, f.severity, f.subject_type, f.subject_id, f.detail, f.action_taken, True)
        if not f.action_taken.endswith("_task")
        else (f.rule, f.severity, f.subject_type, f.subject_id, f.detail, f.action_taken, False)
        for f in result.findings
    ]
