"""``reflect cycle run`` on the real 500-run SWE-bench export, checked against a recount."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from agent_reflection.cli._groups import cli, register_all_commands

pytestmark = pytest.mark.shared


def expected_pauses(runs: list[dict[str, object]], now: datetime, lookback: int) -> dict[str, int]:
    """Recount, in plain Python, which repositories have ≥ 3 unresolved runs in a row."""
    out: dict[str, int] = {}
    for repo in {str(r["repo"]) for r in runs}:
        done = sorted(
            (r for r in runs if r["repo"] == repo and _t(r["last_response_at"]) <= now),
            key=lambda r: _t(r["last_response_at"]),
            reverse=True,
        )
        if not any(_t(r["last_response_at"]) > now - timedelta(seconds=lookback) for r in done):
            continue
        streak = 0
        for r in done[:10]:
            if r["resolved"]:
                break
            streak += 1
        if streak >= 3:
            out[repo] = streak
    return out


def _t(value: object) -> datetime:
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).astimezone(UTC)


@pytest.mark.parametrize(
    ("now", "lookback"),
    [("2025-11-19T00:40:00Z", 3600), ("2025-11-19T00:48:56Z", 7200), ("2025-11-19T00:00:00Z", 900)],
)
def test_cycle_run_on_the_real_export(
    shared_dir: Path, tmp_path: Path, now: str, lookback: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REFLECT_LLM_URL", raising=False)
    runs_dir = shared_dir / "data" / "agent-runs"
    runs = [json.loads(x) for x in (runs_dir / "runs.jsonl").read_text().splitlines()]
    register_all_commands()
    result = CliRunner().invoke(
        cli,
        [
            "cycle",
            "run",
            str(runs_dir / "runs.jsonl"),
            "--now",
            now,
            "--lookback",
            str(lookback),
            "--db",
            str(tmp_path / "db.duckdb"),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    printed = [line for line in result.output.splitlines() if "consecutive_failures" in line]
    expected = expected_pauses(runs, _t(now), lookback)
    assert len(printed) == len(expected)
    for repo, streak in expected.items():
        assert any(f"task {repo} [paused_task]: last {streak} outcomes" in p for p in printed)
    reason = "no LLM endpoint configured" if expected else "no findings: tier 2 not called"
    assert f"tier 2: skipped: {reason}" in result.output
