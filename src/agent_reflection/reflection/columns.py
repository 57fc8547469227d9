"""The ``reflections`` table's record columns, made from the reflection.v1 declaration.

The SQL stays in its named files; where a statement lists the record's columns, the file holds
a placeholder that :func:`render` fills from :data:`~agent_reflection.reflection.fields.RECORD`
(one column per stored leaf, in declaration order, named and typed by the declaration):

- ``{{reflection columns}}``: the ``CREATE TABLE`` lines, ``"column" TYPE`` plus ``NOT NULL``
  where the field and every object above it are required and not nullable;
- ``{{reflection added column}}``: ``"column" TYPE``; the line holding it is repeated for
  each column of a field that may be absent (it or an object above it optional). With
  ``ALTER TABLE reflections ADD COLUMN IF NOT EXISTS`` around it, a database made before such
  a field was declared gains its column (nullable: its rows predate the field). Only such
  fields can join reflection.v1 after its first release: the sidecars written before lack
  them (``tests/test_reflection_fields.py`` holds the first release's columns to that rule).
  An ``ALTER`` for every column would cost each new database about 8 ms more (the whole
  schema: 39 against 32 ms, medians, load average 6.6);
- ``{{reflection column names}}``: the column list of an insert;
- ``{{reflection batch values}}``: each column read from the loader's batch (``b``), cast to
  its type.

:func:`agent_reflection.store.db.schema_files` renders the DDL files (so the schema digest
changes with the declaration and an existing database is upgraded), the sidecar loader its
insert.
"""

from __future__ import annotations

from agent_reflection.reflection import fields as F

__all__ = ["render"]


def render(sql: str, record: tuple[F.Field, ...] = F.RECORD) -> str:
    """``sql`` with every placeholder above replaced by the columns of ``record``."""
    stored = F.leaves(record)
    lines: list[str] = []
    for line in sql.splitlines(keepends=True):
        if "{{reflection added column}}" in line:
            lines.extend(
                line.replace("{{reflection added column}}", f"{_quoted(f.column)} {f.ddl_type}")
                for f in stored
                if f.may_be_absent
            )
        else:
            lines.append(line)
    return (
        "".join(lines)
        .replace(
            "{{reflection columns}}",
            "\n    ".join(
                f"{_quoted(f.column):<22} {f.ddl_type}{' NOT NULL' if f.not_null else ''},"
                for f in stored
            ),
        )
        .replace("{{reflection column names}}", ", ".join(_quoted(f.column) for f in stored))
        .replace(
            "{{reflection batch values}}",
            ", ".join(f"CAST(b.{_quoted(f.column)} AS {f.ddl_type})" for f in stored),
        )
    )


def _quoted(column: str | None) -> str:
    return f'"{column}"'
