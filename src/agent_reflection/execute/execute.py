"""Execute one jupytext notebook with papermill, in a kernel of its own, and render its HTML.

The ``.py`` source becomes an ``.ipynb`` naming the kernel; papermill's ``execute_notebook``
runs it (start and cell timeouts, ``MPLBACKEND=Agg``, a progress bar only on a TTY) in a
:class:`~.pool.Kernel` that runs this notebook only; nbconvert renders ``report.html``. A cell
that raises, or a kernel that dies or times out, is a :class:`NotebookFailed` naming the
notebook, the cell and the error, and the executed notebook keeps the cells run so far.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agent_reflection.errors import ReflectionError
from agent_reflection.execute.pool import Kernel
from agent_reflection.progress import progress_enabled

DEFAULT_START_TIMEOUT = 120
DEFAULT_EXECUTION_TIMEOUT = 1800


class NotebookFailed(ReflectionError, RuntimeError):
    """A notebook cell raised, or its kernel died, timed out or did not start."""


def execute_notebook(
    source: Path,
    out_dir: Path,
    parameters: Mapping[str, Any],
    *,
    kernel: str,
    start_timeout: int = DEFAULT_START_TIMEOUT,
    execution_timeout: int = DEFAULT_EXECUTION_TIMEOUT,
    html: bool = True,
    pooled: Kernel | None = None,
    on_ready: Callable[[], None] | None = None,
) -> Path:
    """Run the jupytext notebook ``source`` into ``out_dir``; returns the executed .ipynb.
    Raises :class:`NotebookFailed`.

    ``kernel`` names the kernel spec. The notebook runs in ``pooled`` (a pool's kernel, perhaps
    launched ahead), else in a new one; that kernel is killed when the notebook ends.
    ``on_ready`` is called once the kernel is ready, as the notebook starts.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    process = pooled or Kernel(kernel, start_timeout=start_timeout)
    input_nb = out_dir / f"{source.stem}.input.ipynb"
    output_nb = out_dir / f"{source.stem}.ipynb"
    try:
        # boots while papermill is imported and the notebook converted; a failure here is not
        # lost: prepare() launches again and reports it below
        try:
            process.launch(out_dir)
        except Exception:
            process.discard()
        import papermill
        from papermill.exceptions import PapermillExecutionError

        to_ipynb(source, input_nb, process.kernel_name)
        try:
            process.prepare(out_dir)
        except Exception as exc:
            raise NotebookFailed(
                f"{source.name}: the kernel {process.kernel_name!r} did not start: "
                f"{type(exc).__name__}: {exc}"
            ) from None
        if on_ready is not None:
            on_ready()
        try:
            papermill.execute_notebook(
                str(input_nb),
                str(output_nb),
                parameters=dict(parameters),
                kernel_name=process.kernel_name,
                km=process.km,
                start_timeout=start_timeout,
                execution_timeout=execution_timeout,
                progress_bar=progress_enabled(),
                log_output=False,
            )
        except PapermillExecutionError as exc:
            index, _ = _failed_cell(output_nb)
            raise NotebookFailed(
                f"{source.name} failed in cell {index if index is not None else '?'} "
                f"(execution count {exc.exec_count}): {exc.ename}: {exc.evalue}\n"
                f"  executed notebook: {output_nb}"
            ) from None
        except Exception as exc:  # the kernel died or timed out
            index, error = _failed_cell(output_nb)
            where = f" in cell {index}" if index is not None else ""
            raise NotebookFailed(
                f"{source.name} did not finish{where}: {type(exc).__name__}: {exc}"
                f"{' — ' + error if error else ''}\n  executed notebook: {output_nb}"
            ) from None
    finally:
        input_nb.unlink(missing_ok=True)
        process.discard()  # each kernel runs one notebook
    if html:
        write_report_html(output_nb, out_dir / "report.html")
    return output_nb


#: The last paragraph of every report page: where the code went.
CODE_NOTE = (
    "*This page shows the results without the code that made them. The executed notebook, "
    "code and all, is [`{name}`]({name}) beside it: open it in JupyterLab, or "
    "`jupyter nbconvert --to html {name}` for a page with the code.*"
)


def write_report_html(notebook: Path, target: Path) -> Path:
    """The reader's page of an executed notebook: its markdown and outputs without the code
    cells' input or prompts (nbconvert's no-input export), ending with a note naming the
    notebook beside it, which keeps the code."""
    import nbformat

    nb = nbformat.read(notebook, as_version=4)  # type: ignore[no-untyped-call]
    note = CODE_NOTE.format(name=notebook.name)
    nb.cells.append(nbformat.v4.new_markdown_cell(note))  # type: ignore[no-untyped-call]
    with _html_lock:  # lanes take turns with the one exporter
        body, _ = _html_exporter().from_notebook_node(nb)
    target.write_text(body, "utf-8")
    return target


def to_ipynb(source: Path, target: Path, kernel_name: str) -> None:
    """The jupytext notebook ``source`` as an ``.ipynb`` that names the kernel to run it."""
    import jupytext
    import nbformat

    nb = jupytext.read(source)
    nb.metadata["kernelspec"] = {
        "name": kernel_name,
        "display_name": kernel_name,
        "language": "python",
    }
    nb.metadata.setdefault("jupytext", {})["source_file"] = str(source)
    nbformat.write(nb, target)  # type: ignore[no-untyped-call]


def _failed_cell(output: Path) -> tuple[int | None, str]:
    """(index of the first cell with an error output, its error) from an executed notebook."""
    import nbformat

    try:
        nb = nbformat.read(output, as_version=4)  # type: ignore[no-untyped-call]
    except (OSError, ValueError):
        return None, ""
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                return i, f"{out.get('ename')}: {out.get('evalue')}"
    return None, ""


_html_lock = threading.Lock()


@functools.cache
def _html_exporter() -> Any:
    """One exporter per process: compiling its Jinja templates costs more than a render. The
    page is for the reader: code cells' input and every prompt are left out."""
    from nbconvert import HTMLExporter

    return HTMLExporter(  # type: ignore[no-untyped-call]
        exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True
    )
