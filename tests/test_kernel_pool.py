"""Kernels of a run (real kernels, papermill): a fresh one per notebook, started ahead by the
pool, each notebook in an empty namespace."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from agent_reflection.execute.execute import NotebookFailed, execute_notebook
from agent_reflection.execute.kernel import ensure_kernel
from agent_reflection.execute.pool import Kernel, KernelPool
from agent_reflection.experiments.runner import EXPERIMENT_MODULES, run_experiments
from agent_reflection.store.db import connect

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


def run(kernel: Kernel, source: Path, out: Path) -> dict[str, object]:
    executed = execute_notebook(
        source, out, {"label": source.stem}, kernel=kernel.kernel_name, html=False, pooled=kernel
    )
    counts = [
        c.get("execution_count")
        for c in json.loads(executed.read_text())["cells"]
        if c["cell_type"] == "code"
    ]
    doc: dict[str, object] = json.loads((out / "probe.json").read_text())
    doc["counts"] = counts
    return doc


@pytest.mark.slow
def test_each_notebook_runs_in_a_kernel_of_its_own(tmp_path: Path) -> None:
    """Two notebooks taken from one pool: two kernel processes, each notebook in its output
    folder, numbered from 1, seeing nothing of the other."""
    with KernelPool(ensure_kernel(), start_timeout=120, cwd=tmp_path) as pool:
        first_kernel, second_kernel = pool.take(), pool.take()
        first = run(first_kernel, probe(tmp_path, "a"), tmp_path / "out-a")
        assert first_kernel.km is None  # killed when its notebook ended
        second = run(second_kernel, probe(tmp_path, "b"), tmp_path / "out-b")
    assert first["pid"] != second["pid"]
    assert second["seen"] == []
    assert first["cwd"] == str(tmp_path / "out-a") and second["cwd"] == str(tmp_path / "out-b")
    # numbered from 1 (papermill's injected parameters cell included), as in a new kernel
    assert first["counts"] == second["counts"] == [1, 2, 3, 4]


@pytest.mark.slow
def test_a_failed_notebook_takes_its_kernel_with_it(tmp_path: Path) -> None:
    """A notebook that raises, or whose kernel dies, fails the run step and its kernel is
    discarded at once; the next notebook runs in another kernel and starts clean."""
    broken = PROBE + "\n# %%\nraise RuntimeError('boom')\n"
    dying = PROBE + "\n# %%\nos._exit(3)\n"
    with KernelPool(ensure_kernel(), start_timeout=120, cwd=tmp_path) as pool:
        kernels = [pool.take() for _ in range(4)]
        with pytest.raises(NotebookFailed, match="RuntimeError: boom"):
            run(kernels[0], probe(tmp_path, "a", broken), tmp_path / "out-a")
        assert kernels[0].km is None  # discarded with its failure
        first = json.loads((tmp_path / "out-a" / "probe.json").read_text())
        after_error = run(kernels[1], probe(tmp_path, "b"), tmp_path / "out-b")
        with pytest.raises(NotebookFailed, match="did not finish"):
            run(kernels[2], probe(tmp_path, "c", dying), tmp_path / "out-c")
        assert kernels[2].km is None
        after_death = run(kernels[3], probe(tmp_path, "d"), tmp_path / "out-d")
    assert after_error["pid"] != first["pid"] and after_error["seen"] == []
    assert after_death["pid"] != after_error["pid"] and after_death["seen"] == []


def kernel_children() -> set[int]:
    """Process ids of this process's children that run an IPython kernel."""
    ours = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:  # exited meanwhile
            continue
        if int(fields[1]) == os.getpid() and b"ipykernel" in cmdline and fields[0] != "Z":
            ours.append(int(stat.parent.name))
    return set(ours)


STATE_PROBE = """
# %%
import json as _json
import os as _os

import matplotlib as _mpl

with open({pid_file!r}, "w") as _f:
    _json.dump({{"pid": _os.getpid(), "inherited": getattr(_json, "set_by", None),
                 "linewidth": _mpl.rcParams["lines.linewidth"]}}, _f)
_json.set_by = {name!r}  # module state: %reset -f does not clear it
_mpl.rcParams["lines.linewidth"] = 7.5
"""
NOTEBOOKS = ["p1_calibration", "p2_git_history", "p3_detectability", "phase0_summary"]


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="lists kernel processes from /proc")
@pytest.mark.parametrize(("jobs", "summary"), [(1, True), (2, True), (1, False), (2, False)])
def test_lanes_run_every_experiment_and_the_summary(
    tmp_path: Path, jobs: int, summary: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run gives each notebook a kernel of its own, and none inherits another's module state
    or rcParams; every kernel, a spare started ahead included, is gone when the run returns.
    Without the summary notebook, its kernel is never started and the report is still written."""
    notebooks = tmp_path / "nb"
    shutil.copytree(ROOT / "notebooks", notebooks)
    for name in NOTEBOOKS:
        path = notebooks / f"{name}.py"
        probe_cell = STATE_PROBE.format(pid_file=str(tmp_path / f"{name}.json"), name=name)
        path.write_text(path.read_text() + probe_cell)
    db = tmp_path / "empty.duckdb"
    connect(db).close()
    monkeypatch.setenv("REFLECT_NOTEBOOKS", str(notebooks))
    before = kernel_children()
    report = run_experiments(
        ["p1", "p2", "p3"],
        db_path=db,
        out_root=tmp_path / "r",
        jobs=jobs,
        summary_notebook=summary,
    )
    assert kernel_children() == before  # every kernel killed, spares included
    ran = NOTEBOOKS if summary else NOTEBOOKS[:-1]
    seen = {n: json.loads((tmp_path / f"{n}.json").read_text()) for n in ran}
    expected = ["p1", "p2", "p3", "summary"] if summary else ["p1", "p2", "p3"]
    assert set(report.notebooks) == set(expected)
    assert (report.run_dir / "summary").exists() == summary
    for name in expected:
        assert (report.run_dir / name / "report.html").stat().st_size > 0
    assert report.index_html.is_file() and report.summary_md.is_file()
    assert len({doc["pid"] for doc in seen.values()}) == len(ran)
    assert {n: doc["inherited"] for n, doc in seen.items() if doc["inherited"]} == {}
    assert {doc["linewidth"] for doc in seen.values()} == {1.5}  # matplotlib's default


@pytest.mark.slow
def test_a_kernel_started_ahead_has_its_modules_loaded_and_nothing_else(tmp_path: Path) -> None:
    """A kernel started ahead (by another thread, as another lane does) imports the experiment
    modules while it waits; its namespace, working directory and execution counts are those of
    a kernel papermill starts for the notebook."""
    body = PROBE.replace(
        '"label": label}',
        '"label": label, "names": sorted(globals()), '
        '"preloaded": "agent_reflection.experiments.plots" in __import__("sys").modules}',
    )
    with KernelPool(
        ensure_kernel(), start_timeout=120, cwd=tmp_path, preloads=[EXPERIMENT_MODULES]
    ) as pool:
        starter = threading.Thread(target=pool.start_ahead, args=(1,))
        starter.start()
        starter.join()
        pool.start_ahead(1)  # already launched: no second one
        spare = pool.take()
        pid = spare.pid
        assert pid is not None and spare.preload == EXPERIMENT_MODULES
        assert pool.take().km is None  # past the list: a new one, not launched
        ahead = run(spare, probe(tmp_path, "a", body), tmp_path / "out-a")
        assert spare.km is None  # killed when its notebook ended
    executed = execute_notebook(
        probe(tmp_path, "b", body),
        tmp_path / "out-b",
        {"label": "b"},
        kernel=ensure_kernel(),
        html=False,
    )
    cold = json.loads((tmp_path / "out-b" / "probe.json").read_text())
    cold["counts"] = [
        c.get("execution_count")
        for c in json.loads(executed.read_text())["cells"]
        if c["cell_type"] == "code"
    ]
    assert ahead["pid"] == pid and ahead["preloaded"] and not cold["preloaded"]
    assert ahead["names"] == cold["names"]
    assert ahead["counts"] == cold["counts"] == [1, 2, 3, 4]
    assert ahead["cwd"] == str(tmp_path / "out-a")
