"""reflection.v1 checks on plain dicts, driven by the declaration in
:mod:`agent_reflection.reflection.fields`.

One validator, :func:`reflection_row`: it returns the record's ``reflections`` row (the leaf
values in declaration order, numbers normalised) or raises
:class:`~agent_reflection.errors.InvalidSidecar` naming the JSON path of the first problem and
what the schema wants there. The Stop hook runs it (as :func:`check_reflection`) on the dict it
is about to write, the loader on every file it reads, and
:func:`agent_reflection.reflection.record.validate_sidecar` before building the typed model.
:func:`record_problems` runs the same checks without stopping: every problem of a rejected
record (the loader's rejection reason, worded by :func:`describe_problems`).
Each field is first tried on its common valid shape inline; only a value failing that goes
through the field's wording check, which either accepts it (an unusual but valid value, such as
an integral float attempt) or raises with the precise reason.

Import-light on purpose (no ``typing``, ``dataclasses``, ``re`` or ``json``): every agent stop
pays for what the hook imports.
"""

from __future__ import annotations

# collections.abc.Mapping itself: _collections_abc is loaded at every interpreter start, while
# importing collections.abc would first import collections (~4 ms per stop).
from _collections_abc import Mapping
from math import isnan

from agent_reflection.errors import InvalidSidecar
from agent_reflection.reflection.fields import (
    BOOLEAN,
    CONST,
    ENUM,
    FIELDS,
    OBJECT,
    OBJECT_ARRAY,
    OID,
    OID_ARRAY,
    OID_PATTERN,
    POSITIVE_INTEGER,
    RECORD,
    REFLECTION_MODES,
    SCHEMA_VERSION,
    SELF_REPORT,
    SELF_REPORT_FIELDS,
    STRING,
    STRING_ARRAY,
    SUPPORTED_VERSIONS,
    SURFACE_VALUES,
    TIMESTAMP,
    TIMESTAMP_PATTERN,
    UNIT_NUMBER,
    VERSION,
    Field,
    leaves,
)

TYPE_CHECKING = False  # not imported from typing: the hook must not pay for typing at start
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = [
    "FIELDS",
    "REFLECTION_MODES",
    "SCHEMA_VERSION",
    "SELF_REPORT_FIELDS",
    "SUPPORTED_VERSIONS",
    "SURFACE_VALUES",
    "check_reflection",
    "check_self_report",
    "checked_row",
    "describe_problems",
    "fast_row",
    "is_oid",
    "is_utc_timestamp",
    "kind",
    "record_problems",
    "reflection_row",
]

_DIGIT_SPANS = ((0, 4), (5, 7), (8, 10), (11, 13), (14, 16), (17, 19))


def is_utc_timestamp(text: str) -> bool:
    """True for ``2026-01-31T12:00:00Z`` (optional ``.fraction`` of 1–9 digits, ``Z`` or
    ``+00:00``): the schema's timestamp pattern, checked without importing ``re``.

    Accepts exactly what ``record.TIMESTAMP_RE.match`` accepts (a test proves it), including
    that pattern's ``$`` letting one trailing newline through.
    """
    if text.endswith("\n"):
        text = text[:-1]
    if text.endswith("Z"):
        body = text[:-1]
    elif text.endswith("+00:00"):
        body = text[:-6]
    else:
        return False
    # str.isdigit alone also takes non-ASCII digits; with isascii it means [0-9] only.
    if len(body) < 19 or not body.isascii():
        return False
    if body[4] != "-" or body[7] != "-" or body[10] != "T" or body[13] != ":" or body[16] != ":":
        return False
    for start, end in _DIGIT_SPANS:
        if not body[start:end].isdigit():
            return False
    fraction = body[19:]
    if not fraction:
        return True
    return fraction[0] == "." and 2 <= len(fraction) <= 10 and fraction[1:].isdigit()


_HEX = frozenset("0123456789abcdef")


def is_oid(text: str) -> bool:
    """True for a git object id, 40 or 64 lowercase hex digits: the schema's oid pattern,
    checked without importing ``re`` (its ``$`` lets one trailing newline through, as
    :func:`is_utc_timestamp` does; a test proves they agree)."""
    if text.endswith("\n"):
        text = text[:-1]
    return (len(text) == 40 or len(text) == 64) and _HEX.issuperset(text)


def check_reflection(obj: Any) -> None:
    """Raise :class:`InvalidSidecar` unless ``obj`` is a valid reflection.v1 record."""
    checked_row(obj)


def reflection_row(obj: Any) -> tuple[Any, ...]:
    """The ``reflections`` row of a valid record (:data:`fields.ROW_COLUMNS` order), or raise
    :class:`InvalidSidecar` at the first problem in field order.

    The loader's entry point: the common valid record is accepted by :func:`fast_row`; anything
    else goes through the field-by-field checks, which word the error (or accept a valid but
    unusual value, such as an integral float ``reflection_attempt``).
    """
    row = (_FAST_ROW or _compile_fast_row())(obj)
    if row is not None:
        return row
    return checked_row(obj)


def checked_row(obj: Any) -> tuple[Any, ...]:
    """:func:`reflection_row` by the field-by-field checks alone (what the Stop hook runs:
    one record per process does not repay compiling :func:`fast_row`)."""
    out: list[Any] = []
    _object(obj, "", _RECORD_SHAPE, out)
    return tuple(out)


def record_problems(obj: Any) -> tuple[InvalidSidecar, ...]:
    """Every problem of a reflection.v1 record, in the order :func:`checked_row` meets them
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


def fast_row(obj: Any) -> tuple[Any, ...] | None:
    """The row of a record in its common valid shape (exact ``dict``/``list``/``str`` types, as
    ``json.loads`` makes them), else ``None``: "not sure", never "invalid". Compiled from the
    declaration on first use; a test proves it never accepts what :func:`checked_row` rejects
    and that the rows agree."""
    return (_FAST_ROW or _compile_fast_row())(obj)


def check_self_report(obj: Any) -> None:
    """The agent's self-report file: an object with any of the self-report fields."""
    _object(obj, "", _SELF_REPORT_SHAPE, [])


class _Shape:
    """An object's fields with what the checks need, computed once: per field, its
    :class:`Field`, the shape of its value if an object, whether the key must be present, and
    the row of a null (one ``None`` per column)."""

    __slots__ = ("allowed", "exact", "fields", "required")

    def __init__(self, fields: tuple[Field, ...], *, all_optional: bool = False) -> None:
        self.fields = tuple(
            (
                f,
                _Shape(f.fields) if f.kind in (OBJECT, OBJECT_ARRAY) else None,
                f.required and not all_optional,
                (None,) * len(leaves((f,))),  # () for a field without a column
            )
            for f in fields
        )
        self.allowed = tuple(f.name for f in fields)
        self.required = tuple(f.name for f, _, required, _ in self.fields if required)
        # The common case's whole key check: the keys are exactly the fields.
        self.exact = frozenset(self.allowed) if self.required == self.allowed else None


_RECORD_SHAPE = _Shape(RECORD)
_SELF_REPORT_SHAPE = _Shape(SELF_REPORT, all_optional=True)


def _object(
    obj: Any, path: str, shape: _Shape, row: list[Any], problems: list[InvalidSidecar] | None = None
) -> None:
    """Check one object and append its leaves to ``row``. ``problems`` None: raise at the
    first problem; a list: append every problem to it and go on (``row`` is then unusable)."""
    if type(obj) is not dict and not isinstance(obj, Mapping):
        raise InvalidSidecar(path, f"an object, got {kind(obj)}")
    if shape.exact is None or obj.keys() != shape.exact:
        _check_keys(obj, path, shape, problems)
    for f, inner, required, nulls in shape.fields:
        if required or f.name in obj:
            if problems is not None and f.name not in obj:
                continue  # a missing required property: already in problems
            value = obj[f.name]
        else:  # an absent optional field reads as null
            row.extend(nulls)
            continue
        if problems is None:
            _value(f, inner, nulls, value, row, None)
            continue
        try:
            _value(f, inner, nulls, value, row, problems)
        except InvalidSidecar as exc:
            problems.append(exc)


def _value(
    f: Field,
    inner: _Shape | None,
    nulls: tuple[None, ...],
    value: Any,
    row: list[Any],
    problems: list[InvalidSidecar] | None,
) -> None:
    """Check the value of field ``f`` and append its leaves to ``row`` (see :func:`_object`)."""
    k = f.kind
    if value is None and f.nullable:
        row.extend(nulls)
    elif k == STRING:
        if type(value) is not str or len(value) < f.min_length:
            _string(value, f.path, f.min_length)
        row.append(value)
    elif k == UNIT_NUMBER:
        t = type(value)
        if (t is float or t is int) and 0 <= value <= 1:
            row.append(float(value))
        else:
            row.append(_unit_number(value, f.path))
    elif k == ENUM:
        if type(value) is not str or value not in f.values:
            _enum(value, f)
        row.append(value)
    elif k == BOOLEAN:
        if type(value) is not bool:
            raise InvalidSidecar(f.path, f"a boolean, got {kind(value)}")
        row.append(value)
    elif k == OBJECT:
        _object(value, f.path, inner, row, problems)  # type: ignore[arg-type]
    elif k == TIMESTAMP:
        if type(value) is not str:
            _string(value, f.path, 0)
        if not is_utc_timestamp(value):
            raise InvalidSidecar(f.path, "an ISO-8601 UTC time like 2026-01-31T12:00:00Z")
        row.append(value)
    elif k == STRING_ARRAY:
        row.append(_string_array(value, f.path))
    elif k == OID:
        if type(value) is not str:
            _string(value, f.path, 0)
        if not is_oid(value):
            raise InvalidSidecar(f.path, _OID_WANTED)
        if f.column is not None:
            row.append(value)
    elif k == OID_ARRAY:
        _array(value, f)
        for i, item in enumerate(value):
            if type(item) is not str or not is_oid(item):
                _string(item, f"{f.path}/{i}", 0)
                raise InvalidSidecar(f"{f.path}/{i}", _OID_WANTED)
    elif k == OBJECT_ARRAY:
        _array(value, f)
        for i, item in enumerate(value):
            _item(item, f, i, inner, problems)  # type: ignore[arg-type]
    elif k == POSITIVE_INTEGER:
        if type(value) is int and value >= 1:
            row.append(value)
        else:
            row.append(_positive_integer(value, f.path))
    elif k == VERSION:
        if value != SCHEMA_VERSION:
            raise InvalidSidecar(
                f.path,
                f"the literal {SCHEMA_VERSION!r} (got {value!r}; supported versions: "
                f"{', '.join(SUPPORTED_VERSIONS)})",
            )
        row.append(value)
    elif k == CONST:
        if value != f.values[0]:
            raise InvalidSidecar(f.path, f"the literal {f.values[0]!r}, got {value!r}")
        row.append(value)
    else:  # pragma: no cover - fields.Field refuses unknown kinds
        raise AssertionError(f"no check for {f!r}")


# --- the wording checks: reached only when a value is not in its common valid shape --------


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


def _unit_number(value: Any, path: str) -> float:
    """A number in [0, 1] (not a boolean, not NaN)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or isnan(value):
        raise InvalidSidecar(path, f"a number in [0, 1], got {kind(value)}")
    if not 0 <= value <= 1:
        raise InvalidSidecar(path, f"a number in [0, 1], got {value!r}")
    return float(value)


def _enum(value: Any, f: Field) -> None:
    if value not in f.values or not isinstance(value, str):
        raise InvalidSidecar(f.path, f"one of {', '.join(f.values)}, got {value!r}")


def _string_array(value: Any, path: str) -> list[str]:
    if type(value) is not list and not isinstance(value, list):
        raise InvalidSidecar(path, f"an array of strings, got {kind(value)}")
    for v in value:
        if type(v) is not str:
            for i, item in enumerate(value):
                _string(item, f"{path}/{i}", 0)
            break
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


def _positive_integer(value: Any, path: str) -> int:
    integral = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if isinstance(value, bool) or not integral:
        raise InvalidSidecar(path, f"an integer ≥ 1, got {kind(value)}")
    if value < 1:
        raise InvalidSidecar(path, f"an integer ≥ 1, got {value!r}")
    return int(value)


# --- fast_row: the declaration's checks as straight-line code ------------------------------

_FAST_ROW: Callable[[Any], tuple[Any, ...] | None] | None = None


def _compile_fast_row() -> Callable[[Any], tuple[Any, ...] | None]:
    """Make :func:`fast_row`'s code from :data:`fields.RECORD`, once per process.

    Straight-line code runs the loader's ~20 checks per record about twice as fast as the
    loop in :func:`_object`; the loop stays the reference (and words every error).
    """
    global _FAST_ROW
    import re  # here, not at the top: the Stop hook never compiles fast_row

    lines = ["def fast_row(obj):"]
    names: dict[str, Any] = {
        "_ts": re.compile(TIMESTAMP_PATTERN).match,
        "_oid": re.compile(OID_PATTERN).match,
        "_absent": object(),
    }
    values = _fast_object(RECORD, "obj", lines, 1, names)
    lines.append(f"    return ({', '.join(values)},)")
    exec(compile("\n".join(lines), "<reflection.v1 fast_row>", "exec"), names)
    _FAST_ROW = names["fast_row"]
    return _FAST_ROW


def _fast_object(
    fields: tuple[Field, ...], var: str, lines: list[str], depth: int, names: dict[str, Any]
) -> list[str]:
    """Append the checks of one object held in ``var``; return the row's value expressions."""
    pad = "    " * depth
    shape = _Shape(fields)
    key = f"_k{len(names)}"
    if shape.exact is not None:
        names[key] = shape.exact
        lines.append(f"{pad}if type({var}) is not dict or {var}.keys() != {key}: return None")
    else:
        names[key], names[key + "r"] = frozenset(shape.allowed), frozenset(shape.required)
        lines.append(
            f"{pad}if type({var}) is not dict or not ({var}.keys() <= {key} and "
            f"{key}r <= {var}.keys()): return None"
        )
    values: list[str] = []
    for f, _, required, _ in shape.fields:
        v = f"{var}_{f.name}"
        if f.kind == OBJECT:
            values.extend(_fast_inner_object(f, v, var, required, lines, depth, names))
            continue
        test, value = _fast_test(f, v, names)
        stored = f.column is not None
        if not (f.nullable or not required):
            lines.append(f"{pad}{v} = {var}[{f.name!r}]")
            lines.append(f"{pad}if not ({test}): return None")
            if stored:
                values.append(value)
            continue
        if required:
            lines.append(f"{pad}{v} = {var}[{f.name!r}]")
            lines.append(f"{pad}if {v} is not None and not ({test}): return None")
        else:  # absent reads as null; a null present must be allowed
            lines.append(f"{pad}{v} = {var}.get({f.name!r}, _absent)")
            lines.append(f"{pad}if {v} is _absent: {v} = None")
            allowed = f"{v} is not None and " if f.nullable else ""
            lines.append(f"{pad}elif {allowed}not ({test}): return None")
        if stored:
            values.append(value if value == v else f"(None if {v} is None else {value})")
    return values


def _fast_inner_object(
    f: Field,
    v: str,
    var: str,
    required: bool,
    lines: list[str],
    depth: int,
    names: dict[str, Any],
) -> list[str]:
    """The checks of object field ``f`` of ``var``; its leaves are None when it is null or
    (optional) absent."""
    pad = "    " * depth
    lines.append(f"{pad}{v} = {var}.get({f.name!r}, _absent)")
    if required:
        lines.append(f"{pad}if {v} is _absent: return None")
    none_when = [f"{v} is _absent"] if not required else []
    if f.nullable:
        none_when.append(f"{v} is None")
    inner_depth = depth + 1 if none_when else depth
    inner_lines: list[str] = []
    inner = _fast_object(f.fields, v, inner_lines, inner_depth, names)
    leaf_vars = [f"{v}__{i}" for i in range(len(inner))]
    if none_when:
        nulls = f"{' = '.join(leaf_vars)} = None" if leaf_vars else "pass"
        lines.append(f"{pad}if {' or '.join(none_when)}: {nulls}")
        lines.append(f"{pad}else:")
    lines.extend(inner_lines)
    in_pad = "    " * inner_depth
    lines.extend(f"{in_pad}{lv} = {e}" for lv, e in zip(leaf_vars, inner, strict=True))
    if none_when and not inner_lines:
        lines.append(f"{in_pad}pass")
    return leaf_vars


def _fast_test(f: Field, v: str, names: dict[str, Any]) -> tuple[str, str]:
    """A field's common-shape test on variable ``v`` and the expression of its row value."""
    k = f.kind
    if k in (VERSION, CONST):
        return f"{v} == {f.values[0]!r}", v
    if k == STRING:
        test = f"type({v}) is str"
        return (f"{test} and len({v}) >= {f.min_length}" if f.min_length else test), v
    if k == TIMESTAMP:
        return f"type({v}) is str and _ts({v})", v
    if k == UNIT_NUMBER:
        return f"(type({v}) is float or type({v}) is int) and 0 <= {v} <= 1", f"float({v})"
    if k == ENUM:
        names[f"_e{len(names)}"] = frozenset(f.values)
        return f"type({v}) is str and {v} in _e{len(names) - 1}", v
    if k == BOOLEAN:
        return f"type({v}) is bool", v
    if k == POSITIVE_INTEGER:  # an integral float too, as the schema's "integer" allows
        test = f"type({v}) is int or (type({v}) is float and {v}.is_integer())"
        return f"({test}) and {v} >= 1", f"int({v})"
    if k == STRING_ARRAY:
        return f"type({v}) is list and all(type(x) is str for x in {v})", f"list({v})"
    if k == OID:
        return f"type({v}) is str and _oid({v})", v
    longest = f" and len({v}) <= {f.max_items}" if f.max_items else ""
    if k == OID_ARRAY:
        return f"type({v}) is list{longest} and all(type(x) is str and _oid(x) for x in {v})", v
    if k == OBJECT_ARRAY:  # one compiled check per item, returning True or None
        item = f"_item{len(names)}"
        item_lines = [f"def {item}(x):"]
        _fast_object(f.fields, "x", item_lines, 1, names)
        item_lines.append("    return True")
        exec(compile("\n".join(item_lines), f"<reflection.v1 {f.path} item>", "exec"), names)
        return f"type({v}) is list{longest} and all({item}(x) for x in {v})", v
    raise AssertionError(f"no fast check for {f!r}")  # pragma: no cover


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
