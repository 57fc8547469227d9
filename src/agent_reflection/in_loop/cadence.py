"""The cadence checkpoint: every N tool calls, ask the agent three re-orienting questions.

Two pure functions decide and render the checkpoint; :func:`count_call` counts one tool call
into a session's cadence state (a plain JSON-able dict the in-loop hook keeps) and says when a
checkpoint is due.

* :func:`should_inject_reflection` fires when ``current - last >= cadence`` and returns the
  real delta (a batched turn can overshoot the cadence; the agent is told the true number).
  ``cadence == 0`` disables it. A marker ahead of the count saturates to a delta of 0 and does
  not fire. Negative input is a caller bug and raises :class:`NegativeToolCount`.
* :func:`reflection_prompt` renders the message: flagged as a scheduled system checkpoint (not
  a user message, not a failure), language- and tool-neutral, asking (1) the original goal, or,
  when the task is known, whether the current plan still matches it (the task is shown verbatim
  under ``ORIGINAL TASK``), (2) what the last steps proved or ruled out, (3) the next concrete
  step. It never asks "how close" the agent is: that phrase reads as a cue to wrap up.

Default cadence: **7** tool calls (:data:`DEFAULT_CADENCE`, declared with where N comes from
in :data:`agent_reflection.config.CADENCE`: ``--reflection-cadence``, ``$REFLECTION_CADENCE``,
the project file, 7).

Stdlib only and import-light (no dataclasses, pathlib or typing): the in-loop hook imports
this module on every tool call.
"""

from __future__ import annotations

from agent_reflection import config
from agent_reflection.errors import ReflectionError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Default cadence (why 7 and not the design's 10: :data:`agent_reflection.config.CADENCE`).
DEFAULT_CADENCE: int = config.CADENCE.default
#: Tasks longer than this many characters (not bytes) are cut in the prompt.
TASK_CHAR_LIMIT = 300
#: The first line of every checkpoint prompt. Loaders detect checkpoints by it.
CHECKPOINT_FLAG = "[System meta: scheduled reflection checkpoint. Not a user message.]"


class NegativeToolCount(ReflectionError, ValueError):
    """A tool-call count, marker or cadence below zero was passed to the cadence check."""

    def __init__(self, name: str, value: int) -> None:
        self.name = name
        self.value = value
        super().__init__(
            f"{name} must be a whole number >= 0, got {value!r}; counts start at 0 and "
            "only go up (reset both count and marker to 0 when a new task starts)"
        )


def should_inject_reflection(current: int, last: int, cadence: int) -> int | None:
    """The number of tool calls since the last checkpoint if one is due now, else ``None``.

    >>> should_inject_reflection(13, 0, 10)
    13
    >>> should_inject_reflection(19, 10, 10) is None
    True
    """
    for name, value in (("current", current), ("last", last), ("cadence", cadence)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if value < 0:
            raise NegativeToolCount(name, value)
    if cadence == 0:
        return None
    delta = max(current - last, 0)
    return delta if delta >= cadence else None


def clip_task(task: str) -> str:
    """``task`` unchanged up to 300 characters, else its first 297 characters + ``"..."``."""
    if len(task) > TASK_CHAR_LIMIT:
        return task[: TASK_CHAR_LIMIT - 3] + "..."  # the cut text and "..." fill the limit
    return task


def reflection_prompt(delta: int, task: str = "") -> str:
    """The checkpoint message for ``delta`` tool calls since the last one.

    ``task`` is the user's original request when known (blank means unknown).
    """
    lines = [
        CHECKPOINT_FLAG,
        f"{delta} tool calls since the last checkpoint. This checkpoint runs on a fixed "
        "schedule; it does not mean anything went wrong.",
    ]
    if task.strip():
        lines += ["", "=== ORIGINAL TASK ===", clip_task(task), "=== END ORIGINAL TASK ===", ""]
        q1 = (
            "Does your current plan still match the original task above? If it drifted, "
            "say where, and steer back."
        )
    else:
        lines.append("")
        q1 = "Restate the original goal of this work in one sentence."
    lines += [
        "Before your next tool call, write three short lines:",
        f"1. {q1}",
        f"2. What did the last {delta} steps prove or rule out?",
        "3. What is the next concrete step?",
        "Then carry on with the work.",
    ]
    return "\n".join(lines)


def fresh_state(task: str = "") -> dict[str, Any]:
    """A session's cadence state at the start of a task: count and marker at 0."""
    return {"count": 0, "last": 0, "task": task, "seen": [], "fired": []}


def checked_state(state: object) -> dict[str, Any]:
    """``state`` when it is a usable cadence state, else a fresh one (keeping its task)."""
    if not isinstance(state, dict):
        return fresh_state()
    for key in ("count", "last"):
        value = state.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return fresh_state(str(state.get("task") or ""))
    return state


def count_call(state: dict[str, Any], cadence: int) -> int | None:
    """Count one tool call into ``state``; when a checkpoint is due, move the marker, record
    the call in ``fired`` (the last 100) and return the delta, else ``None``."""
    state["count"] += 1
    delta = should_inject_reflection(state["count"], state["last"], cadence)
    if delta is not None:
        state["last"] = state["count"]
        fired = state.get("fired")
        state["fired"] = [*(fired if isinstance(fired, list) else []), state["count"]][-100:]
    return delta
