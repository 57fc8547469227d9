"""A kernel client whose ``wait_for_ready`` returns as soon as the kernel is ready.

jupyter_client's ``wait_for_ready`` gets a ``kernel_info`` reply, checks that IOPub delivers,
then drains IOPub until nothing has arrived for 0.2 s. That last wait is paid by every client
of every notebook: once by the pool's own client (which moves the kernel to the notebook's
folder) and once by papermill's, 0.4 s per notebook for a kernel the pool started long before,
on the run's critical path once per notebook of its longest lane and the summary.

:class:`ReadyKernelClient` drains IOPub until the ``idle`` status of the ``kernel_info`` request
that was answered: the kernel publishes it last, after everything that request caused, so
nothing of it is left behind. If that status does not come (IOPub was not yet connected when it
was sent) the client asks again, as jupyter_client does; if some messages came but not the
status, it stops after 0.2 s of silence, as jupyter_client does. The pool's kernel managers
hand out this client (``client_class``), so papermill's client uses it too.
"""

from __future__ import annotations

import math
import time
from queue import Empty
from typing import Any

from jupyter_client.asynchronous.client import AsyncKernelClient

#: Seconds without an IOPub message after which IOPub counts as drained (jupyter_client's).
IOPUB_QUIET = 0.2
#: Seconds to wait for a kernel_info reply before asking again (jupyter_client's).
REPLY_WAIT = 1.0


class ReadyKernelClient(AsyncKernelClient):
    """An async kernel client for a kernel started by a kernel manager (see the module)."""

    async def wait_for_ready(self, timeout: float | None = None) -> None:
        """Return once the kernel answered ``kernel_info`` and IOPub is connected and drained.
        Raises RuntimeError when the kernel dies or ``timeout`` seconds pass first."""
        deadline = time.monotonic() + (math.inf if timeout is None else timeout)
        while True:
            self.kernel_info()
            try:
                reply: dict[str, Any] = await self.shell_channel.get_msg(timeout=REPLY_WAIT)
            except Empty:
                pass
            else:
                if reply["msg_type"] == "kernel_info_reply" and await self._drain_iopub(
                    reply["parent_header"]["msg_id"]
                ):
                    self._handle_kernel_info_reply(reply)
                    return
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout} seconds")

    async def _drain_iopub(self, request_id: str) -> bool:
        """Read IOPub up to the ``idle`` status of ``request_id``; whether IOPub delivered at
        all (False: not connected yet, ask again)."""
        delivered = False
        while True:
            try:
                msg: dict[str, Any] = await self.iopub_channel.get_msg(timeout=IOPUB_QUIET)
            except Empty:
                return delivered
            delivered = True
            if (
                msg["msg_type"] == "status"
                and msg["content"].get("execution_state") == "idle"
                and msg["parent_header"].get("msg_id") == request_id
            ):
                return True
