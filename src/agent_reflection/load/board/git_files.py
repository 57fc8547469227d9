"""placeholder"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from agent_reflection.load.board.model import ParseOptions, Rejected, Task
from agent_reflection.load.board.source import ProgressFn


def parse_git_files(
    path: Path, options: ParseOptions, progress: ProgressFn | None = None
) -> Iterator[Task | Rejected]:
    raise NotImplementedError
