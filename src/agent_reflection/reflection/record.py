"""reflection.v1: the typed record, its JSON Schema, and a validator that names the bad field.

Stdlib-only, and all of it made from the declaration in
:mod:`agent_reflection.reflection.fields`:

- **the typed model**: :class:`Reflection`, :class:`SelfReport` and one class per object field
  (named after it: ``Risk``, ``Provenance``, ``MostLikelyWrong``, ``Git``, ``Uncommitted``),
  each a frozen, keyword-only dataclass whose fields are the declared ones, made by
  :func:`model`. Arrays are tuples, an absent optional field is None; ``to_dict`` writes the
  record back in declaration order. The attributes are known at run time only, so to the type
  checker each is ``Any`` (:class:`Record`).
- **the validator**: :func:`validate_sidecar` runs the checks the Stop hook and the loader run
  (:mod:`agent_reflection.reflection.checks`), then builds the model.
- **the JSON Schema** (:func:`json_schema`), shipped as ``data/reflection.v1.schema.json``, the
  contract for other languages; tests prove the file is the generated text and that schema and
  checks agree on every valid and invalid example, down to the JSON path they name.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable, Mapping
from types import GenericAlias
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from agent_reflection.errors import InvalidSidecar
from agent_reflection.reflection import fields as F
from agent_reflection.reflection.checks import check_self_report, reflection_row
from agent_reflection.reflection.fields import OID_PATTERN, SCHEMA_VERSION, TIMESTAMP_PATTERN

R = TypeVar("R", bound="Record")


class Record:
    """A checked reflection.v1 object (the record, its self-report, or one of its objects).

    Subclasses are made by :func:`model`: frozen, keyword-only dataclasses of ``declared``.
    """

    #: The fields of this object, from the declaration.
    declared: ClassVar[tuple[F.Field, ...]] = ()
    #: The class of each object (or array-of-objects) field, by field name.
    objects: ClassVar[dict[str, type[Record]]] = {}

    if TYPE_CHECKING:  # the fields exist at run time only

        def __init__(self, **values: Any) -> None: ...

        def __getattr__(self, name: str) -> Any: ...

    def to_dict(self) -> dict[str, Any]:
        """The object as JSON data, in declaration order; an absent optional field stays out."""
        out: dict[str, Any] = {}
        for f in self.declared:
            value = getattr(self, f.name)
            if value is None and not f.required:
                continue
            if value is None:
                out[f.name] = None
            elif f.kind == F.OBJECT:
                out[f.name] = value.to_dict()
            elif f.kind == F.OBJECT_ARRAY:
                out[f.name] = [item.to_dict() for item in value]
            elif f.kind in (F.STRING_ARRAY, F.OID_ARRAY):
                out[f.name] = list(value)
            else:
                out[f.name] = value
        return out

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    @classmethod
    def from_checked(cls: type[R], obj: Mapping[str, Any]) -> R:
        """The object from JSON data the checks accepted (numbers normalised, lists as
        tuples)."""
        values: dict[str, Any] = {}
        for f in cls.declared:
            value = obj.get(f.name)
            if value is None:
                continue  # the default: None
            if f.kind == F.OBJECT:
                value = cls.objects[f.name].from_checked(value)
            elif f.kind == F.OBJECT_ARRAY:
                value = tuple(cls.objects[f.name].from_checked(item) for item in value)
            elif f.kind in (F.STRING_ARRAY, F.OID_ARRAY):
                value = tuple(value)
            elif f.kind == F.UNIT_NUMBER:
                value = float(value)
            elif f.kind == F.POSITIVE_INTEGER:
                value = int(value)
            values[f.name] = value
        return cls(**values)


def model(
    declared: tuple[F.Field, ...], *, all_optional: bool = False
) -> Callable[[type[R]], type[R]]:
    """Class decorator: the class made a frozen, keyword-only dataclass of the ``declared``
    fields (``all_optional``: every field may be left out, as in the self-report).

    Each field is typed from its kind (``str``, ``float``, ``bool``, ``int``, a tuple for an
    array, a class made the same way for an object, named after the field); a nullable or
    optional field is ``| None`` and defaults to None, the version and constant fields to their
    literal.
    """

    def make(cls: type[R]) -> type[R]:
        annotations: dict[str, Any] = {}
        objects: dict[str, type[Record]] = {}
        for f in declared:
            hint: Any = _TYPES.get(f.kind)
            if f.kind in (F.OBJECT, F.OBJECT_ARRAY):
                name = "".join(part.title() for part in f.name.split("_"))
                inner = type(name, (Record,), {"__doc__": f.description, "__module__": __name__})
                made = objects[f.name] = model(f.fields)(inner)
                hint = made if f.kind == F.OBJECT else GenericAlias(tuple, (made, ...))
            if all_optional or not f.required or f.nullable:
                hint = hint | None
                setattr(cls, f.name, None)
            annotations[f.name] = hint
            if f.kind in (F.VERSION, F.CONST):
                setattr(cls, f.name, f.values[0])
        cls.__annotations__ = annotations
        cls.declared = declared
        cls.objects = objects
        return dataclasses.dataclass(frozen=True, kw_only=True)(cls)

    return make


_TYPES: dict[str, Any] = {
    F.VERSION: str,
    F.CONST: str,
    F.STRING: str,
    F.TIMESTAMP: str,
    F.UNIT_NUMBER: float,
    F.ENUM: str,
    F.BOOLEAN: bool,
    F.POSITIVE_INTEGER: int,
    F.STRING_ARRAY: tuple[str, ...],
    F.OID: str,
    F.OID_ARRAY: tuple[str, ...],
}


@model(F.RECORD)
class Reflection(Record):
    """One reflection.v1 sidecar (:func:`validate_sidecar` makes one from JSON data)."""


@model(F.SELF_REPORT, all_optional=True)
class SelfReport(Record):
    """What the agent says about its own work; every field optional."""


def json_schema(record: tuple[F.Field, ...] = F.RECORD) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of reflection.v1, made from the field declaration."""
    defs: dict[str, Any] = {}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://agent-reflection.invalid/schemas/reflection.v1.schema.json",
        "title": SCHEMA_VERSION,
        "description": "One coding-agent session's end-of-run reflection: mechanical fields "
        "written by the Stop hook, plus the agent's optional self-report.",
        **_object_schema(record, defs, nullable=False),
        "$defs": defs,
    }


def json_schema_text() -> str:
    """:func:`json_schema` as the shipped file's text (a test proves the file is this; write
    it with ``python -m agent_reflection.reflection.record > src/agent_reflection/data/
    reflection.v1.schema.json``)."""
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


def _object_schema(
    fields: tuple[F.Field, ...], defs: dict[str, Any], *, nullable: bool
) -> dict[str, Any]:
    return {
        "type": ["object", "null"] if nullable else "object",
        "additionalProperties": False,
        "required": [f.name for f in fields if f.required],
        "properties": {f.name: _field_schema(f, defs) for f in fields},
    }


_JSON_TYPES = {
    F.STRING: "string",
    F.TIMESTAMP: "string",
    F.UNIT_NUMBER: "number",
    F.BOOLEAN: "boolean",
    F.POSITIVE_INTEGER: "integer",
    F.STRING_ARRAY: "array",
    F.ENUM: "string",
    F.OID: "string",
}


def _field_schema(f: F.Field, defs: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any]
    if f.kind == F.OBJECT:
        out = _object_schema(f.fields, defs, nullable=f.nullable)
    elif f.kind in (F.OID_ARRAY, F.OBJECT_ARRAY):
        items = (
            {"type": "string", "pattern": OID_PATTERN}
            if f.kind == F.OID_ARRAY
            else _object_schema(f.fields, defs, nullable=False)
        )
        out = {"type": "array", "items": items}
        if f.max_items:
            out["maxItems"] = f.max_items
    elif f.kind in (F.VERSION, F.CONST):
        out = {"const": f.values[0]}
    elif f.kind == F.ENUM and f.schema_ref is not None:
        defs[f.schema_ref] = {"type": "string", "enum": list(f.values)}
        ref = {"$ref": f"#/$defs/{f.schema_ref}"}
        out = {"anyOf": [ref, {"type": "null"}]} if f.nullable else ref
    else:
        json_type = _JSON_TYPES[f.kind]
        out = {"type": [json_type, "null"] if f.nullable else json_type}
        if f.kind == F.STRING and f.min_length:
            out["minLength"] = f.min_length
        elif f.kind == F.TIMESTAMP:
            out["pattern"] = TIMESTAMP_PATTERN
        elif f.kind == F.OID:
            out["pattern"] = OID_PATTERN
        elif f.kind == F.UNIT_NUMBER:
            out.update(minimum=0, maximum=1)
        elif f.kind == F.POSITIVE_INTEGER:
            out["minimum"] = 1
        elif f.kind == F.STRING_ARRAY:
            out["items"] = {"type": "string"}
        elif f.kind == F.ENUM:
            out["enum"] = list(f.values)
    if f.description is not None:
        out["description"] = f.description
    return out


def validate_sidecar(obj: Any, *, source: str | None = None) -> Reflection:
    """Return ``obj`` as a :class:`Reflection`, or raise :class:`InvalidSidecar`.

    The error names the JSON path of the first problem in field order (``/risk/score``) and
    what was expected there; ``source`` (a file name) is prefixed to the message when given.
    """
    try:
        reflection_row(obj)
    except InvalidSidecar as exc:
        if source is None:
            raise
        raise InvalidSidecar(exc.path, exc.expected, source=source) from None
    return Reflection.from_checked(obj)


def parse_self_report(obj: Any) -> SelfReport:
    """The agent's self-report file: an object with any of the self-report fields.

    Raises :class:`InvalidSidecar` (path relative to the input file) on the wrong shape.
    """
    check_self_report(obj)
    return SelfReport.from_checked(obj)


if __name__ == "__main__":
    sys.stdout.write(json_schema_text())
