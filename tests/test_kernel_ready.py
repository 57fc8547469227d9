"""The kernels of a run report ready without jupyter_client's fixed IOPub wait, and a
discarded kernel is gone (reaped) when discard returns. Real kernels."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from queue import Empty
from typing import Any

import pytest
from jupyter_core.utils import run_sync

from agent_reflection.execute.client import ReadyKernelClient
from agent_reflection.execute.kernel import ensure_kernel
from agent_reflection.execute.pool import Kernel


def _record_iopub(client: Any) -> list[str]:
    """Wrap the client's IOPub reads; the list gets the type of each message read, or
    "Empty" for a read that timed out."""
    seen: list[str] = []
    channel = client.iopub_channel
    read = channel.get_msg

    async def get_msg(*args: Any, **kwargs: Any) -> Any:
        try:
            msg = await read(*args, **kwargs)
        except Empty:
            seen.append("Empty")
            raise
        seen.append(msg["msg_type"])
        return msg

    channel.get_msg = get_msg
    return seen


@pytest.mark.slow
def test_ready_once_kernel_info_is_answered_and_iopub_drained(tmp_path: Path) -> None:
    kernel = Kernel(ensure_kernel(), start_timeout=120)
    try:
        kernel.launch(tmp_path)
        client = kernel.km.client()
        assert isinstance(client, ReadyKernelClient)  # papermill's client is one too
        client.start_channels()
        try:
            run_sync(client.wait_for_ready)(timeout=120)  # a kernel still starting
            seen = _record_iopub(client)
            run_sync(client.wait_for_ready)(timeout=120)  # a kernel ready long since
            # it stopped on the kernel_info request's idle status, not after a silence
            assert seen and seen[-1] == "status"
            with pytest.raises(Empty):  # and nothing of that request was left behind
                run_sync(client.iopub_channel.get_msg)(timeout=0)
            printed: list[str] = []
            reply = run_sync(client.execute_interactive)(
                "print('hello')",
                timeout=60,
                output_hook=lambda m: printed.append(m["content"].get("text", "")),
            )
            assert reply["content"]["status"] == "ok" and "".join(printed) == "hello\n"
        finally:
            client.stop_channels()
    finally:
        kernel.discard()


@pytest.mark.slow
def test_a_dead_kernel_is_reported_not_waited_for(tmp_path: Path) -> None:
    kernel = Kernel(ensure_kernel(), start_timeout=120)
    try:
        kernel.launch(tmp_path)
        kernel.prepare(tmp_path)
        pid = kernel.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        client = kernel.km.client()
        client.start_channels()
        try:
            with pytest.raises(RuntimeError, match="Kernel died before replying"):
                run_sync(client.wait_for_ready)(timeout=120)
        finally:
            client.stop_channels()
    finally:
        kernel.discard()


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="looks the kernel up in /proc")
def test_a_discarded_kernel_is_reaped_when_discard_returns(tmp_path: Path) -> None:
    kernel = Kernel(ensure_kernel(), start_timeout=120)
    kernel.launch(tmp_path)
    kernel.prepare(tmp_path)
    pid = kernel.pid
    assert pid is not None and Path(f"/proc/{pid}").exists()
    kernel.discard()
    assert not Path(f"/proc/{pid}").exists()  # killed and waited for: not even a zombie
    assert kernel.km is None and kernel.pid is None
