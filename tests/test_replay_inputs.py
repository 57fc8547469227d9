"""The anti-loop replay finds its inputs from ``$AGENT_REFLECTION_SHARED`` or beside the
checkout, never from the current folder, and says what is missing and how to set it."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from agent_reflection import config
from agent_reflection.in_loop.replay_inputs import resolve, review_status

CHECKOUT = Path(__file__).resolve().parents[1]


def export(folder: Path) -> Path:
    """A one-run agent-run export in ``folder``."""
    folder.mkdir(parents=True)
    (folder / "runs.jsonl").write_text('{"instance_id": "r-1", "resolved": false}\n')
    with gzip.open(folder / "steps.jsonl.gz", "wt") as handle:
        handle.write('{"instance_id": "r-1", "step": 1, "returncode": 2, "command": "make"}\n')
    return folder


def test_the_defaults_do_not_depend_on_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(config.SHARED.env, raising=False)
    monkeypatch.chdir(tmp_path)  # a folder with no ../shared beside it
    inputs = resolve()
    assert inputs.agent_runs_dir == CHECKOUT.parent / "shared" / "data" / "agent-runs"
    assert inputs.transcripts_dir == CHECKOUT.parent / "shared" / "data" / "claude-code"
    assert inputs.review_labels == CHECKOUT / "tests" / "data" / "escalation_labels" / "labels.csv"
    assert resolve("", "", "") == inputs  # the notebook's "" is the default too


def test_the_environment_variable_names_the_shared_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    export(tmp_path / "elsewhere" / "data" / "agent-runs")
    monkeypatch.setenv(config.SHARED.env, str(tmp_path / "elsewhere"))
    inputs = resolve()
    assert inputs.has_agent_runs and inputs.transcript_files == ()
    # the transcripts are missing: which, where, and both ways to set them
    (line,) = inputs.missing
    assert line == (
        f"Claude Code transcripts: {tmp_path / 'elsewhere' / 'data' / 'claude-code'} (folder "
        "not found); pass --transcripts DIR (notebook parameter transcripts_dir) or set "
        "AGENT_REFLECTION_SHARED to the folder whose data/ holds it "
        f"(it is {tmp_path / 'elsewhere'})"
    )


def test_paths_given_are_taken_from_the_current_folder_and_said_when_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    export(tmp_path / "runs")
    (tmp_path / "transcripts").mkdir()
    inputs = resolve("runs", "transcripts", "nope.csv")
    assert inputs.agent_runs_dir == tmp_path / "runs" and inputs.has_agent_runs
    assert inputs.missing == (
        f"Claude Code transcripts: {tmp_path / 'transcripts'} (no *.jsonl in it); pass "
        "--transcripts DIR (notebook parameter transcripts_dir)",
        f"review labels: {tmp_path / 'nope.csv'} (file not found; notebook parameter "
        "escalation_labels; the reading of the shared runs ships in the checkout's tests/data)",
    )


def test_the_review_labels_status_tells_missing_from_unmatched() -> None:
    labels = Path("/x/labels.csv")
    assert review_status(labels, None, {"a"}) == "no review labels at /x/labels.csv"
    assert review_status(labels, ["a", "b"], set()) == (
        "labels file /x/labels.csv found (2 labels) but no agent runs were replayed to compare "
        "them with"
    )
    assert review_status(labels, ["a", "b"], {"c", "d", "e"}) == (
        "labels file /x/labels.csv found but matched 0 of 3 runs (its 2 labels are for other runs)"
    )
    assert review_status(labels, ["a", "b"], {"a", "c"}) is None  # compared: the table shows it
