"""Board exports (GitHub, Jira, generic CSV/JSONL, tasks kept as files in git) -> ``tasks``,
``task_events``, ``task_links``. See :func:`load_board` and docs/boards.md."""

from agent_reflection.load.board.loader import FORMATS, load_board
from agent_reflection.load.board.model import ParseOptions, Rejected, Task, TaskEvent, TaskLink

__all__ = ["FORMATS", "ParseOptions", "Rejected", "Task", "TaskEvent", "TaskLink", "load_board"]
