"""The reflection-cycle notebook renders under papermill on the real export (slow)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "reflection_cycle.py"


@pytest.fixture
def python3_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A "python3" kernelspec running this interpreter, found first via $JUPYTER_PATH (so a
    user-wide spec pointing at another environment does not win)."""
    from ipykernel.kernelspec import install

    prefix = tmp_path / "jupyter-prefix"
    install(prefix=str(prefix), kernel_name="python3")
    monkeypatch.setenv("JUPYTER_PATH", str(prefix / "share" / "jupyter"))
    return sys.executable


@pytest.mark.slow
@pytest.mark.shared
def test_notebook_renders_on_the_real_export(
    shared_dir: Path, tmp_path: Path, python3_kernel: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import jupytext
    import papermill

    monkeypatch.delenv("REFLECT_LLM_URL", raising=False)
    ipynb = tmp_path / "reflection_cycle.ipynb"
    jupytext.write(jupytext.read(NOTEBOOK), ipynb)
    out_dir = tmp_path / "out"
    executed = tmp_path / "executed.ipynb"
    papermill.execute_notebook(
        str(ipynb),
        str(executed),
        parameters={
            "db_path": str(tmp_path / "nb.duckdb"),
            "output_dir": str(out_dir),
            "now": "2025-11-19T00:45:00Z",
            "lookback_seconds": 3600,
            "runs_dir": str(shared_dir / "data" / "agent-runs"),
            "step_minutes": 10,
        },
        kernel_name="python3",
        cwd=str(tmp_path),
        progress_bar=False,
    )
    assert (out_dir / "findings_by_rule.png").stat().st_size > 0
    assert (out_dir / "failure_streaks.png").stat().st_size > 0
    text = executed.read_text()
    assert "consecutive_failures" in text and "pylint-dev/pylint" in text
