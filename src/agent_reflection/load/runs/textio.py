"""Open a text file that may be gzip-compressed."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import IO


def open_text(path: Path) -> IO[str]:
    """``path`` opened for reading as UTF-8 text; ``.gz`` files are decompressed."""
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open(encoding="utf-8")
