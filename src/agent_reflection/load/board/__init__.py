"""Board exports (GitHub, Jira, generic CSV/JSONL, tasks kept as files in git) -> ``tasks``,
``task_events``, ``task_links``. See :func:`.loader.load_board` and docs/boards.md.

Nothing is imported here: the pre-registration reads ``board.channels`` on every
``reflect run`` and should not pay for the loader (and pyarrow with it).
"""
