"""notebooks/in_loop.py rendered by papermill on a real Jupyter kernel over the shared data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_reflection.db import connect
from agent_reflection.load.transcripts import load_transcripts

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "in_loop.py"


@pytest.fixture
def kernel_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A ``python3`` kernelspec for this interpreter, found first through $JUPYTER_PATH
    (private to the test, so other environments' user-level kernelspecs do not interfere)."""
    from ipykernel.kernelspec import install

    prefix = tmp_path / "jupyter"
    install(kernel_name="python3", prefix=str(prefix))
    monkeypatch.setenv("JUPYTER_PATH", str(prefix / "share" / "jupyter"))
    return "python3"


@pytest.mark.slow
@pytest.mark.shared
def test_notebook_renders_on_shared_transcripts(
    shared_dir: Path, tmp_path: Path, kernel_env: str
) -> None:
    import jupytext
    import papermill

    db = tmp_path / "in_loop.duckdb"
    con = connect(db)
    load_transcripts(con, [shared_dir / "data" / "claude-code"])
    expected_calls = con.execute("SELECT count(*) FROM tool_calls").fetchone()
    con.close()
    source = tmp_path / "in_loop.ipynb"
    jupytext.write(jupytext.read(NOTEBOOK), source)
    out_dir = tmp_path / "out"
    papermill.execute_notebook(
        str(source), str(tmp_path / "executed.ipynb"), kernel_name=kernel_env,
        parameters={"db_path": str(db), "output_dir": str(out_dir)}, progress_bar=False,
    )  # fmt: skip
    summary = json.loads((out_dir / "summary.json").read_text())
    assert expected_calls is not None
    assert summary["tool_calls"] == expected_calls[0]
    assert summary["sessions"] == 5
    for name in ("tool_calls_per_session.csv", "would_fire.csv", "after_checkpoint.csv",
                 "escalations_by_band.csv", "checkpoints.png"):  # fmt: skip
        assert (out_dir / name).stat().st_size > 0, name
    would = summary["would_fire"]
    assert int(would["5"]) >= int(would["7"]) >= int(would["10"]) > 0
    positions = [row["positions"] for row in summary["after_checkpoint"]]
    assert positions[0] == "every call (baseline)" and "cadence 7" in positions
