"""Progress bars that stay out of logs: shown only on a TTY, never under CI or --silent."""

from __future__ import annotations

import os
import sys
from typing import Any


def progress_enabled(silent: bool = False) -> bool:
    if silent or os.environ.get("CI"):
        return False
    return sys.stderr.isatty()


def progress_bar(*, total: float | None, unit: str, desc: str, silent: bool = False) -> Any:
    """A tqdm bar on stderr (disabled, and free, when :func:`progress_enabled` is false)."""
    from tqdm import tqdm

    scale = unit in {"B", "bytes"}
    return tqdm(
        total=total,
        unit="B" if scale else unit,
        unit_scale=scale,
        desc=desc,
        disable=not progress_enabled(silent),
        file=sys.stderr,
        leave=False,
        dynamic_ncols=True,
    )
