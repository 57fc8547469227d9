"""The environment every git process of a load runs with (light to import: the no-change
re-load check of :mod:`.unchanged` needs only this)."""

from __future__ import annotations

import os

__all__ = ["git_env"]


def git_env(extra: dict[str, str] | None) -> dict[str, str]:
    """``os.environ`` with lazy fetching and prompts off and the C locale, without ``GIT_DIR`` /
    ``GIT_WORK_TREE`` (``git -C`` names the repository), plus ``extra``."""
    env = {**os.environ, "GIT_NO_LAZY_FETCH": "1", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    env.pop("GIT_DIR", None)
    env.pop("GIT_WORK_TREE", None)
    return {**env, **(extra or {})}
