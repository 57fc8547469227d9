"""reflection.v1 declared once: every field of the record, in schema order.

Everything else is made from :data:`RECORD`: the checks the Stop hook and the loader run
(:mod:`agent_reflection.reflection.checks`), the typed model and the JSON Schema
(:mod:`agent_reflection.reflection.record`; the schema is shipped as
``data/reflection.v1.schema.json``), the ``reflections`` columns of the DDL and the inserts
(:mod:`agent_reflection.reflection.columns`), the loader's row
(:mod:`agent_reflection.load.sidecars.rows`). Adding a field is one :class:`Field` here, the
hook code that fills it (nothing for a self-report field) and a test; docs/capture.md, "Adding
a field", lists the steps.

Import-light on purpose (the Stop hook imports it on every stop): no ``typing`` or
``dataclasses``.
"""

from __future__ import annotations

SCHEMA_VERSION = "reflection.v1"
SUPPORTED_VERSIONS: tuple[str, ...] = (SCHEMA_VERSION,)
SURFACE_VALUES: tuple[str, ...] = ("auth", "data", "infra", "ui", "build", "test", "docs", "none")
REFLECTION_MODES: tuple[str, ...] = ("off", "solo", "orchestrated")
#: ISO-8601 UTC (a trailing Z or +00:00).
TIMESTAMP_PATTERN = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?(Z|\+00:00)$"
)
#: A git object id (SHA-1 or SHA-256).
OID_PATTERN = r"^([0-9a-f]{40}|[0-9a-f]{64})$"

# What a field holds (Field.kind); the checks, the model, the schema and the columns follow it.
VERSION = "version"  # the literal SCHEMA_VERSION (readers reject other versions)
CONST = "const"  # the literal Field.values[0]
STRING = "string"  # a string of at least Field.min_length characters
TIMESTAMP = "timestamp"  # a string matching TIMESTAMP_PATTERN
UNIT_NUMBER = "unit_number"  # a number in [0, 1] (not a boolean, not NaN); stored as a float
ENUM = "enum"  # one of Field.values (strings)
BOOLEAN = "boolean"
POSITIVE_INTEGER = "positive_integer"  # an integer >= 1 (an integral float too); stored as int
STRING_ARRAY = "string_array"  # an array of strings
OBJECT = "object"  # an object with exactly Field.fields (the required ones at least)
OID = "oid"  # a git object id: 40 (SHA-1) or 64 (SHA-256) lowercase hex digits
OID_ARRAY = "oid_array"  # an array of git object ids, at most Field.max_items
OBJECT_ARRAY = "object_array"  # an array of objects of Field.fields, at most Field.max_items
#: Kinds kept in the stored JSON only: no ``reflections`` column (readers take the lists from
#: ``raw``); the fields of their objects have no column either.
UNSTORED_KINDS = (OID_ARRAY, OBJECT_ARRAY)
#: The ``reflections`` column type of each stored kind.
DDL_TYPES = {
    VERSION: "VARCHAR",
    CONST: "VARCHAR",
    STRING: "VARCHAR",
    TIMESTAMP: "TIMESTAMPTZ",
    UNIT_NUMBER: "DOUBLE",
    ENUM: "VARCHAR",
    BOOLEAN: "BOOLEAN",
    POSITIVE_INTEGER: "INTEGER",
    STRING_ARRAY: "VARCHAR[]",
    OID: "VARCHAR",
}
#: Every kind: the stored ones, objects, and the kinds kept in the JSON only.
KINDS = (*DDL_TYPES, OBJECT, *UNSTORED_KINDS)


class Field:
    """One field of the record (or of one of its objects).

    ``required``: the key must be present (``nullable`` then says whether it may be null; an
    absent optional key reads as null). ``self_report``: the agent may supply it in its
    self-report file. ``column``: the ``reflections`` column a leaf lands in (default: its
    name; an object's leaves land in their own columns; the object has none, nor has an array
    of :data:`UNSTORED_KINDS` or anything inside one), of type ``ddl_type`` (from the kind,
    :data:`DDL_TYPES`), ``NOT NULL`` when ``not_null`` (it and every object above it required
    and not nullable), added to an existing table when ``may_be_absent`` (it or an object above
    it optional: only such a field can join reflection.v1 after its first release, since the
    sidecars written before lack it); both set by :func:`declare`. ``max_items``: an array's
    longest length (0: unbounded). ``schema_ref``: the JSON Schema ``$defs`` name an enum
    shares. ``description``: the schema's one-line text.
    """

    def __init__(
        self,
        name: str,
        kind: str,
        *,
        required: bool = True,
        nullable: bool = False,
        self_report: bool = False,
        values: tuple[str, ...] = (),
        min_length: int = 0,
        max_items: int = 0,
        fields: tuple[Field, ...] = (),
        column: str | None = None,
        schema_ref: str | None = None,
        description: str | None = None,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"reflection field {name!r}: unknown kind {kind!r}")
        self.name = name
        self.kind = kind
        self.required = required
        self.nullable = nullable
        self.self_report = self_report
        self.values = values
        self.min_length = min_length
        self.max_items = max_items
        self.fields = fields
        if kind == OBJECT_ARRAY:
            _unstore(fields)
        self.column = None if kind == OBJECT or kind in UNSTORED_KINDS else (column or name)
        self.ddl_type = DDL_TYPES.get(kind, "")
        self.not_null = required and not nullable  # made path-wide by declare
        self.may_be_absent = not required  # likewise
        self.schema_ref = schema_ref
        self.description = description
        self.path = "/" + name  # made absolute for nested fields by declare

    def __repr__(self) -> str:
        return f"Field({self.path!r}, {self.kind!r})"


def _unstore(fields: tuple[Field, ...]) -> None:
    """The fields inside an array of objects hold no column (the array lives in ``raw``)."""
    for f in fields:
        f.column = None
        _unstore(f.fields)


#: ``provenance.self_report_text`` keeps at most this many characters of an unusable report.
MAX_KEPT_SELF_REPORT_CHARS = 16_384
#: ``git.commits`` holds at most this many commits (the newest, when the session made more).
MAX_SESSION_COMMITS = 200
#: ``git.uncommitted`` holds at most this many files (the first in path order, when more).
MAX_UNCOMMITTED_FILES = 500


def declare(fields: tuple[Field, ...]) -> tuple[Field, ...]:
    """``fields`` as a record's top level: each nested field's ``path``, ``not_null`` and
    ``may_be_absent`` set from the objects above it."""
    _set_paths(fields, "", True, False)
    return fields


def _set_paths(fields: tuple[Field, ...], parent: str, not_null: bool, absent: bool) -> None:
    for f in fields:
        f.path = f"{parent}/{f.name}"
        f.not_null = not_null and f.required and not f.nullable
        f.may_be_absent = absent or not f.required
        _set_paths(f.fields, f.path, f.not_null, f.may_be_absent)


RECORD: tuple[Field, ...] = declare(
    (
        Field(
            "schema",
            VERSION,
            values=(SCHEMA_VERSION,),
            column="schema_version",
            description="Record version; readers reject others.",
        ),
        Field(
            "task_ref",
            STRING,
            min_length=1,
            description="Canonical task reference: REFLECTION_TASK_REF, else <repo>@<branch>.",
        ),
        Field(
            "agent",
            STRING,
            min_length=1,
            description="Persona or runtime id: REFLECTION_AGENT, else 'unknown'.",
        ),
        Field(
            "session_id",
            STRING,
            min_length=1,
            description="The Stop payload's session_id, else 'unknown'.",
        ),
        Field(
            "timestamp",
            TIMESTAMP,
            description="ISO-8601 UTC (a trailing Z or +00:00).",
        ),
        Field(
            "repo",
            STRING,
            min_length=1,
            description="Basename of the repository root.",
        ),
        Field(
            "confidence",
            UNIT_NUMBER,
            nullable=True,
            self_report=True,
            description="SELF-REPORTED probability that the work is right; null when not supplied.",
        ),
        Field(
            "most_likely_wrong",
            OBJECT,
            nullable=True,
            self_report=True,
            description="SELF-REPORTED most likely way the work is wrong; null when not supplied.",
            fields=(
                Field(
                    "surface",
                    ENUM,
                    values=SURFACE_VALUES,
                    schema_ref="surface",
                    column="mlw_surface",
                ),
                Field("description", STRING, column="mlw_description"),
            ),
        ),
        Field(
            "known_not_in_diff",
            STRING,
            nullable=True,
            self_report=True,
            description="SELF-REPORTED: what the agent knows that is not visible in the diff.",
        ),
        Field(
            "risk",
            OBJECT,
            description="MECHANICAL: the deterministic review risk floor of the change surface.",
            fields=(
                Field("needs_review", BOOLEAN, column="risk_needs_review"),
                Field("score", UNIT_NUMBER, column="risk_score"),
                Field(
                    "surface",
                    ENUM,
                    values=SURFACE_VALUES,
                    schema_ref="surface",
                    column="risk_surface",
                ),
                Field("reason", STRING, column="risk_reason"),
            ),
        ),
        Field(
            "files_changed",
            STRING_ARRAY,
            description="MECHANICAL: paths changed in the session (committed, staged, unstaged, "
            "untracked).",
        ),
        Field(
            "provenance",
            OBJECT,
            fields=(
                Field("source", CONST, values=("stop-hook",)),
                Field("reflection_attempt", POSITIVE_INTEGER),
                Field(
                    "degraded",
                    BOOLEAN,
                    description="True when the self-report was missing or unreadable, or a "
                    "mechanical step failed.",
                ),
                Field("reflection_mode", ENUM, values=REFLECTION_MODES),
                # Added after the first release: optional (older sidecars lack them).
                Field(
                    "self_report_problem",
                    STRING,
                    required=False,
                    min_length=1,
                    description="Why the agent's self-report was not used: no file, "
                    "unreadable, not JSON, wrong shape (with the JSON path) or empty; absent "
                    "when it was used.",
                ),
                Field(
                    "self_report_text",
                    STRING,
                    required=False,
                    description="The self-report file's text when it was there but could not "
                    f"be used (its first {MAX_KEPT_SELF_REPORT_CHARS:,} characters), kept so "
                    "the team can see what the agent wrote.",
                ),
            ),
        ),
        # Added after the first release: optional, so older sidecars and readers keep working
        # (its columns are added by ALTER TABLE, hence last).
        Field(
            "git",
            OBJECT,
            required=False,
            description="MECHANICAL: what the session did in git (absent in older sidecars and "
            "outside a git work tree).",
            fields=(
                Field(
                    "branch",
                    STRING,
                    nullable=True,
                    min_length=1,
                    column="git_branch",
                    description="The branch checked out at stop; null when HEAD is detached.",
                ),
                Field(
                    "head_start",
                    OID,
                    nullable=True,
                    column="git_head_start",
                    description="HEAD when the session started (SessionStart hook); null unknown.",
                ),
                Field(
                    "head_stop",
                    OID,
                    nullable=True,
                    column="git_head_stop",
                    description="HEAD at stop; null before the first commit.",
                ),
                Field(
                    "commits",
                    OID_ARRAY,
                    max_items=MAX_SESSION_COMMITS,
                    description="git rev-list --reverse head_start..head_stop: the commits made "
                    "during the session, oldest first (the newest 200 when more).",
                ),
                Field(
                    "uncommitted",
                    OBJECT_ARRAY,
                    max_items=MAX_UNCOMMITTED_FILES,
                    description="Files changed and not committed at stop (tracked or untracked, "
                    "not ignored), with the blob id of the work-tree file (null: deleted).",
                    fields=(
                        Field(
                            "path",
                            STRING,
                            min_length=1,
                            description="Relative to the repository root, '/'-separated.",
                        ),
                        Field(
                            "blob",
                            OID,
                            nullable=True,
                            description="git hash-object of the work-tree file; null when deleted.",
                        ),
                    ),
                ),
            ),
        ),
    )
)


def leaves(fields: tuple[Field, ...] = RECORD) -> tuple[Field, ...]:
    """The fields that hold a column, depth first in declaration order (the row's order)."""
    out: list[Field] = []
    for f in fields:
        if f.kind == OBJECT:
            out.extend(leaves(f.fields))
        elif f.column is not None:
            out.append(f)
    return tuple(out)


FIELDS: tuple[str, ...] = tuple(f.name for f in RECORD)
SELF_REPORT: tuple[Field, ...] = tuple(f for f in RECORD if f.self_report)
SELF_REPORT_FIELDS: tuple[str, ...] = tuple(f.name for f in SELF_REPORT)
#: The ``reflections`` columns the record fills, in row order.
ROW_COLUMNS: tuple[str, ...] = tuple(f.column or "" for f in leaves())
