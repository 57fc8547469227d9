"""reflection.v1 checks on plain dicts, driven by the declaration in
:mod:`agent_reflection.reflection.fields`.

One validator, :func:`reflection_row`: it returns the record's ``reflections`` row (the leaf
values in declaration order, numbers normalised) or raises
:class:`~agent_reflection.errors.InvalidSidecar` naming the JSON path of the first problem and
what the schema wants there. The Stop hook runs it on the dict it is about to write, the
loader on every file it reads, and :func:`agent_reflection.reflection.record.validate_sidecar`
before building the typed model.
:func:`record_problems` runs the same checks without stopping: every problem of a rejected
record (the loader's rejection reason, worded by :func:`describe_problems`).
Each field's check is a function made once from its declaration (:func:`_check`, no code
generation): it appends the value the row stores (an integral float attempt as an int) or
raises with the precise reason.

Import-light on purpose (no ``typing`` or ``dataclasses``; ``re``, which ``json`` imports too):
every agent stop pays for what the hook imports.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from math import isnan

from agent_reflection.errors import InvalidSidecar
from agent_reflection.reflection.fields import (
    BOOLEAN,
    CONST,
    ENUM,
    OBJECT,
    OBJECT_ARRAY,
    OID,
    OID_ARRAY,
    OID_PATTERN,
    POSITIVE_INTEGER,
    RECORD,
    SCHEMA_VERSION,
    SELF_REPORT,
    STRING,
    STRING_ARRAY,
    SUPPORTED_VERSIONS,
    TIMESTAMP,
    TIMESTAMP_PATTERN,
    UNIT_NUMBER,
    VERSION,
    Field,
    leaves,
)

TYPE_CHECKING = False  # annotations only
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Problems = list[InvalidSidecar] | None
    #: A field's check: (value, row, problems), see :func:`_check`.
    Check = Callable[[Any, list[Any], Problems], None]

_TIMESTAMP = re.compile(TIMESTAMP_PATTERN).match
_OID = re.compile(OID_PATTERN).match


def is_utc_timestamp(text: str) -> bool:
    """True for ``2026-01-31T12:00:00Z`` (optional ``.fraction`` of 1–9 digits, ``Z`` or
    ``+00:00``): the schema's timestamp pattern (whose ``$`` lets one trailing newline
    through)."""
    return _TIMESTAMP(text) is not None


def is_oid(text: str) -> bool:
    """True for a git object id, 40 or 64 lowercase hex digits: the schema's oid pattern."""
    return _OID(text) is not None


def reflection_row(obj: Any) -> tuple[Any, ...]:
    """The ``reflections`` row of a valid record (:data:`fields.ROW_COLUMNS` order), or raise
    :class:`InvalidSidecar` at the first problem in field order."""
    out: list[Any] = []
    _object(obj, "", _RECORD_SHAPE, out)
    return tuple(out)


def record_problems(obj: Any) -> tuple[InvalidSidecar, ...]:
    """Every problem of a reflection.v1 record, in the order :func:`reflection_row` meets them
    (unknown properties, missing ones, then the values in field order); () when it is valid.

    One problem per value (an array of strings reports its first bad item); each problem of
    each item of an array of objects. The loader's rejections call it, so a writer fixing a
    record sees all of its problems at once.
    """
    problems: list[InvalidSidecar] = []
    try:
        _object(obj, "", _RECORD_SHAPE, [], problems)
    except InvalidSidecar as exc:  # not an object at all
        problems.append(exc)
    return tuple(problems)


#: At most this many characters of problems in :func:`describe_problems`.
PROBLEMS_MAX_CHARS = 1000


def describe_problems(
    problems: tuple[InvalidSidecar, ...] | list[InvalidSidecar],
    max_chars: int = PROBLEMS_MAX_CHARS,
) -> str:
    """One line naming each problem's JSON path and what the schema wants there, at most about
    ``max_chars`` long (the problems left off are counted): ``invalid reflection.v1 at
    /confidence: ...`` for one problem, ``invalid reflection.v1, 3 problems: /a: ...; /b:
    ...; /c: ...`` for more."""
    if len(problems) == 1:
        (only,) = problems
        return f"invalid reflection.v1 at {only.path}: {only.expected}"
    text = f"invalid reflection.v1, {len(problems)} problems: "
    parts: list[str] = []
    for n, problem in enumerate(problems):
        part = f"{problem.path}: {problem.expected}"
        if parts and len(text) + len("; ".join([*parts, part])) > max_chars:
            return text + "; ".join(parts) + f"; … and {len(problems) - n} more"
        parts.append(part)
    return text + "; ".join(parts)


def check_self_report(obj: Any) -> None:
    """The agent's self-report file: an object with any of the self-report fields."""
    _object(obj, "", _SELF_REPORT_SHAPE, [])


class _Shape:
    """An object's fields with what the checks need, computed once: per field, its name,
    whether the key must be present, the row of a null (one ``None`` per column) and its check
    (see :func:`_check`)."""

    __slots__ = ("allowed", "exact", "fields", "required")

    def __init__(self, fields: tuple[Field, ...], *, all_optional: bool = False) -> None:
        self.fields = tuple(
            (f.name, f.required and not all_optional, _nulls(f), _check(f)) for f in fields
        )
        self.allowed = tuple(f.name for f in fields)
        self.required = tuple(name for name, required, _, _ in self.fields if required)
        # The common case's whole key check: the keys are exactly the fields.
        self.exact = frozenset(self.allowed) if self.required == self.allowed else None


def _nulls(f: Field) -> tuple[None, ...]:
    return (None,) * len(leaves((f,)))  # () for a field without a column


def _object(
    obj: Any, path: str, shape: _Shape, row: list[Any], problems: list[InvalidSidecar] | None = None
) -> None:
    """Check one object and append its leaves to ``row``. ``problems`` None: raise at the
    first problem; a list: append every problem to it and go on (``row`` is then unusable)."""
    if type(obj) is not dict and not isinstance(obj, Mapping):
        raise InvalidSidecar(path, f"an object, got {kind(obj)}")
    if shape.exact is None or obj.keys() != shape.exact:
        _check_keys(obj, path, shape, problems)
    for name, required, nulls, check in shape.fields:
        value = obj.get(name, _ABSENT)
        if value is _ABSENT:
            if not required:  # an absent optional field reads as null
                row.extend(nulls)
            continue  # a missing required property: _check_keys has named it
        if problems is None:
            check(value, row, None)
            continue
        try:
            check(value, row, problems)
        except InvalidSidecar as exc:
            problems.append(exc)


_ABSENT = object()


def _check(f: Field) -> Check:
    """The check of field ``f``'s value, made once from its declaration: it appends the
    field's leaves to the row (see :func:`_object`) or raises naming ``f.path``."""
    check = _CHECKS[f.kind](f)
    if not f.nullable:
        return check
    nulls = _nulls(f)

    def nullable(value: Any, row: list[Any], problems: Problems) -> None:
        if value is None:
            row.extend(nulls)
        else:
            check(value, row, problems)

    return nullable


def _leaf(value_of: Callable[[Any, Field], Any]) -> Callable[[Field], Check]:
    """The check of a field of one column: ``value_of(value, f)`` is the row's value, or it
    raises naming ``f.path``."""

    def make(f: Field) -> Check:
        def check(value: Any, row: list[Any], problems: Problems) -> None:
            row.append(value_of(value, f))

        return check

    return make


def _version(value: Any, f: Field) -> Any:
    if value != SCHEMA_VERSION:
        raise InvalidSidecar(
            f.path,
            f"the literal {SCHEMA_VERSION!r} (got {value!r}; supported versions: "
            f"{', '.join(SUPPORTED_VERSIONS)})",
        )
    return value


def _const(value: Any, f: Field) -> Any:
    if value != f.values[0]:
        raise InvalidSidecar(f.path, f"the literal {f.values[0]!r}, got {value!r}")
    return value


def _text(value: Any, f: Field) -> Any:
    _string(value, f.path, f.min_length)
    return value


def _timestamp(value: Any, f: Field) -> Any:
    _string(value, f.path, 0)
    if not is_utc_timestamp(value):
        raise InvalidSidecar(f.path, "an ISO-8601 UTC time like 2026-01-31T12:00:00Z")
    return value


def _boolean(value: Any, f: Field) -> bool:
    if type(value) is not bool:
        raise InvalidSidecar(f.path, f"a boolean, got {kind(value)}")
    return value


def _object_check(f: Field) -> Check:
    path, shape = f.path, _Shape(f.fields)

    def check(value: Any, row: list[Any], problems: Problems) -> None:
        _object(value, path, shape, row, problems)

    return check


def _oid_check(f: Field) -> Check:
    stored = f.column is not None

    def check(value: Any, row: list[Any], problems: Problems) -> None:
        _string(value, f.path, 0)
        if not is_oid(value):
            raise InvalidSidecar(f.path, _OID_WANTED)
        if stored:
            row.append(value)

    return check


def _oid_array_check(f: Field) -> Check:
    def check(value: Any, row: list[Any], problems: Problems) -> None:
        _array(value, f)
        for i, item in enumerate(value):
            if type(item) is not str or not is_oid(item):
                _string(item, f"{f.path}/{i}", 0)
                raise InvalidSidecar(f"{f.path}/{i}", _OID_WANTED)

    return check


def _object_array_check(f: Field) -> Check:
    shape = _Shape(f.fields)

    def check(value: Any, row: list[Any], problems: Problems) -> None:
        _array(value, f)
        for i, item in enumerate(value):
            _item(item, f, i, shape, problems)

    return check


# --- the shared checks -------------------------------------------------------------------


def _check_keys(
    obj: Any, path: str, shape: _Shape, problems: list[InvalidSidecar] | None = None
) -> None:
    # Unknown keys first, then missing ones: the order JSON Schema validators report them in.
    # Collecting (``problems``), the allowed names are listed once per object.
    listed = False
    for key in obj:
        if key not in shape.allowed:
            allowed = "" if listed else f" (allowed: {', '.join(shape.allowed)})"
            problem = InvalidSidecar(f"{path}/{key}", f"no such property{allowed}")
            if problems is None:
                raise problem
            problems.append(problem)
            listed = True
    for key in shape.required:
        if key not in obj:
            problem = InvalidSidecar(f"{path}/{key}", "a required property, missing")
            if problems is None:
                raise problem
            problems.append(problem)


def _string(value: Any, path: str, min_length: int) -> None:
    if not isinstance(value, str):
        raise InvalidSidecar(path, f"a string, got {kind(value)}")
    if len(value) < min_length:
        raise InvalidSidecar(path, "a non-empty string")


def _unit_number(value: Any, f: Field) -> float:
    """A number in [0, 1] (not a boolean, not NaN)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or isnan(value):
        raise InvalidSidecar(f.path, f"a number in [0, 1], got {kind(value)}")
    if not 0 <= value <= 1:
        raise InvalidSidecar(f.path, f"a number in [0, 1], got {value!r}")
    return float(value)


def _enum(value: Any, f: Field) -> str:
    if not isinstance(value, str) or value not in f.values:
        raise InvalidSidecar(f.path, f"one of {', '.join(f.values)}, got {value!r}")
    return value


def _string_array(value: Any, f: Field) -> list[str]:
    if not isinstance(value, list):
        raise InvalidSidecar(f.path, f"an array of strings, got {kind(value)}")
    if not all(type(item) is str for item in value):
        for i, item in enumerate(value):
            _string(item, f"{f.path}/{i}", 0)
    return list(value)


def _item(
    item: Any, f: Field, i: int, shape: _Shape, problems: list[InvalidSidecar] | None = None
) -> None:
    """Check item ``i`` of the array of objects ``f``; errors name the item's index."""
    found: list[InvalidSidecar] | None = None if problems is None else []
    try:
        _object(item, f"{f.path}/{i}", shape, [], found)
    except InvalidSidecar as exc:
        if found is None:
            raise _at_item(exc, f, i) from None
        found.append(exc)
    if problems is not None and found:
        problems.extend(_at_item(exc, f, i) for exc in found)


def _at_item(exc: InvalidSidecar, f: Field, i: int) -> InvalidSidecar:
    """``exc`` with the path of item ``i`` of ``f`` (the nested fields' paths have no index)."""
    prefix = f.path + "/"
    here = f"{prefix}{i}"  # the item itself is not an object: its path is already right
    if exc.path.startswith(prefix) and exc.path != here and not exc.path.startswith(here + "/"):
        return InvalidSidecar(f"{prefix}{i}/{exc.path[len(prefix) :]}", exc.expected)
    return exc


_OID_WANTED = "a git object id (40 or 64 lowercase hex digits)"


def _array(value: Any, f: Field) -> None:
    if type(value) is not list and not isinstance(value, list):
        raise InvalidSidecar(f.path, f"an array, got {kind(value)}")
    if f.max_items and len(value) > f.max_items:
        raise InvalidSidecar(f.path, f"at most {f.max_items} items, got {len(value)}")


def _positive_integer(value: Any, f: Field) -> int:
    integral = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if isinstance(value, bool) or not integral:
        raise InvalidSidecar(f.path, f"an integer ≥ 1, got {kind(value)}")
    if value < 1:
        raise InvalidSidecar(f.path, f"an integer ≥ 1, got {value!r}")
    return int(value)


def kind(value: Any) -> str:
    """How an error message names the JSON type (and value, for numbers) it got."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


_CHECKS: dict[str, Callable[[Field], Check]] = {
    VERSION: _leaf(_version),
    CONST: _leaf(_const),
    STRING: _leaf(_text),
    TIMESTAMP: _leaf(_timestamp),
    UNIT_NUMBER: _leaf(_unit_number),
    ENUM: _leaf(_enum),
    BOOLEAN: _leaf(_boolean),
    POSITIVE_INTEGER: _leaf(_positive_integer),
    STRING_ARRAY: _leaf(_string_array),
    OBJECT: _object_check,
    OID: _oid_check,
    OID_ARRAY: _oid_array_check,
    OBJECT_ARRAY: _object_array_check,
}
_RECORD_SHAPE = _Shape(RECORD)
_SELF_REPORT_SHAPE = _Shape(SELF_REPORT, all_optional=True)
