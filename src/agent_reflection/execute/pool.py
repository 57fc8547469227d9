"""A run's kernels: each started ahead of its notebook, runs that one notebook, and is killed.

A notebook can change module attributes, ``matplotlib.rcParams`` or a random generator's
state, and ``%reset -f`` clears none of that, so every notebook gets a kernel of its own: one
notebook's result never depends on the one before. To keep the speed, a :class:`KernelPool`
starts the kernels of the notebooks to come while the current ones run, and each imports the
modules its notebook will import while it waits (:func:`~.kernel.preload_argument`). Measured
on ``reflect run all``: 8.15 s without the pool, 4.41 s with it.

Lanes are threads. A kernel's client belongs to the event loop of the thread that uses it
(``jupyter_core.utils.run_sync``), so it is created by the lane that runs the notebook, not by
the one that started the kernel process.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_reflection.execute.kernel import ipc_socket_prefix, preload_argument

#: Seconds to wait for the kernel to move to its notebook's folder.
PREPARE_TIMEOUT = 60
#: Seconds to wait for a killed kernel to exit.
EXIT_TIMEOUT = 10
HISTORY_IN_MEMORY = "--HistoryManager.hist_file=:memory:"
#: The client every kernel manager of a run hands out, papermill's included (it returns once
#: the kernel is ready, without jupyter_client's 0.2 s of IOPub silence: :mod:`.client`).
READY_CLIENT = "agent_reflection.execute.client.ReadyKernelClient"


class Kernel:
    """One kernel process: launched (it imports ``preload`` as it starts), made ready for its
    notebook, killed (see the module docstring)."""

    def __init__(
        self, kernel_name: str, *, start_timeout: int, preload: tuple[str, ...] = ()
    ) -> None:
        self.kernel_name = kernel_name
        self.start_timeout = start_timeout
        #: the modules this kernel imports as it starts
        self.preload = preload
        self.km: Any = None
        self._client: Any = None
        self._ready = False

    def launch(self, cwd: Path) -> None:
        """Start the kernel process in ``cwd`` unless one is running; does not wait for it to
        be ready (the caller can prepare the notebook meanwhile)."""
        from jupyter_core.utils import run_sync

        if self.km is None or not run_sync(self.km.is_alive)():
            self._start(cwd)

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
        """Stop the kernel (its notebook is done, or failed).

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

    def _start(self, cwd: Path) -> None:
        from jupyter_client.manager import AsyncKernelManager
        from jupyter_core.utils import run_sync

        self.discard()
        os.environ["MPLBACKEND"] = "Agg"  # inherited by the kernel: headless plotting
        km = AsyncKernelManager(
            kernel_name=self.kernel_name,
            transport="ipc",
            ip=ipc_socket_prefix(),
            client_class=READY_CLIENT,
        )
        # history in memory, as papermill does: parallel kernels share no SQLite file
        arguments = [HISTORY_IN_MEMORY, *([preload_argument(self.preload)] if self.preload else [])]
        run_sync(km.start_kernel)(cwd=str(cwd), extra_arguments=arguments)
        self.km = km

    def _new_client(self) -> Any:
        from jupyter_client.session import Session

        # a session of its own: clients sharing the manager's session id would share a
        # socket identity with papermill's client, and the kernel's replies would go astray
        km = self.km
        session = Session(key=km.session.key, signature_scheme=km.session.signature_scheme)
        client = km.client(session=session)
        client.start_channels()
        return client


class KernelPool:
    """The kernels of one run, in the order its notebooks take them.

    ``preloads`` lists, for each notebook to come, the modules its kernel imports as it starts.
    :meth:`start_ahead` launches the next kernels before their notebooks ask for them;
    :meth:`take` hands out the next one (launched or not: the notebook launches it); a
    notebook beyond the list gets a new kernel. :meth:`close` kills the kernels never taken.
    Lanes share the pool.
    """

    def __init__(
        self,
        kernel_name: str,
        *,
        start_timeout: int,
        cwd: Path,
        preloads: Sequence[tuple[str, ...]] = (),
    ) -> None:
        self.kernel_name = kernel_name
        self.start_timeout = start_timeout
        self.cwd = cwd
        self._waiting = deque(
            Kernel(kernel_name, start_timeout=start_timeout, preload=p) for p in preloads
        )
        self._lock = threading.Lock()

    def __enter__(self) -> KernelPool:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def start_ahead(self, spares: int) -> None:
        """Launch the kernels to come, in the order they will be taken, until ``spares`` of
        them are launched (or none is left). A kernel that fails to launch is left for its
        notebook, which launches it again and reports the error."""
        with self._lock:
            launched = sum(1 for k in self._waiting if k.km is not None)
            for kernel in self._waiting:
                if launched >= spares:
                    return
                if kernel.km is not None:
                    continue
                try:
                    kernel.launch(self.cwd)
                except Exception:
                    kernel.discard()
                    continue
                launched += 1

    def take(self) -> Kernel:
        """The next kernel of the run (perhaps launched ahead), or a new one past the list."""
        with self._lock:
            if self._waiting:
                return self._waiting.popleft()
        return Kernel(self.kernel_name, start_timeout=self.start_timeout)

    def close(self) -> None:
        """Kill the kernels no notebook took."""
        with self._lock:
            waiting, self._waiting = self._waiting, deque()
        for kernel in waiting:
            kernel.discard()
