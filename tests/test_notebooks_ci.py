"""docs/experiments.md "Notebooks in CI": its papermill pipe and its pytest file, run as written,
and the ``overrides`` parameter given as text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_reflection.experiments.notebook import InvalidOverrides, overrides_mapping, prepare
from agent_reflection.load.labels import load_labels
from agent_reflection.store.db import connect

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "experiments.md"
BIN = Path(sys.executable).parent


def recipe(marker: str) -> str:
    """The fenced block that follows ``marker`` in the doc."""
    text = DOC.read_text("utf-8")
    after = text[text.index(marker) :]
    body = after.split("```", 2)[1]
    return body.split("\n", 1)[1]  # without the fence's language line


def workspace(tmp_path: Path) -> Path:
    """A folder laid out as the recipes expect: notebooks/ and data/reflection.duckdb holding
    a small labels corpus loaded by the real loader."""
    (tmp_path / "notebooks").symlink_to(ROOT / "notebooks")
    labels = tmp_path / "calibration.jsonl"
    labels.write_text(
        "".join(
            json.dumps({"question_id": f"q{i}", "confidence": 0.5 + i / 40, "correct": i % 3 > 0})
            + "\n"
            for i in range(20)
        ),
        "utf-8",
    )
    con = connect(tmp_path / "data" / "reflection.duckdb")
    try:
        load_labels(con, labels)
    finally:
        con.close()
    return tmp_path


def env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "CI": "1"}


@pytest.mark.slow
def test_the_documented_papermill_pipe_runs_p1_with_a_mapping_override(tmp_path: Path) -> None:
    cwd = workspace(tmp_path)
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", recipe("runs this block -->")],
        cwd=cwd,
        env=env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads((cwd / "reports" / "ci" / "p1" / "results.json").read_text())
    assert doc["parameters"]["high_confidence_threshold"] == 0.7
    assert doc["exploratory"] is True
    assert doc["n"] > 0  # the labels of data/reflection.duckdb were read
    assert (cwd / "reports" / "ci" / "p1" / "p1_calibration.ipynb").is_file()


@pytest.mark.slow(reason="a pytest process that runs the P1 notebook in a real kernel")
def test_the_documented_pytest_file_passes(tmp_path: Path) -> None:
    cwd = workspace(tmp_path)
    (cwd / "tests").mkdir()
    (cwd / "tests" / "test_notebooks.py").write_text(recipe("this file under pytest -->"))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=cwd,
        env=env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({}, {}),
        ("", {}),
        ('{"p1.high_confidence_threshold": 0.7}', {"p1.high_confidence_threshold": 0.7}),
        ("p1.high_confidence_threshold: 0.7", {"p1.high_confidence_threshold": 0.7}),
        ({"p1": {"high_confidence_threshold": 0.7}}, {"p1.high_confidence_threshold": 0.7}),
        ("{p3: {window_days: 60}, p1.seed: 3}", {"p3.window_days": 60, "p1.seed": 3}),
    ],
)
def test_overrides_are_read_from_a_mapping_or_its_json_or_yaml_text(
    given: object, expected: dict[str, object]
) -> None:
    assert overrides_mapping(given) == expected


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("[0.7]", "not a list ([0.7])"),
        ("0.7", "not a float (0.7)"),
        ('{"p1.high_confidence_threshold": 0.7', "neither JSON nor YAML"),
    ],
)
def test_overrides_that_are_not_a_mapping_are_refused_saying_how_to_pass_them(
    given: str, said: str
) -> None:
    with pytest.raises(InvalidOverrides) as caught:
        overrides_mapping(given)
    message = str(caught.value)
    assert said in message
    assert "-y '{overrides: {p1.high_confidence_threshold: 0.7}}'" in message


def test_a_notebook_given_overrides_as_text_applies_them() -> None:
    prereg = prepare("", '{"p1.high_confidence_threshold": 0.7}')
    assert prereg.p1.high_confidence_threshold == 0.7 and prereg.exploratory
