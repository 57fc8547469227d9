"""One kernel process of a ``reflect run``: started, made ready for its notebook, killed.

Every notebook gets a kernel of its own
(:class:`~agent_reflection.experiments.kernel_pool.KernelPool`): a notebook can change
module attributes, ``matplotlib.rcParams`` or a random generator's state, and ``%reset -f``
clears none of that, so one notebook's result could depend on the one before. Each kernel runs
one notebook and is killed. To keep the speed, the next notebook's kernel is started while the
current notebooks run, and imports the modules that notebook will import while it waits
(:data:`~agent_reflection.experiments.kernel.EXPERIMENT_MODULES`).

Lanes are threads. A kernel's client belongs to the event loop of the thread that uses it
(``jupyter_core.utils.run_sync``), so it is created by the lane that runs the notebook, not by
the one that started the kernel process.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from agent_reflection.experiments.kernel import ipc_socket_prefix, preload_argument

#: Seconds to wait for the kernel to move to its notebook's folder.
PREPARE_TIMEOUT = 60
#: Seconds to wait for a killed kernel to exit.
EXIT_TIMEOUT = 10
HISTORY_IN_MEMORY = "--HistoryManager.hist_file=:memory:"


class WarmKernel:
    """One kernel process: started, made ready for a notebook, stopped (see the module)."""

    def __init__(self, kernel_name: str, *, start_timeout: int) -> None:
        self.kernel_name = kernel_name
        self.start_timeout = start_timeout
        self.km: Any = None
        self._client: Any = None
        self._ready = False
        #: the modules this kernel imported as it started
        self.preloaded: tuple[str, ...] = ()

    def launch(self, cwd: Path, preload: tuple[str, ...] = ()) -> None:
        """Start the kernel process unless one is running; does not wait for it to be ready
        (the caller can prepare the notebook meanwhile). A new kernel imports ``preload`` before
        it reports ready."""
        from jupyter_core.utils import run_sync

        if self.km is None or not run_sync(self.km.is_alive)():
            self._start(cwd, preload)

    @property
    def pid(self) -> int | None:
        """The kernel's process id while it runs."""
        process = getattr(getattr(self.km, "provisioner", None), "process", None)
        return None if process is None else int(process.pid)

    def prepare(self, cwd: Path) -> None:
        """Launch the kernel if needed, wait until it is ready and move it to ``cwd``."""
        from jupyter_core.utils import run_sync

        self.launch(cwd)
        if self._client is None:
            self._client = self._new_client()
        if not self._ready:
            run_sync(self._client.wait_for_ready)(timeout=self.start_timeout)
            self._ready = True
        code = f"import os as _os\n_os.chdir({str(cwd)!r})\ndel _os\n"
        reply = run_sync(self._client.execute_interactive)(
            code, store_history=False, timeout=PREPARE_TIMEOUT, output_hook=lambda _msg: None
        )
        if reply["content"]["status"] != "ok":
            raise RuntimeError(f"could not prepare the kernel: {reply['content'].get('evalue')}")

    def discard(self) -> None:
        """Stop the kernel (after a failure, or at the end of the run).

        It is killed, not asked to exit: its notebook is done and written, and an orderly exit
        (tearing down pandas, matplotlib, DuckDB) takes 0.5-1 s for nothing. The manager's own
        shutdown would also interrupt it first, and an idle kernel then prints a
        KeyboardInterrupt into the user's terminal.
        """
        from jupyter_core.utils import run_sync

        km, client = self.km, self._client
        self.km = self._client = None
        self._ready = False
        if client is not None:
            client.stop_channels()
        if km is None:
            return
        if km.provisioner is not None:
            with contextlib.suppress(Exception):  # already gone
                run_sync(km.provisioner.kill)()
                # reaped here: the provisioner's own wait polls every 0.1 s
                process = km.provisioner.process
                if process is not None:
                    process.wait(EXIT_TIMEOUT)
                run_sync(km.provisioner.wait)()
        run_sync(km.cleanup_resources)()

    def _start(self, cwd: Path, preload: tuple[str, ...]) -> None:
        from jupyter_client.manager import AsyncKernelManager
        from jupyter_core.utils import run_sync

        self.discard()
        os.environ["MPLBACKEND"] = "Agg"  # inherited by the kernel: headless plotting
        km = AsyncKernelManager(
            kernel_name=self.kernel_name,
            transport="ipc",
            ip=ipc_socket_prefix(),
        )
        # history in memory, as papermill does: parallel kernels share no SQLite file
        arguments = [HISTORY_IN_MEMORY, *([preload_argument(preload)] if preload else [])]
        run_sync(km.start_kernel)(cwd=str(cwd), extra_arguments=arguments)
        self.km, self.preloaded = km, preload

    def _new_client(self) -> Any:
        from jupyter_client.session import Session

        # a session of its own: clients sharing the manager's session id would share a
        # socket identity with papermill's client, and the kernel's replies would go astray
        km = self.km
        session = Session(key=km.session.key, signature_scheme=km.session.signature_scheme)
        client = km.client(session=session)
        client.start_channels()
        return client
