"""The runner executes a notebook as papermill does (the same executed notebook, written as
papermill writes it); a kernel that dies still leaves the cells run so far. Real kernels, real
papermill."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import papermill
import papermill.engines
import pytest

from agent_reflection.execute.execute import NotebookFailed, execute_notebook, to_ipynb
from agent_reflection.execute.kernel import ensure_kernel

NOTEBOOK = """# %% tags=["parameters"]
label = "x"

# %%
print("first", label)

# %%
import json
print(json.dumps({"second": [1, 2, 3]}))

# %%
{"third": label}
"""


def _writes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths papermill's execution manager writes (papermill's writer still writes)."""
    written: list[str] = []
    write = papermill.engines.write_ipynb

    def counting(nb: Any, path: str, *args: Any, **kwargs: Any) -> Any:
        written.append(str(path))
        return write(nb, path, *args, **kwargs)

    monkeypatch.setattr(papermill.engines, "write_ipynb", counting)
    return written


def _comparable(notebook: Path) -> Any:
    """The executed notebook without what differs between any two runs (times, cell ids)."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            skip = {"start_time", "end_time", "duration", "execution", "id", "input_path"}
            return {k: strip(v) for k, v in value.items() if k not in skip}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    doc = strip(json.loads(notebook.read_text()))
    doc["metadata"]["papermill"].pop("output_path")
    return doc


@pytest.mark.slow
def test_the_same_notebook_as_papermill(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = ensure_kernel()
    source = tmp_path / "probe.py"
    source.write_text(NOTEBOOK)
    written = _writes(monkeypatch)
    ours = execute_notebook(source, tmp_path / "ours", {"label": "y"}, kernel=kernel, html=False)
    ours_writes = len(written)
    written.clear()
    to_ipynb(source, tmp_path / "input.ipynb", kernel)
    papermills = tmp_path / "papermill.ipynb"
    papermill.execute_notebook(
        str(tmp_path / "input.ipynb"),
        str(papermills),
        parameters={"label": "y"},
        kernel_name=kernel,
        progress_bar=False,
        cwd=str(tmp_path),
    )
    # papermill's engine: start, before and after each of 5 cells, completion; ours is it
    assert len(written) == 12
    assert ours_writes == len(written)
    assert _comparable(ours) == _comparable(papermills)
    cells = json.loads(ours.read_text())["cells"]
    printed = ["".join(o.get("text", "")) for c in cells for o in c.get("outputs", [])]
    assert printed == ["first y\n", '{"second": [1, 2, 3]}\n', ""]  # the last: a display value


@pytest.mark.slow
def test_a_kernel_that_dies_leaves_the_cells_run_so_far(tmp_path: Path) -> None:
    source = tmp_path / "dying.py"
    source.write_text(NOTEBOOK + '\n# %%\nimport os\nos._exit(3)\n\n# %%\nprint("never")\n')
    with pytest.raises(NotebookFailed, match="did not finish"):
        execute_notebook(source, tmp_path / "out", {}, kernel=ensure_kernel(), html=False)
    cells = json.loads((tmp_path / "out" / "dying.ipynb").read_text())["cells"]
    printed = ["".join(o.get("text", "")) for c in cells for o in c.get("outputs", [])]
    assert "first x\n" in printed and '{"second": [1, 2, 3]}\n' in printed
    assert "never\n" not in printed
