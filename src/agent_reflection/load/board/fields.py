"""Typed field access for native records: wrong types become a :class:`RecordError`."""

from __future__ import annotations

from typing import Any

from agent_reflection.load.board.model import RecordError


def opt_str(value: Any, field_name: str) -> str | None:
    """A string (numbers are accepted and printed), ``None`` for null/empty."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise RecordError(field_name, f"expected text, got boolean {value!r}")
    if isinstance(value, int | float):
        return str(value)
    if not isinstance(value, str):
        raise RecordError(field_name, f"expected text, got {type(value).__name__}")
    text = value.strip()
    return text or None


def name_of(value: Any, field_name: str) -> str | None:
    """``{"name": X}`` (Jira status/priority, GitHub label) or a plain string -> X."""
    if isinstance(value, dict):
        return opt_str(value.get("name"), f"{field_name}.name")
    return opt_str(value, field_name)


def as_list(value: Any, field_name: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise RecordError(field_name, f"expected a list, got {type(value).__name__}")
    return value


def as_dict(value: Any, field_name: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RecordError(field_name, f"expected an object, got {type(value).__name__}")
    return value


def labels_of(value: Any, field_name: str) -> tuple[str, ...]:
    """Labels as a list of names/strings, or one string separated by ``,`` / ``;`` / ``|``."""
    if isinstance(value, str):
        parts = value.replace(";", ",").replace("|", ",").split(",")
        return tuple(dict.fromkeys(p.strip() for p in parts if p.strip()))
    names = (
        name_of(item, f"{field_name}[{i}]") for i, item in enumerate(as_list(value, field_name))
    )
    return tuple(dict.fromkeys(n for n in names if n))
