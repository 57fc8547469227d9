"""Where the cadence comes from, in precedence order.

1. ``--reflection-cadence N`` (the hook's command line, ``reflect cadence show``);
2. ``$REFLECTION_CADENCE``;
3. ``reflection_cadence = N`` at the top level of ``.agent-reflection.toml`` in the project root;
4. ``reflection_cadence = N`` under ``[tool.agent-reflection]`` in the project's ``pyproject.toml``;
5. :data:`agent_reflection.in_loop.cadence.DEFAULT_CADENCE` (7).

``0`` disables the checkpoint at any level. Stdlib only.

Not built with :mod:`agent_reflection.config`: the cadence is one key read out of files that
hold other settings (other tools' keys in ``pyproject.toml``), so unknown keys are not errors
here, and a digit string is accepted like the environment variable's; a typed dataclass build
would add nothing but imports to the cadence hook's path.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_reflection.errors import ReflectionError
from agent_reflection.in_loop.cadence import DEFAULT_CADENCE

#: Environment variable overriding the configured cadence.
CADENCE_ENV = "REFLECTION_CADENCE"
#: Project config file (top-level ``reflection_cadence = N``).
CONFIG_FILE = ".agent-reflection.toml"
#: ``pyproject.toml`` table holding the same key.
PYPROJECT_TABLE = ("tool", "agent-reflection")
CONFIG_KEY = "reflection_cadence"


class InvalidCadence(ReflectionError, ValueError):
    """A configured ``reflection_cadence`` is not a whole number >= 0."""

    def __init__(self, source: str, value: object) -> None:
        self.source = source
        self.value = value
        super().__init__(
            f"{source}: reflection_cadence must be a whole number >= 0 (0 disables the "
            f"checkpoint), got {value!r}; fix the value or remove it to use the default "
            f"({DEFAULT_CADENCE})"
        )


@dataclass(frozen=True)
class CadenceSetting:
    """The effective cadence and where it came from (for ``reflect cadence show``)."""

    cadence: int
    source: str


def parse_cadence(value: object, source: str) -> int:
    """``value`` as a cadence (int >= 0; digit strings accepted), else :class:`InvalidCadence`."""
    if isinstance(value, bool):
        raise InvalidCadence(source, value)
    if isinstance(value, str):
        text = value.strip()
        if not text.isdigit():
            raise InvalidCadence(source, value)
        return int(text)
    if isinstance(value, int) and value >= 0:
        return value
    raise InvalidCadence(source, value)


def config_files(project_dir: str | os.PathLike[str]) -> tuple[Path, Path]:
    """The two files the cadence is read from, in precedence order."""
    root = Path(project_dir)
    return root / CONFIG_FILE, root / "pyproject.toml"


def read_config_cadence(project_dir: str | os.PathLike[str]) -> CadenceSetting | None:
    """``reflection_cadence`` from ``.agent-reflection.toml``, else ``[tool.agent-reflection]``.

    ``None`` when neither file sets it. A malformed file raises :class:`InvalidCadence`
    naming the file.
    """
    own, pyproject = config_files(project_dir)
    for path, table in ((own, ()), (pyproject, PYPROJECT_TABLE)):
        if not path.is_file():
            continue
        import tomllib

        try:
            doc: Any = tomllib.loads(path.read_text("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise InvalidCadence(str(path), f"unreadable TOML ({exc})") from exc
        for key in table:
            doc = doc.get(key) if isinstance(doc, dict) else None
        if isinstance(doc, dict) and CONFIG_KEY in doc:
            where = f"{path} [{'.'.join(table)}]" if table else str(path)
            return CadenceSetting(parse_cadence(doc[CONFIG_KEY], where), where)
    return None


def resolve_cadence(
    project_dir: str | os.PathLike[str] | None = None,
    *,
    cli_value: int | None = None,
    env: Mapping[str, str] | None = None,
) -> CadenceSetting:
    """The effective cadence: CLI ``--reflection-cadence`` > ``$REFLECTION_CADENCE`` >
    ``.agent-reflection.toml`` > ``pyproject.toml [tool.agent-reflection]`` > default 7."""
    if cli_value is not None:
        return CadenceSetting(parse_cadence(cli_value, "--reflection-cadence"), "cli")
    environ = os.environ if env is None else env
    raw = environ.get(CADENCE_ENV, "").strip()
    if raw:
        return CadenceSetting(parse_cadence(raw, f"${CADENCE_ENV}"), f"${CADENCE_ENV}")
    if project_dir is not None:
        found = read_config_cadence(project_dir)
        if found is not None:
            return found
    return CadenceSetting(DEFAULT_CADENCE, "default")
