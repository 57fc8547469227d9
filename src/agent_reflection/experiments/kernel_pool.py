"""Fresh kernels for a run: each runs one notebook and is never reused; the next ones are
started while the current notebooks run (see :mod:`~agent_reflection.experiments.warm_kernel`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

from agent_reflection.experiments.warm_kernel import WarmKernel


class KernelPool:
    """Kernels for a run that each run one notebook and are never reused.

    :meth:`take` hands out a kernel started ahead (or a new one); :meth:`start_ahead` starts
    kernels for the notebooks still to come, at most ``ahead`` at a time; :meth:`close` kills
    those not taken. Any lane may take a kernel another lane started.
    """

    def __init__(self, kernel_name: str, *, start_timeout: int, ahead: int = 1) -> None:
        self.kernel_name = kernel_name
        self.start_timeout = start_timeout
        self.ahead = ahead
        self._spares: list[WarmKernel] = []
        self._lock = threading.Lock()

    def take(self, preload: tuple[str, ...] = ()) -> WarmKernel:
        """The oldest kernel started for a notebook like this one, else the oldest spare, else
        a new kernel (not started yet: the caller launches it)."""
        with self._lock:
            spares = [k for k in self._spares if k.preloaded == preload] or self._spares
            if spares:
                self._spares.remove(spares[0])
                return spares[0]
        return WarmKernel(self.kernel_name, start_timeout=self.start_timeout)

    def start_ahead(self, cwd: Path, to_come: Sequence[tuple[str, ...]]) -> None:
        """Start kernels for the first notebooks of ``to_come`` (the modules each imports, in
        the order they will be taken) that have none yet, up to ``ahead`` spares in all. A
        kernel that fails to start is dropped; the notebook then gets a new one."""
        with self._lock:
            waiting = [k.preloaded for k in self._spares]
            for preload in to_come[: self.ahead]:
                if preload in waiting:
                    waiting.remove(preload)
                    continue
                if len(self._spares) >= self.ahead:
                    return
                kernel = WarmKernel(self.kernel_name, start_timeout=self.start_timeout)
                try:
                    kernel.launch(cwd, preload)
                except Exception:
                    kernel.discard()
                    continue
                self._spares.append(kernel)

    def close(self) -> None:
        with self._lock:
            spares, self._spares = self._spares, []
        for kernel in spares:
            kernel.discard()
