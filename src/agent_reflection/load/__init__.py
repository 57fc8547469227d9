"""Loaders: one home per source, each with the loads/rejected bookkeeping of ``store.db``.

- ``git/``: git histories (commits, files, signals, SZZ); ``sidecars/``: reflection.v1 files;
  ``labels``: labelled calibration corpora; ``board/``: board exports (GitHub, Jira, CSV/JSONL,
  task files kept in git); ``runs/``: agent run logs; ``transcripts``: Claude Code transcripts.
- ``task_matcher``: the one matcher joining tasks to commits and sidecars.
- ``text``: how every loader decodes text; ``parent_watch``: worker processes that die with
  their loader.

Nothing is imported here, so a loader pays only for what it uses.
"""
