"""Typed config: a TOML table checked against a frozen dataclass and built into it.

One set of rules for every settings file (the pre-registration, the reflection cycle's
config, a user's risk table):

- a key the dataclass has no field for is an error naming the table and the key, with the
  known keys (:func:`check_keys`);
- a field without a default must be present; a field with one may be left out;
- values are checked against the field's type hint: ``bool``, ``int`` (``true`` is not a
  number), ``float`` (an integer is accepted and converted), ``str``, ``X | None``,
  ``tuple[X, ...]`` (a TOML array) and ``tuple[SomeDataclass, ...]`` (an array of tables, each
  built by the same rules);
- ``check(obj, where)`` then validates ranges, enums and cross-field rules of each dataclass
  built, and raises with the same ``where``.

Every error is the caller's exception class (``error``), its message starting with ``where``:
the file and the table path (e.g. ``preregistration.toml: [p2].rules[0]``).
Imports ``typing`` and ``dataclasses``: on a hook's path, only when a config file exists.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
#: The exception a caller's errors are raised as (built from the message).
ErrorType = Callable[[str], Exception]
#: Validation after a dataclass is built: ``check(obj, where)`` raises on a bad value.
Check = Callable[[Any, str], None]
#: Words for an unknown key: ``(where, unknown keys sorted, known keys sorted) -> message``.
UnknownWording = Callable[[str, Sequence[str], Sequence[str]], str]


def unknown_keys_message(where: str, unknown: Sequence[str], known: Sequence[str]) -> str:
    return f"{where}: unknown key(s) {list(unknown)}; known keys: {', '.join(known)}"


def check_keys(
    table: Mapping[str, Any],
    known: Collection[str],
    where: str,
    *,
    error: ErrorType,
    wording: UnknownWording = unknown_keys_message,
) -> None:
    """Raise ``error`` when ``table`` has a key outside ``known``."""
    unknown = sorted(str(key) for key in table if key not in known)
    if unknown:
        raise error(wording(where, unknown, sorted(known)))


def build(
    cls: type[T],
    table: Mapping[str, Any],
    where: str,
    *,
    error: ErrorType,
    check: Check | None = None,
    wording: UnknownWording = unknown_keys_message,
) -> T:
    """The frozen dataclass ``cls`` from ``table`` (see the module docstring for the rules)."""
    hints = typing.get_type_hints(cls)
    declared = dataclasses.fields(cls)  # type: ignore[arg-type]
    check_keys(table, [f.name for f in declared], where, error=error, wording=wording)
    values: dict[str, Any] = {}
    for f in declared:
        if f.name not in table:
            if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
                continue
            raise error(f"{where}: missing key {f.name!r}")
        values[f.name] = _coerce(hints[f.name], table[f.name], where, f.name, error, check)
    obj = cls(**values)
    if check is not None:
        check(obj, where)
    return obj


def coerce_field(
    cls: type[Any],
    key: str,
    value: Any,
    where: str,
    *,
    error: ErrorType,
    check: Check | None = None,
) -> Any:
    """``value`` checked and converted for the field ``key`` of ``cls`` (e.g. an override)."""
    return _coerce(typing.get_type_hints(cls)[key], value, where, key, error, check)


def _coerce(
    tp: Any, value: Any, where: str, key: str, error: ErrorType, check: Check | None
) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    bad = f"{where}: {key} must be {_describe(tp)}, got {value!r}"
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = next(a for a in args if a is not type(None))
        return _coerce(inner, value, where, key, error, check)
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise error(bad)
        item = args[0]
        if dataclasses.is_dataclass(item):
            out = []
            for i, v in enumerate(value):
                if not isinstance(v, dict):
                    raise error(f"{where}: {key}[{i}] must be a table")
                out.append(build(item, v, f"{where}.{key}[{i}]", error=error, check=check))  # type: ignore[arg-type]
            return tuple(out)
        return tuple(_coerce(item, v, where, key, error, check) for v in value)
    if tp is bool:
        if not isinstance(value, bool):
            raise error(bad)
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise error(bad)
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise error(bad)
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise error(bad)
        return value
    raise error(bad)  # pragma: no cover (a field type this helper does not know)


def _describe(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is tuple:
        return "a list"
    if origin in (typing.Union, types.UnionType):  # TOML has no null: X | None is written as X
        return " or ".join(_describe(a) for a in typing.get_args(tp) if a is not type(None))
    return {bool: "true/false", int: "an integer", float: "a number", str: "a string"}.get(
        tp, "a value"
    )
