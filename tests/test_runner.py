"""The papermill runner: parameters, kernel, a failing cell, the CLI, and the demo."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_reflection.execute.kernel import ensure_kernel
from agent_reflection.experiments.registration import InvalidPreregistration
from agent_reflection.experiments.results import read_results
from agent_reflection.experiments.runner import (
    ExperimentFailed,
    parse_value,
    run_experiments,
    split_parameters,
)
from agent_reflection.simulate.phase0 import run_demo
from agent_reflection.store.db import connect

ROOT = Path(__file__).resolve().parents[1]


def test_split_parameters() -> None:
    overrides, direct = split_parameters(
        ["p1", "p2"],
        {"p1.seed": 3, "corpus": "x", "window_days": 14, "p3": {"window_days": 60}},
    )
    assert overrides == {"p1.seed": 3, "p2.window_days": 14, "p3.window_days": 60}
    assert direct == {"p1": {"corpus": "x"}, "p2": {}}
    with pytest.raises(InvalidPreregistration, match="several experiments"):
        split_parameters(["p2", "p3"], {"window_days": 1})
    with pytest.raises(InvalidPreregistration, match="no selected experiment"):
        split_parameters(["p1"], {"nonsense": 1})


def test_parse_value() -> None:
    assert parse_value("0.7") == 0.7 and parse_value("true") is True
    assert parse_value("[0, 0.5, 1]") == [0, 0.5, 1] and parse_value("loop") == "loop"


def test_ensure_kernel_runs_this_interpreter() -> None:
    from jupyter_client.kernelspec import KernelSpecManager

    name = ensure_kernel()
    spec = KernelSpecManager().get_kernel_spec(name)
    assert Path(spec.argv[0]) == Path(sys.executable)
    assert ensure_kernel() == name


def test_bad_override_fails_before_any_kernel_starts(tmp_path: Path) -> None:
    db = tmp_path / "x.duckdb"
    connect(db).close()
    with pytest.raises(InvalidPreregistration, match="must be in"):
        run_experiments(
            ["p1"], db_path=db, out_root=tmp_path / "r", params={"p1.high_confidence_threshold": 2}
        )
    assert not (tmp_path / "r").exists()
    with pytest.raises(ExperimentFailed, match="no such database"):
        run_experiments(["p1"], db_path=tmp_path / "none.duckdb", out_root=tmp_path / "r")


@pytest.mark.slow
def test_failed_cell_names_notebook_cell_and_error(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    broken = tmp_path / "nb"
    shutil.copytree(ROOT / "notebooks", broken)
    source = (broken / "p1_calibration.py").read_text()
    marker = "con = nb.open_db(db_path)"
    (broken / "p1_calibration.py").write_text(
        source.replace(marker, f"{marker}\nraise RuntimeError('boom in the compute cell')")
    )
    monkeypatch.setenv("REFLECT_NOTEBOOKS", str(broken))
    db = tmp_path / "x.duckdb"
    connect(db).close()
    with pytest.raises(ExperimentFailed) as exc:
        run_experiments(["p1"], db_path=db, out_root=tmp_path / "r", run_id="bad")
    message = str(exc.value)
    assert "RuntimeError: boom in the compute cell" in message
    output = tmp_path / "r" / "bad" / "p1" / "p1_calibration.ipynb"
    assert str(output) in message
    cells = json.loads(output.read_text())["cells"]
    failing = next(i for i, c in enumerate(cells) if "boom" in "".join(c["source"]))
    assert f"p1_calibration.py failed in cell {failing} " in message
    run_dir = tmp_path / "r" / "bad"
    assert (run_dir / "FAILED.txt").read_text().startswith("p1_calibration.py failed")
    assert not (run_dir / "index.html").exists() and not (run_dir / "summary.md").exists()


@pytest.mark.slow
def test_cli_run_p3_exploratory_and_failure_exit(tmp_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    from sim_rows import insert_event, insert_task

    db = tmp_path / "board.duckdb"
    con = connect(db)
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    for i in range(10):
        insert_task(con, f"T-{i}", created_at=t0, completed_at=t0)
    insert_event(con, "T-0", t0 + timedelta(days=45), "reopened")
    con.close()
    reflect = [sys.executable, "-m", "agent_reflection"]
    env = {**os.environ, "CI": "1"}
    out = subprocess.run(
        [
            *reflect,
            "run",
            "p3",
            "--db",
            str(db),
            "--out",
            str(tmp_path / "r"),
            "--run-id",
            "wide",
            "-p",
            "window_days",
            "60",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    # 1/10, but no commit is linked to any task: P3's commits channel is missing
    assert "p3: insufficient-data (EXPLORATORY) — rule: kill (caveat notes only)" in out.stdout
    # P1 and P2 were not run: the gate was not asked, rather than undecided
    assert "Phase-0 gate: not decided (needs p1, p2 and p3 in one run: reflect run all)" in (
        out.stdout
    )
    assert f"report: {tmp_path / 'r' / 'wide' / 'index.html'}" in out.stdout
    doc = read_results(tmp_path / "r" / "wide" / "p3" / "results.json")
    assert doc["exploratory"] and doc["metric"]["value"] == pytest.approx(0.1)
    assert "EXPLORATORY" in (tmp_path / "r" / "wide" / "p3" / "report.html").read_text()
    bad = subprocess.run(
        [*reflect, "run", "p1", "--db", str(tmp_path / "missing.duckdb")],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert bad.returncode == 1 and "no such database" in bad.stderr


@pytest.mark.slow
def test_demo_runs_every_notebook_and_recovers_the_truth(tmp_path: Path) -> None:
    result = run_demo(tmp_path / "demo", seed=7)
    truth, report = result.data.truth, result.report
    p1, p2, p3 = (report.results[k] for k in ("p1", "p2", "p3"))
    assert p1["metric"]["ci_low"] <= truth.auc <= p1["metric"]["ci_high"]
    assert p2["details"]["pooled"] == truth.p2_buckets
    # P2 is gate-corrected by the simulator's own truth (every signal a failure of its bucket's
    # gate), not by a matrix transported from flask and sqlite-utils
    assert p2["details"]["gate_correction"]["labels"] == "own"
    only = truth.p2_buckets["only-self-reflection"] / sum(truth.p2_buckets.values())
    assert p2["metric"]["value"] == pytest.approx(only)
    assert p3["details"]["detectable"] == truth.p3_detectable
    assert p3["details"]["eligible"] == truth.p3_eligible
    assert p3["details"]["censored"] == truth.p3_censored
    assert [p1["verdict"], p2["verdict"], p3["verdict"]] == ["continue"] * 3
    assert not any(d["exploratory"] for d in report.results.values())
    assert report.gate.decision == "allowed"
    run_dir = report.run_dir
    for name, figures in (
        ("p1", ["p1_roc.png", "p1_roc_strata.png", "p1_reliability.png"]),
        ("p2", ["p2_buckets.png", "p2_gate_correction.png"]),
        ("p3", ["p3_time_to_signal.png", "p3_by_kind.png"]),
    ):
        assert (run_dir / name / "report.html").stat().st_size > 10_000
        [executed] = (run_dir / name).glob("*.ipynb")
        outputs = [
            o for c in json.loads(executed.read_text())["cells"] for o in c.get("outputs", [])
        ]
        images = [o for o in outputs if "image/png" in o.get("data", {})]
        assert len(images) == len(figures)  # the figures show in the notebook itself
        for f in figures:
            assert (run_dir / name / f).stat().st_size > 1000
    gate = json.loads((run_dir / "summary" / "gate.json").read_text())
    assert gate["decision"] == "allowed"
    summary = report.summary_md.read_text()
    assert "closed loop ALLOWED" in summary and "continue" in summary
    assert "p1/p1_roc.png" in report.index_html.read_text()


def test_reflect_skips_jsonschemas_iri_grammar() -> None:
    """The CLI keeps jsonschema from building rfc3987-syntax's Earley parser (2.3 s of CPU at
    import, for string formats nothing here checks); validation itself is unchanged."""
    code = (
        "import sys\n"
        "from agent_reflection.cli import _skip_iri_grammar\n"
        "_skip_iri_grammar()\n"
        "import jsonschema, nbformat\n"
        "jsonschema.validate({'a': 1}, {'properties': {'a': {'type': 'integer'}}})\n"
        "try:\n"
        "    jsonschema.validate({'a': 'x'}, {'properties': {'a': {'type': 'integer'}}})\n"
        "except jsonschema.ValidationError:\n"
        "    print('rejects')\n"
        "print(sys.modules.get('rfc3987_syntax', 'absent'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["rejects", "None"]


@pytest.mark.slow
def test_sigterm_during_a_run_leaves_no_kernel_sockets(tmp_path: Path) -> None:
    """A `reflect run` stopped by SIGTERM removes its kernels' IPC socket files (they used to
    stay in the temp folder) and still ends by the signal; no kernel outlives it."""
    from agent_reflection.simulate.phase0 import build_demo

    build_demo(tmp_path / "demo", seed=7)
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "CI": "1", "TMPDIR": str(temp)}
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agent_reflection",
            "run",
            "all",
            "--db",
            str(tmp_path / "demo" / "demo.duckdb"),
            "--out",
            str(tmp_path / "r"),
        ],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while not list(temp.glob("reflect-kernel-*")) and time.monotonic() < deadline:
            assert run.poll() is None, "the run ended before any kernel started"
            time.sleep(0.05)
        assert list(temp.glob("reflect-kernel-*")), "no kernel socket appeared"
        time.sleep(0.05)  # kernels starting (the pool starts the next while one runs)
        run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=30) == -signal.SIGTERM
    finally:
        run.kill()
        run.wait()
    # kernels notice their parent is gone (a second or two; generous for a loaded machine)
    deadline = time.monotonic() + 60
    while _kernels_of(temp) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _kernels_of(temp)
    assert not list(temp.glob("reflect-kernel-*"))


def _kernels_of(temp: Path) -> list[str]:
    """Live kernel processes started with ``TMPDIR=temp`` (their environment says so)."""
    found = []
    marker = f"TMPDIR={temp}".encode()
    for proc in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            cmdline = (proc / "cmdline").read_bytes()
            if b"ipykernel" in cmdline and marker in (proc / "environ").read_bytes().split(b"\0"):
                found.append(cmdline.replace(b"\0", b" ").decode(errors="replace"))
    return found


def test_the_packaged_results_schema_is_a_valid_schema() -> None:
    """The runner's validator does not check the schema on every use; this checks it once."""
    import jsonschema

    from agent_reflection.experiments.results import results_schema, validate_results

    schema = results_schema()
    jsonschema.validators.validator_for(schema).check_schema(schema)
    with pytest.raises(jsonschema.ValidationError):
        validate_results({"schema": "results.v1"})
