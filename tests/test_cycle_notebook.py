"""The reflection-cycle notebook renders through the papermill runner on the real export."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import run_reflect

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "reflection_cycle.py"


@pytest.mark.slow
@pytest.mark.shared
def test_notebook_renders_on_the_real_export(
    shared_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_reflection.execute.execute import execute_notebook
    from agent_reflection.execute.kernel import ensure_kernel

    monkeypatch.delenv("REFLECT_LLM_URL", raising=False)
    out_dir = tmp_path / "out"
    # the runner `reflect run cycle` uses: kernel for this interpreter, papermill, HTML
    executed = execute_notebook(
        NOTEBOOK,
        out_dir,
        {
            "db_path": str(tmp_path / "nb.duckdb"),
            "output_dir": str(out_dir),
            "now": "2025-11-19T00:45:00Z",
            "lookback_seconds": 3600,
            "runs_dir": str(shared_dir / "data" / "agent-runs"),
            "step_minutes": 10,
        },
        kernel=ensure_kernel(),
    )
    assert (out_dir / "findings_by_rule.png").stat().st_size > 0
    assert (out_dir / "failure_streaks.png").stat().st_size > 0
    # both charts show in the report itself, not only as files beside it
    assert (out_dir / "report.html").read_text().count('src="data:image/png;base64,') == 2
    text = executed.read_text()
    assert "consecutive_failures" in text and "pylint-dev/pylint" in text


@pytest.mark.slow
def test_no_run_logs_and_no_sample_export_says_to_load_run_logs(tmp_path: Path) -> None:
    """Run from any folder: the replay is not looked for relative to it, and the error says
    what to do."""
    from agent_reflection.store import db

    db.connect(tmp_path / "empty.duckdb").close()
    env = {**os.environ, "CI": "1", "AGENT_REFLECTION_SHARED": str(tmp_path / "no-shared-here")}
    env.pop("REFLECT_DB", None)
    args = ("run", "cycle", "--db", "empty.duckdb", "--out", "reports", "--silent")
    done = run_reflect(*args, cwd=tmp_path, env=env)
    assert done.returncode == 1
    assert "holds no run logs" in done.stderr and "reflect load runs FILE" in done.stderr
    assert str(tmp_path / "no-shared-here" / "data" / "agent-runs") in done.stderr
