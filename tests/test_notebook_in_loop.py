"""notebooks/in_loop.py rendered by the papermill runner on a real Jupyter kernel over the
shared data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_reflection.load.transcripts import load_transcripts
from agent_reflection.store.db import connect

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "in_loop.py"
LABELS = Path(__file__).resolve().parent / "data" / "escalation_review" / "labels.csv"


@pytest.mark.slow
@pytest.mark.shared
def test_notebook_renders_on_shared_transcripts(shared_dir: Path, tmp_path: Path) -> None:
    from agent_reflection.experiments.kernel import ensure_kernel
    from agent_reflection.experiments.runner import execute_notebook

    db = tmp_path / "in_loop.duckdb"
    con = connect(db)
    load_transcripts(con, [shared_dir / "data" / "claude-code"])
    expected_calls = con.execute("SELECT count(*) FROM tool_calls").fetchone()
    con.close()
    out_dir = tmp_path / "out"
    # the runner `reflect run in-loop` uses: kernel for this interpreter, papermill, HTML
    execute_notebook(
        NOTEBOOK,
        out_dir,
        {
            "db_path": str(db),
            "output_dir": str(out_dir),
            "agent_runs_dir": str(shared_dir / "data" / "agent-runs"),
            "transcripts_dir": str(shared_dir / "data" / "claude-code"),
            "escalation_labels": str(LABELS),
        },
        kernel=ensure_kernel(),
    )
    summary = json.loads((out_dir / "summary.json").read_text())
    assert expected_calls is not None
    assert summary["tool_calls"] == expected_calls[0]
    assert summary["sessions"] == 5
    for name in (
        "tool_calls_per_session.csv",
        "would_fire.csv",
        "after_checkpoint.csv",
        "escalations_by_band.csv",
        "checkpoints.png",
        "escalation_streaks.csv",
        "escalation_points.csv",
        "escalation_streaks.png",
        "reflection_replies.csv",
        "escalation_review.csv",
    ):
        assert (out_dir / name).stat().st_size > 0, name
    # the charts show in the report itself, not only as files beside it
    assert (out_dir / "report.html").read_text().count('src="data:image/png;base64,') == 2
    replay = summary["escalation_replay"]
    assert replay["agent_runs"]["sessions"] == 500 and replay["transcripts"]["sessions"] == 5
    # the reading of the steps, at the shipped threshold (docs/in-loop.md, "Checked by reading")
    (review,) = replay["review"]
    assert (review["escalated"], review["escalated_should"], review["should"]) == (21, 11, 12)
    points = (out_dir / "escalation_points.csv").read_text().splitlines()
    assert len(points) - 1 == replay["agent_runs"]["escalation_points"]
    would = summary["would_fire"]
    assert int(would["5"]) >= int(would["7"]) >= int(would["10"]) > 0
    positions = [row["positions"] for row in summary["after_checkpoint"]]
    assert positions[0] == "every call (baseline)" and "cadence 7" in positions
