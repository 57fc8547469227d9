"""A kept kernel runs notebooks in turn as if each had a fresh one (real kernels, papermill)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agent_reflection.db import connect
from agent_reflection.experiments.kernel import ensure_kernel
from agent_reflection.experiments.runner import ExperimentFailed, execute_notebook, run_experiments
from agent_reflection.experiments.warm_kernel import WarmKernel

ROOT = Path(__file__).resolve().parents[1]

PROBE = """# %% tags=["parameters"]
label = "x"

# %%
import json
import os
from pathlib import Path

seen = sorted(k for k in globals() if k.startswith("left_"))
Path("probe.json").write_text(json.dumps(
    {"pid": os.getpid(), "cwd": os.getcwd(), "seen": seen, "label": label}))

# %%
left_{label} = 1
"""


def probe(tmp_path: Path, name: str, body: str = PROBE) -> Path:
    source = tmp_path / f"{name}.py"
    source.write_text(body.replace("{label}", name))
    return source


def run(warm: WarmKernel, source: Path, out: Path) -> dict[str, object]:
    executed = execute_notebook(
        source, out, {"label": source.stem}, kernel=warm.kernel_name, html=False, warm=warm
    )
    counts = [c.get("execution_count") for c in json.loads(executed.read_text())["cells"]
              if c["cell_type"] == "code"]  # fmt: skip
    doc: dict[str, object] = json.loads((out / "probe.json").read_text())
    doc["counts"] = counts
    return doc


@pytest.mark.slow
def test_notebooks_share_the_process_but_not_the_namespace(tmp_path: Path) -> None:
    warm = WarmKernel(ensure_kernel(), start_timeout=120)
    try:
        first = run(warm, probe(tmp_path, "a"), tmp_path / "out-a")
        second = run(warm, probe(tmp_path, "b"), tmp_path / "out-b")
    finally:
        warm.discard()
    assert first["pid"] == second["pid"]  # one kernel, kept warm
    assert second["seen"] == []  # left_a was reset away
    assert first["cwd"] == str(tmp_path / "out-a") and second["cwd"] == str(tmp_path / "out-b")
    # numbered from 1 each time (papermill's injected parameters cell included), like a fresh one
    assert first["counts"] == second["counts"] == [1, 2, 3, 4]


@pytest.mark.slow
def test_a_failed_notebook_gets_the_next_one_a_fresh_kernel(tmp_path: Path) -> None:
    warm = WarmKernel(ensure_kernel(), start_timeout=120)
    broken = PROBE + "\n# %%\nraise RuntimeError('boom')\n"
    dying = PROBE + "\n# %%\nos._exit(3)\n"
    try:
        with pytest.raises(ExperimentFailed, match="RuntimeError: boom"):
            run(warm, probe(tmp_path, "a", broken), tmp_path / "out-a")
        first = json.loads((tmp_path / "out-a" / "probe.json").read_text())
        after_error = run(warm, probe(tmp_path, "b"), tmp_path / "out-b")
        with pytest.raises(ExperimentFailed, match="did not finish"):
            run(warm, probe(tmp_path, "c", dying), tmp_path / "out-c")
        after_death = run(warm, probe(tmp_path, "d"), tmp_path / "out-d")
    finally:
        warm.discard()
    assert after_error["pid"] != first["pid"] and after_error["seen"] == []
    assert after_death["pid"] != after_error["pid"] and after_death["seen"] == []


@pytest.mark.slow
@pytest.mark.parametrize("jobs", [1, 2])
def test_lanes_run_every_experiment_and_the_summary(
    tmp_path: Path, jobs: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One lane runs p1, p2, p3 and the summary in one kernel; two lanes share them out."""
    notebooks = tmp_path / "nb"
    shutil.copytree(ROOT / "notebooks", notebooks)
    for name in ["p1_calibration", "p2_git_history", "p3_detectability", "phase0_summary"]:
        path = notebooks / f"{name}.py"
        # each notebook also records the kernel's process id
        path.write_text(
            path.read_text() + f'\n# %%\nimport os\nopen({str(tmp_path / name)!r} + ".pid", "w")'
            ".write(str(os.getpid()))\n"
        )
    db = tmp_path / "empty.duckdb"
    connect(db).close()
    monkeypatch.setenv("REFLECT_NOTEBOOKS", str(notebooks))
    report = run_experiments(["p1", "p2", "p3"], db_path=db, out_root=tmp_path / "r", jobs=jobs)
    pids = {
        name: (tmp_path / f"{name}.pid").read_text()
        for name in ["p1_calibration", "p2_git_history", "p3_detectability", "phase0_summary"]
    }
    assert len(set(pids.values())) == jobs
    assert set(report.notebooks) == {"p1", "p2", "p3", "summary"}
    for name in ["p1", "p2", "p3", "summary"]:
        assert (report.run_dir / name / "report.html").stat().st_size > 0
    assert report.index_html.is_file()
