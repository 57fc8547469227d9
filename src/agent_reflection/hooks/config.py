"""The Stop hook's settings, read from the environment once per run.

Fail-closed: a missing or unknown ``REFLECTION_MODE`` means ``off`` (the hook does nothing), so
a globally registered hook is inert until a session opts in.

The settings are declared, and read by the package's one rule, in :mod:`agent_reflection.config`
(``REFLECTION_MODE``, ``REFLECTION_DIR``, ``REFLECTION_INPUT``, ``REFLECTION_TASK_REF``,
``REFLECTION_AGENT``, ``REFLECTION_RISK_TABLE``, ``REFLECTION_ASK``); this is the Stop hook's
view of them.
"""

from __future__ import annotations

from agent_reflection import config
from agent_reflection.hooks.mode import CAPTURE_MODES, parse_mode

TYPE_CHECKING = False  # not imported from typing: the hook must not pay for typing at start
if TYPE_CHECKING:
    from collections.abc import Mapping


class HookConfig:
    """What the environment asks of the Stop hook.

    ``mode`` is ``off``, ``solo`` or ``orchestrated``; ``mode_note`` explains an ignored value.
    Paths are as given (relative ones are resolved against the repository root later).
    A plain slotted class rather than a NamedTuple or frozen dataclass: importing ``typing``
    or ``dataclasses`` costs more than the hook's own work, and every agent stop pays it.
    """

    __slots__ = (
        "agent",
        "ask",
        "input_path",
        "mode",
        "mode_note",
        "out_dir",
        "risk_table",
        "task_ref",
    )

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
    raw = config.env_raw(config.MODE, env)
    mode, note = parse_mode(raw if raw is not None else default_mode)
    return HookConfig(
        mode=mode,
        mode_note=note,
        out_dir=config.env_text(config.SIDECAR_DIR, env),
        input_path=config.env_text(config.INPUT, env),
        task_ref=config.env_text(config.TASK_REF, env),
        agent=config.env_text(config.AGENT, env),
        risk_table=config.env_text(config.RISK_TABLE, env),
        ask=config.resolve(config.ASK, env=env)[0],
    )
