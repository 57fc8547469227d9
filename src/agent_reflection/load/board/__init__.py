"""Board exports (GitHub, Jira, generic CSV/JSONL, tasks kept as files in git) -> ``tasks``,
``task_events``, ``task_links``. See :func:`load_board` and docs/boards.md.

The loader (and pyarrow with it) is imported on first use: the pre-registration reads
``board.channels`` on every ``reflect run`` and should not pay for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_reflection.load.board.loader import FORMATS, load_board
    from agent_reflection.load.board.model import (
        ParseOptions,
        Rejected,
        Task,
        TaskEvent,
        TaskLink,
    )

__all__ = ["FORMATS", "ParseOptions", "Rejected", "Task", "TaskEvent", "TaskLink", "load_board"]

_HOMES = {
    "FORMATS": "loader",
    "load_board": "loader",
    "ParseOptions": "model",
    "Rejected": "model",
    "Task": "model",
    "TaskEvent": "model",
    "TaskLink": "model",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"{__name__}.{home}"), name)
