"""The kernel spec for *this* interpreter, registered when missing, and the kernels' sockets.

Papermill's "No such kernel named python3" in fresh environments, and the subtler trap of a
global ``python3`` kernelspec pointing at another Python (without this package), are both
avoided by executing notebooks with a kernel whose argv[0] is ``sys.executable``
(:func:`ensure_kernel`). Each kernel talks over IPC sockets of its own
(:func:`ipc_socket_prefix`), removed at exit and, with :func:`clean_up_on_sigterm`, when the
process is stopped.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import hashlib
import importlib
import os
import signal
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from types import FrameType


def preload(modules: str) -> None:
    """Import the comma-separated ``modules``; binds no name (see :func:`preload_argument`)."""
    for name in filter(None, modules.split(",")):
        importlib.import_module(name)


def preload_argument(modules: tuple[str, ...]) -> str:
    """An ipykernel argument that imports ``modules`` while the kernel starts, before it reports
    ready. The line evaluates to None, so it leaves no output (``Out``, ``_``) and no name in
    the user namespace: the kernel starts with more modules loaded, nothing else."""
    line = f"__import__({__name__!r}, fromlist=['preload']).preload({','.join(modules)!r})"
    return f"--IPKernelApp.exec_lines={line}"


#: Socket prefixes of the kernels this process started (removed at exit and on SIGTERM).
_PREFIXES: list[str] = []


def ipc_socket_prefix() -> str:
    """A fresh path prefix for one kernel's IPC sockets. IPC, not loopback TCP: a batch run
    needs no network port, and ipykernel then does not warn about unencrypted TCP on every
    start. Each kernel gets its own prefix, so kernels run side by side (``--jobs``)."""
    prefix = os.path.join(tempfile.gettempdir(), f"reflect-kernel-{uuid.uuid4().hex[:12]}")
    if not _PREFIXES:
        atexit.register(remove_ipc_sockets)
    _PREFIXES.append(prefix)
    return prefix


def remove_ipc_sockets() -> None:
    """Remove the socket files of the kernels this process started. A kernel that is killed, or
    whose parent is, leaves its ``<prefix>-1`` ... ``-5`` files behind in the temp folder."""
    for prefix in _PREFIXES:
        for path in glob.glob(glob.escape(prefix) + "-*"):
            with contextlib.suppress(OSError):
                os.unlink(path)


def clean_up_on_sigterm() -> None:
    """On SIGTERM, remove this process's kernel sockets, then end by SIGTERM as before. The
    kernels notice that their parent is gone and shut down by themselves. Only the main thread
    can install a handler; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        return

    def handler(signum: int, _frame: FrameType | None) -> None:
        # a kernel still starting would create its sockets after they were removed: end the
        # kernels first, then remove what they left
        _kill_children()
        remove_ipc_sockets()
        # then the default action: the process ends by the signal, lane threads and all
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    signal.signal(signal.SIGTERM, handler)


def _kill_children(wait_seconds: float = 2.0) -> None:
    """SIGKILL this process's child processes (its kernels) and reap them (Linux: /proc)."""
    me = str(os.getpid())
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            # "pid (comm) state ppid ...": comm may hold spaces and parentheses
            if stat.read_text().rsplit(")", 1)[1].split()[1] == me:
                os.kill(int(stat.parent.name), signal.SIGKILL)
    deadline = time.monotonic() + wait_seconds
    while time.monotonic() < deadline:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return  # every child reaped
        if pid == 0:
            time.sleep(0.01)


def ensure_kernel(name: str | None = None) -> str:
    """The name of a kernelspec that runs ``sys.executable``; installs it if absent.

    Installed into ``sys.prefix`` (the virtual environment) when writable, else the user's
    Jupyter data directory.
    """

    digest = hashlib.sha1(str(Path(sys.executable)).encode()).hexdigest()[:8]
    name = name or f"agent-reflection-{digest}"
    if _is_ours(name):
        return name
    from ipykernel.kernelspec import install

    display = f"Python (agent-reflection, {Path(sys.executable).parent.parent.name})"
    try:
        install(kernel_name=name, display_name=display, prefix=sys.prefix)
    except OSError:
        if _is_ours(name):  # another process installed it at the same moment
            return name
        install(kernel_name=name, display_name=display, user=True)
    return name


def _is_ours(name: str) -> bool:
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        spec = KernelSpecManager().get_kernel_spec(name)
    except (NoSuchKernel, OSError, ValueError):
        return False
    return bool(spec.argv) and Path(spec.argv[0]) == Path(sys.executable)
