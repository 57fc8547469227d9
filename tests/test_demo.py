"""``reflect demo`` and the session simulation behind it (real git, the real hook subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from agent_reflection.cli._groups import cli, register_all_commands
from agent_reflection.reflection.record import json_schema
from agent_reflection.simulate.session import (
    DEFAULT_SELF_REPORT,
    FEATURE_BRANCH,
    SimulationFailed,
    simulate_session,
)


def test_simulated_session_writes_a_valid_sidecar(tmp_path: Path) -> None:
    session = simulate_session(tmp_path)
    record = session.record
    assert session.sidecar_path.parent == session.repo / ".reflection" / "sidecars"
    jsonschema.validate(json.loads(session.sidecar_path.read_text()), json_schema())
    # committed on the feature branch + uncommitted edits; not the self-report file
    assert record.files_changed == (
        "README.md",
        "src/shop/auth/session.py",
        "tests/test_session_expiry.py",
    )
    assert (record.risk.surface, record.risk.needs_review) == ("auth", True)
    assert record.task_ref == f"shop-api@{FEATURE_BRANCH}"
    assert record.agent == "demo-agent"
    assert record.confidence == DEFAULT_SELF_REPORT.confidence
    assert record.provenance.degraded is False


def test_simulated_session_without_self_report_is_degraded(tmp_path: Path) -> None:
    session = simulate_session(tmp_path, self_report=None, mode="orchestrated")
    assert session.record.confidence is None
    assert session.record.provenance.degraded is True
    assert session.record.provenance.reflection_mode == "orchestrated"
    assert "no self-report" in session.hook_stderr


def test_simulation_refuses_a_used_folder(tmp_path: Path) -> None:
    (tmp_path / "shop-api").mkdir()
    with pytest.raises(SimulationFailed, match="already exists"):
        simulate_session(tmp_path)


def test_simulation_reports_a_broken_hook(tmp_path: Path) -> None:
    with pytest.raises(SimulationFailed, match="no sidecar"):
        simulate_session(tmp_path, mode="off")  # fail-closed: the hook writes nothing


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    register_all_commands()
    result = CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)
    return result.exit_code, result.output


def test_cli_demo_shows_the_risk_floor_and_cleans_up(tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    tempfile.tempdir = None
    try:
        code, output = invoke("demo", "--session-only", env={"TMPDIR": str(scratch)})
    finally:
        tempfile.tempdir = None
    assert code == 0, output
    assert "NEEDS REVIEW" in output and "auth" in output
    assert "src/shop/auth/session.py" in output
    assert list(scratch.iterdir()) == [], "the scratch repo is removed without --keep"


def test_cli_demo_json_and_keep(tmp_path: Path) -> None:
    code, output = invoke("demo", "--json", "--keep", str(tmp_path / "kept"))
    assert code == 0
    record = json.loads(output)
    jsonschema.validate(record, json_schema())
    kept = list((tmp_path / "kept" / "shop-api" / ".reflection" / "sidecars").iterdir())
    assert len(kept) == 1 and json.loads(kept[0].read_text()) == record


def test_cli_demo_no_self_report(tmp_path: Path) -> None:
    code, output = invoke("demo", "--session-only", "--no-self-report", "--keep", str(tmp_path))
    assert code == 0
    assert "degraded yes" in output


@pytest.mark.slow(reason="README command 1 whole: the hooks, the loads, every notebook")
def test_cli_demo_runs_the_whole_loop_as_readme_command_one(tmp_path: Path) -> None:
    """README command 1: capture a session, then Phase-0 on simulated data, in a real process."""
    done = subprocess.run(
        [sys.executable, "-m", "agent_reflection", "demo", "--out", str(tmp_path / "demo")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, "CI": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "NEEDS REVIEW" in out and "src/shop/auth/session.py" in out
    assert "reflection.v1" not in out.split("Phase-0")[0].split("provenance")[1], "brief view"
    for name in ("p1", "p2", "p3"):
        assert f"{name}: " in out
    report = Path(out.split("report: ", 1)[1].splitlines()[0])
    assert report.is_file() and report.name == "index.html"
    results = json.loads((report.parent / "p1" / "results.json").read_text())
    low, high = results["metric"]["ci_low"], results["metric"]["ci_high"]
    assert low <= 0.70 <= high, "the simulated AUC of 0.70 lies inside the reported CI"
    # step 3: P1 on loop labels, after the gate (which it does not change)
    head, loop = out.split("P1 on loop labels (32 simulated sessions, real hooks)", 1)
    assert "Phase-0 gate (SIMULATED data): closed loop ALLOWED" in head
    assert "p1: continue (SIMULATED data)" in head
    # every page that states a verdict says the data were simulated
    run_dir = report.parent
    assert (
        (run_dir / "summary.md")
        .read_text()
        .startswith(f"# Phase-0 report {run_dir.name} (SIMULATED data)")
    )
    for page in ("index.html", "p1/report.html", "p2/report.html", "p3/report.html"):
        assert "SIMULATED DATA: these verdicts are about a simulator" in (
            (run_dir / page).read_text().replace("&#x27;", "'")
        ), page
    assert "Phase-0 gate (SIMULATED data)" in (run_dir / "summary" / "report.html").read_text()
    # the reader's pages: summary first, no code; the executed notebook beside, linked
    page = (run_dir / "p1" / "report.html").read_text()
    assert page.index("Summary: P1") < page.index("Method") < page.index("Verdict and its notes")
    assert "nb.show_opening" not in page
    assert "nb.show_opening" in (run_dir / "p1" / "p1_calibration.ipynb").read_text()
    assert "<a href='p1/p1_calibration.ipynb'>notebook (code)</a>" in report.read_text()
    assert "p1: continue (EXPLORATORY) (SIMULATED data)" in loop
    # and so does any later run on the demo's database, in --json too
    again = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent_reflection",
            "run",
            "p3",
            "--json",
            "--db",
            str(tmp_path / "demo" / "demo.duckdb"),
            "--out",
            str(tmp_path / "again"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert again.returncode == 0, again.stderr[-3000:]
    as_json = json.loads(again.stdout)
    assert as_json["simulated"] is True and as_json["experiments"]["p3"]["simulated"] is True
    assert as_json["gate"]["headline"].startswith("Phase-0 gate (SIMULATED data): ")
    assert "session->commit links equal the truth" in loop and "outcomes equal the truth" in loop
    realised = float(loop.split("labelled sessions ", 1)[1].split()[0])
    # 29 labelled sessions whose interval (0.61-0.96) already excludes chance: a decision, not
    # insufficient-data (P1 decides by its interval's precision, not a per-class row count)
    assert "p1: continue (EXPLORATORY)" in loop
    loop_report = Path(loop.split("loop report: ", 1)[1].splitlines()[0])
    assert loop_report.parent.name == f"{report.parent.name}-p1-loop"
    doc = json.loads((loop_report.parent / "p1" / "results.json").read_text())
    assert doc["exploratory"] and doc["parameters"]["label_source"] == "loop"
    assert doc["metric"]["value"] == pytest.approx(realised, abs=5e-4)
    assert doc["metric"]["ci_low"] <= 0.80 <= doc["metric"]["ci_high"]


def test_background_returns_the_value_or_raises_in_the_caller() -> None:
    """Step 3's sessions run in a daemon thread while step 2 runs; a failure there must not be
    lost (``reflect demo`` exits non-zero with its message)."""
    from agent_reflection.cli.demo import in_background

    done = in_background(sorted, [3, 1, 2])
    assert done.result() == [1, 2, 3]
    failed = in_background(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        failed.result()
