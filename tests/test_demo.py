"""``reflect demo`` and the session simulation behind it (real git, the real hook subprocess)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from agent_reflection.cli import _register_commands
from agent_reflection.cli._groups import cli
from agent_reflection.sidecar import schema_document
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
    jsonschema.validate(json.loads(session.sidecar_path.read_text()), schema_document())
    # committed on the feature branch + uncommitted edits; not the self-report file
    assert record.files_changed == (
        "README.md", "src/shop/auth/session.py", "tests/test_session_expiry.py",
    )  # fmt: skip
    assert (record.risk.surface, record.risk.needs_review) == ("auth", True)
    assert record.task_ref == f"shop-api@{FEATURE_BRANCH}"
    assert record.agent == "demo-agent"
    assert record.confidence == DEFAULT_SELF_REPORT["confidence"]
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
    _register_commands()
    result = CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)
    return result.exit_code, result.output


def test_cli_demo_shows_the_risk_floor_and_cleans_up(tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    tempfile.tempdir = None
    try:
        code, output = invoke("demo", env={"TMPDIR": str(scratch)})
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
    jsonschema.validate(record, schema_document())
    kept = list((tmp_path / "kept" / "shop-api" / ".reflection" / "sidecars").iterdir())
    assert len(kept) == 1 and json.loads(kept[0].read_text()) == record


def test_cli_demo_no_self_report(tmp_path: Path) -> None:
    code, output = invoke("demo", "--no-self-report", "--keep", str(tmp_path))
    assert code == 0
    assert "degraded yes" in output
