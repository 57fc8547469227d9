"""Worker processes that end with the process that started them.

A loader killed with SIGKILL runs no cleanup: a process pool's workers (children of the
forkserver, each holding its own end of the task queue) would wait for work forever. Kept apart
from the loaders, with nothing heavy imported: the workers import this module to run the watch,
and importing a loader's module would bring DuckDB into every worker (~30 MiB each).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

#: How often a worker checks that the loading process still exists.
PARENT_POLL_SECONDS = 0.5


def die_with_parent(parent: int) -> None:
    """Pool initializer: end this worker soon after the loading process is gone.

    A SIGKILLed loader runs no cleanup, and its workers (children of the forkserver, which
    hold their own end of the task queue) would otherwise wait for work forever.
    """

    def watch() -> None:
        while _alive(parent):
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="die-with-parent", daemon=True).start()


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped by its parent, does not)."""
    if not Path("/proc/self/stat").exists():  # no /proc (not Linux): ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2 :].split(" ", 1)[0] not in ("Z", "X")
