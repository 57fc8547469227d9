"""notebooks/in_loop.py rendered by the papermill runner on a real Jupyter kernel over the
shared data."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent_reflection.experiments.report import read_summary
from agent_reflection.load.transcripts import load_transcripts
from agent_reflection.store.db import connect

LABELS = Path(__file__).resolve().parent / "data" / "escalation_labels" / "labels.csv"


@dataclass(frozen=True)
class InLoopRun:
    """One ``reflect run in-loop`` over the shared data, as a user runs it from a folder of
    their own that is not this repository: the transcripts loaded into the database, the
    agent runs found through ``$AGENT_REFLECTION_SHARED``, the transcripts named by a path
    relative to the folder the command runs in (not to the notebook's output folder), and the
    reports to a folder named relative to it too."""

    done: subprocess.CompletedProcess[str]
    out_dir: Path
    sessions: int
    tool_calls: int


@pytest.fixture(scope="module")
def in_loop_run(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> InLoopRun:
    tmp_path = tmp_path_factory.mktemp("in_loop")
    db = tmp_path / "in_loop.duckdb"
    con = connect(db)
    load_transcripts(con, [shared_dir / "data" / "claude-code"])
    sessions, calls = con.execute(
        "SELECT count(DISTINCT session_id), count(*) FROM tool_calls"
    ).fetchone() or (0, 0)
    con.close()
    elsewhere = tmp_path / "walk"  # neither this repository nor ../shared
    elsewhere.mkdir()
    transcripts = os.path.relpath(shared_dir / "data" / "claude-code", elsewhere)
    done = reflect_in(
        elsewhere, "run", "in-loop", "--db", str(db), "--out", "r", "--run-id", "x",
        "--transcripts", transcripts,
        shared=shared_dir,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return InLoopRun(done, elsewhere / "r" / "x" / "in-loop", sessions, calls)


@pytest.mark.slow
@pytest.mark.shared
def test_notebook_renders_on_shared_transcripts(in_loop_run: InLoopRun) -> None:
    out_dir = in_loop_run.out_dir
    summary = json.loads((out_dir / "summary.json").read_text())
    assert summary["tool_calls"] == in_loop_run.tool_calls
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
        "escalation_review.png",
    ):
        assert (out_dir / name).stat().st_size > 0, name
    # the charts show in the report itself, not only as files beside it
    assert (out_dir / "report.html").read_text().count('src="data:image/png;base64,') == 3
    replay = summary["escalation_replay"]
    assert replay["agent_runs"]["sessions"] == 500 and replay["transcripts"]["sessions"] == 5
    # the reader's labels at the shipped threshold (docs/in-loop.md, "Checked against a
    # reader's labels"): the fourth held-out set (every run left, eight blind readers), the
    # third (six blind readers), the first held-out half, the second held-out set and all four
    # together; the measured result, which misses the bar
    review = {row["half"]: row for row in replay["review"]}
    pooled = "held_out+held_out_2+held_out_3+held_out_4"
    assert list(review) == ["held_out_4", "held_out_3", "held_out", "held_out_2", pooled]
    counts = {
        half: (r["runs"], r["labelled"], r["fired"], r["both"], r["within"])
        for half, r in review.items()
    }
    assert counts == {
        "held_out_4": (310, 7, 0, 0, 0),
        "held_out_3": (83, 5, 6, 2, 1),
        "held_out": (33, 3, 3, 2, 1),
        "held_out_2": (40, 3, 1, 1, 1),
        pooled: (466, 18, 10, 5, 3),
    }
    assert review["held_out_3"]["missed"] == [
        "django__django-13297",
        "sphinx-doc__sphinx-9229",
        "sympy__sympy-13878",
    ]
    assert sorted(review["held_out_4"]["missed"]) == [
        "django__django-11299",
        "django__django-11451",
        "django__django-11951",
        "django__django-14349",
        "django__django-7530",
        "sphinx-doc__sphinx-8593",
        "sphinx-doc__sphinx-9320",
    ]
    assert review["held_out_4"]["precision"] is None
    assert (review[pooled]["precision"], round(review[pooled]["recall"], 3)) == (0.5, 0.278)
    assert replay["second_reads"]["agree"] == replay["second_reads"]["runs"] == 70
    points = (out_dir / "escalation_points.csv").read_text().splitlines()
    assert len(points) - 1 == replay["agent_runs"]["escalation_points"]
    would = summary["would_fire"]
    assert int(would["5"]) >= int(would["7"]) >= int(would["10"]) > 0
    positions = [row["positions"] for row in summary["after_checkpoint"]]
    assert positions[0] == "every call (baseline)" and "cadence 7" in positions


def reflect_in(cwd: Path, *args: str, shared: Path) -> subprocess.CompletedProcess[str]:
    """``reflect ARGS`` run from ``cwd``, with ``$AGENT_REFLECTION_SHARED`` set to ``shared``."""
    env = {**os.environ, "CI": "1", "AGENT_REFLECTION_SHARED": str(shared)}
    return subprocess.run(
        [sys.executable, "-m", "agent_reflection", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
    )


@pytest.mark.slow
@pytest.mark.shared
def test_reflect_run_in_loop_replays_the_same_files_from_any_folder(
    shared_dir: Path, in_loop_run: InLoopRun
) -> None:
    done = in_loop_run.done
    # the figures docs/in-loop.md gives, not "0 of 0" because the folder is not the repo root
    assert "13 of 500 agent runs and 0 of 5 transcripts would have escalated" in done.stdout
    assert "not there" not in done.stdout and "review labels" not in done.stdout
    summary = json.loads((in_loop_run.out_dir / "summary.json").read_text())
    inputs = summary["escalation_replay"]["inputs"]
    assert inputs["agent_runs_dir"] == str(shared_dir.resolve() / "data" / "agent-runs")
    assert inputs["transcripts_dir"] == str(shared_dir.resolve() / "data" / "claude-code")
    assert inputs["missing"] == [] and inputs["review_labels_note"] is None
    review = {row["half"]: row for row in summary["escalation_replay"]["review"]}
    assert (review["held_out"]["fired"], review["held_out"]["both"]) == (3, 2)
    assert (review["held_out_2"]["fired"], review["held_out_2"]["both"]) == (1, 1)


@pytest.mark.shared
@pytest.mark.slow
def test_run_in_loop_prints_the_summary_its_report_opens_with(in_loop_run: InLoopRun) -> None:
    """Real transcripts through the real CLI: the terminal lines are the summary the notebook
    wrote, and the executed report shows that summary above its first section."""
    out_dir = in_loop_run.out_dir
    replay = json.loads((out_dir / "summary.json").read_text("utf-8"))["escalation_replay"]
    assert replay["review"], "the replay of the agent runs and its reading were skipped"
    summary = read_summary(out_dir)
    assert summary is not None
    stdout = in_loop_run.done.stdout
    assert stdout.splitlines()[: len(summary.lines())] == list(summary.lines())
    facts = dict(summary.facts)
    assert (
        facts["sessions"] == f"{in_loop_run.sessions:,} with {in_loop_run.tool_calls:,} tool calls"
    )
    report = (out_dir / "report.html").read_text("utf-8")
    assert "filled in by the last cell.</p>" not in report  # the placeholder was replaced
    assert report.index("Summary: In-loop reflection") < report.index("1. Tool calls per session")


@pytest.mark.slow
def test_a_missing_input_is_said_in_the_output_and_the_report(tmp_path: Path) -> None:
    # a shared folder with an agent-run export of one run the labels never saw, no transcripts
    runs = tmp_path / "shared" / "data" / "agent-runs"
    runs.mkdir(parents=True)
    (runs / "runs.jsonl").write_text('{"instance_id": "demo-1", "resolved": true}\n')
    with gzip.open(runs / "steps.jsonl.gz", "wt") as handle:
        handle.write('{"instance_id": "demo-1", "step": 1, "returncode": 1, "command": "x"}\n')
    db = tmp_path / "empty.duckdb"
    connect(db).close()
    done = reflect_in(
        tmp_path, "run", "in-loop", "--db", str(db), "--out", "r", "--run-id", "x",
        shared=tmp_path / "shared",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    transcripts = tmp_path / "shared" / "data" / "claude-code"
    said = (
        f"not there, skipped: Claude Code transcripts: {transcripts} (folder not found); pass "
        "--transcripts DIR (notebook parameter transcripts_dir) or set AGENT_REFLECTION_SHARED"
    )
    assert said in done.stdout
    assert f"labels file {LABELS} found but matched 0 of 1 runs" in done.stdout
    assert "no review labels" not in done.stdout
    report = (tmp_path / "r" / "x" / "in-loop" / "report.html").read_text()
    assert "Not there, skipped." in report and f"{transcripts} (folder not found)" in report
