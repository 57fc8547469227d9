"""The papermill engine of ``reflect run``: papermill's own, saving the output notebook less often.

papermill writes the whole output notebook (JSON with its figures, validated by nbformat) as
the notebook starts, before and after every cell, and as it completes: 42 writes for P1, about
0.6 s of CPU in the ``reflect`` process, taken from the kernels running beside it on two CPUs.
This engine writes as the notebook starts and as it completes, and between those at most every
:data:`SAVE_EVERY` seconds (papermill's own autosave interval), so a long cell still shows its
progress on disk. papermill completes a notebook in a ``finally``, so a kernel that died or
timed out still leaves the cells run so far; a failed cell is written by papermill as before.
The executed notebook is the same: cells, outputs and metadata.
"""

from __future__ import annotations

from typing import Any

from papermill.engines import NBClientEngine, NotebookExecutionManager, papermill_engines

#: The name ``papermill.execute_notebook(engine_name=...)`` takes.
ENGINE_NAME = "reflect-nbclient"
#: Seconds between two writes of the output notebook while its cells run.
SAVE_EVERY = 30.0


class _FewerSaves(NotebookExecutionManager):  # type: ignore[misc]
    """papermill's execution manager; it writes on start, on completion and every
    :data:`SAVE_EVERY` seconds, not around every cell."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._always_save = False

    def save(self, **kwargs: Any) -> None:
        since = (self.now() - self.last_save_time).total_seconds()
        if self._always_save or since >= SAVE_EVERY:
            super().save(**kwargs)

    def notebook_start(self, **kwargs: Any) -> None:
        self._always_save = True
        try:
            super().notebook_start(**kwargs)
        finally:
            self._always_save = False

    def notebook_complete(self, **kwargs: Any) -> None:
        self._always_save = True
        try:
            super().notebook_complete(**kwargs)
        finally:
            self._always_save = False


class FewerSavesEngine(NBClientEngine):  # type: ignore[misc]
    """papermill's nbclient engine with :class:`_FewerSaves` (its ``execute_notebook`` as in
    papermill 2.x, where the manager class is not a parameter)."""

    @classmethod
    def execute_notebook(
        cls,
        nb: Any,
        kernel_name: str,
        output_path: str | None = None,
        progress_bar: bool = True,
        log_output: bool = False,
        autosave_cell_every: int = 30,
        **kwargs: Any,
    ) -> Any:
        nb_man = _FewerSaves(
            nb,
            output_path=output_path,
            progress_bar=progress_bar,
            log_output=log_output,
            autosave_cell_every=autosave_cell_every,
        )
        nb_man.notebook_start()
        try:
            cls.execute_managed_notebook(nb_man, kernel_name, log_output=log_output, **kwargs)
        finally:
            nb_man.cleanup_pbar()
            nb_man.notebook_complete()
        return nb_man.nb


papermill_engines.register(ENGINE_NAME, FewerSavesEngine)
