"""The Stop hook's settings, read from the environment once per run.

Fail-closed: a missing or unknown ``REFLECTION_MODE`` means ``off`` (the hook does nothing), so
a globally registered hook is inert until a session opts in.

Not built with :mod:`agent_reflection.config` (the TOML helper): these settings are
environment variables, not a table, and that helper imports ``typing`` and ``dataclasses``,
which would cost every agent stop more than the capture itself.
"""

from __future__ import annotations

import os

from agent_reflection.hooks.mode import CAPTURE_MODES, parse_mode

TYPE_CHECKING = False  # not imported from typing: the hook must not pay for typing at start
if TYPE_CHECKING:
    from collections.abc import Mapping

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})


class HookConfig:
    """What the environment asks of the Stop hook.

    ``mode`` is ``off``, ``solo`` or ``orchestrated``; ``mode_note`` explains an ignored value.
    Paths are as given (relative ones are resolved against the repository root later).
    A plain slotted class rather than a NamedTuple or frozen dataclass: importing ``typing``
    or ``dataclasses`` costs more than the hook's own work, and every agent stop pays it.
    """

    __slots__ = ("agent", "ask", "input_path", "mode", "mode_note", "out_dir", "risk_table",
                 "task_ref")  # fmt: skip

    def __init__(
        self,
        mode: str = "off",
        mode_note: str | None = None,
        out_dir: str | None = None,
        input_path: str | None = None,
        task_ref: str | None = None,
        agent: str | None = None,
        risk_table: str | None = None,
        ask: bool = False,
    ) -> None:
        self.mode = mode
        self.mode_note = mode_note
        self.out_dir = out_dir
        self.input_path = input_path
        self.task_ref = task_ref
        self.agent = agent
        self.risk_table = risk_table
        self.ask = ask

    @property
    def captures(self) -> bool:
        return self.mode in CAPTURE_MODES


def read_config(
    env: Mapping[str, str] | None = None, *, default_mode: str | None = None
) -> HookConfig:
    """Build the config from ``env`` (default ``os.environ``).

    ``default_mode`` (the hook's ``--mode`` argument, written by ``reflect hook install``) applies
    only when ``REFLECTION_MODE`` is unset: an explicit ``REFLECTION_MODE=off`` always wins.
    """
    env = os.environ if env is None else env
    raw = env.get("REFLECTION_MODE")
    mode, note = parse_mode(raw if raw is not None else default_mode)
    return HookConfig(
        mode=mode,
        mode_note=note,
        out_dir=_nonempty(env.get("REFLECTION_DIR")),
        input_path=_nonempty(env.get("REFLECTION_INPUT")),
        task_ref=_nonempty(env.get("REFLECTION_TASK_REF")),
        agent=_nonempty(env.get("REFLECTION_AGENT")),
        risk_table=_nonempty(env.get("REFLECTION_RISK_TABLE")),
        ask=env.get("REFLECTION_ASK", "").strip().lower() in TRUE_WORDS,
    )


def _nonempty(value: str | None) -> str | None:
    value = value.strip() if value is not None else None
    return value or None
