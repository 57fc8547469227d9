"""Progress bars that stay out of logs: shown only on a TTY, never under CI or --silent."""

from __future__ import annotations

import os
import sys
from typing import Any


def progress_enabled(silent: bool = False) -> bool:
    if silent or os.environ.get("CI"):
        return False
    return sys.stderr.isatty()


class _NoBar:
    """What :func:`progress_bar` gives when no bar is shown: tqdm's calls, doing nothing
    (without importing tqdm, whose import, with multiprocessing's, costs 30 ms)."""

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, n: float | None = 1) -> None:
        return None


def progress_bar(*, total: float | None, unit: str, desc: str, silent: bool = False) -> Any:
    """A tqdm bar on stderr (none, and free, when :func:`progress_enabled` is false)."""
    if not progress_enabled(silent):
        return _NoBar()
    from tqdm import tqdm

    scale = unit in {"B", "bytes"}
    return tqdm(
        total=total,
        unit="B" if scale else unit,
        unit_scale=scale,
        desc=desc,
        file=sys.stderr,
        leave=False,
        dynamic_ncols=True,
    )
