"""The generic board formats: CSV (header row) and JSONL (one object per line).

Columns/keys default to our field names (:data:`FIELDS`); ``--map FIELD=COLUMN`` (or a
mapping file) renames them. Only ``task_ref`` is required. ``labels`` is a list (JSONL) or
one cell separated by ``,`` ``;`` or ``|``. JSONL records may also carry ``events``
(``[{"at", "kind", "detail", "actor"}]``) and ``links``
(``[{"target_ref", "kind", "direction", "phrase"}]``). Timestamps: ISO-8601 (naive = UTC),
epoch seconds/milliseconds, or Jira's ``19/Jul/11 9:32 PM``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from agent_reflection.load.board.fields import as_dict, as_list, labels_of, opt_str
from agent_reflection.load.board.model import (
    Notice,
    ParseOptions,
    RecordError,
    Rejected,
    Task,
    TaskEvent,
    TaskLink,
)
from agent_reflection.load.board.source import (
    BoardFormatError,
    ProgressFn,
    RecordParser,
    csv_tasks,
    json_items,
)
from agent_reflection.load.board.timeparse import parse_time

#: Our field names, which are also the default column names.
FIELDS = (
    "task_ref",
    "id",
    "title",
    "kind",
    "category",
    "project",
    "status",
    "resolution",
    "priority",
    "created_at",
    "completed_at",
    "updated_on",
    "labels",
    "events",
    "links",
)


def check_mapping(mapping: Mapping[str, str]) -> dict[str, str]:
    """The full field -> column mapping (defaults filled in); unknown fields are an error."""
    unknown = sorted(set(mapping) - set(FIELDS))
    if unknown:
        raise BoardFormatError(
            f"unknown field(s) in --map: {unknown}; the fields are: {', '.join(FIELDS)}"
        )
    return {f: mapping.get(f, f) for f in FIELDS}


def parse_csv(
    path: Path, options: ParseOptions, progress: ProgressFn | None = None
) -> Iterator[Task | Rejected | Notice]:
    """Every task of a generic CSV export (header row; ``,`` ``;`` or tab separated)."""
    mapping = check_mapping(options.mapping)
    origin = options.origin or path.name

    def row_parser(header: list[str]) -> RecordParser:
        _check_header(path, header, mapping, set(options.mapping))
        return lambda row, where: generic_task(
            dict(zip(header, row, strict=True)), mapping, "csv", origin, where
        )

    yield from csv_tasks(path, progress, options.encoding, row_parser)


def _check_header(
    path: Path, header: list[str], mapping: dict[str, str], explicit: set[str]
) -> None:
    wanted = {"task_ref"} | explicit
    missing = {f: mapping[f] for f in sorted(wanted) if mapping[f] not in header}
    if not missing:
        return
    hints = [
        f"--map {ours}={guess_column(ours, header, column=column)}"
        for ours, column in missing.items()
    ]
    raise BoardFormatError(
        f"{path}: header does not have the expected column(s) "
        f"{sorted(missing.values())}; found {header}. "
        f"Fix: tell which column holds each field, e.g. {' '.join(hints)}"
    )


#: Column names that often hold a field, for the "--map" hint of a header mismatch.
_SYNONYMS = {
    "task_ref": ("id", "key", "task_id", "issue", "ref", "number", "issue_key"),
    "title": ("name", "summary", "subject"),
    "status": ("state",),
    "created_at": ("created", "opened", "opened_at", "created_on", "createdat", "creationdate"),
    "completed_at": ("closed", "closed_at", "resolved", "resolved_at", "done_at", "completed"),
    "updated_on": ("updated", "updated_at", "modified", "lastupdatedate"),
}


def guess_column(
    ours: str,
    header: list[str],
    synonyms: Mapping[str, tuple[str, ...]] = _SYNONYMS,
    column: str | None = None,
) -> str:
    """The header column that most likely holds the field ``ours`` (``column``: the name
    ``--map`` gave it), for a ``--map`` hint; ``<column>`` when none does."""
    lowered = {h.lower(): h for h in header}
    for candidate in (ours, *synonyms.get(ours, ())):
        if candidate in lowered:
            return lowered[candidate]
    close = difflib.get_close_matches(column or ours, header, n=1, cutoff=0.5)
    close = close or difflib.get_close_matches(ours, header, n=1, cutoff=0.5)
    return close[0] if close else "<column>"


def parse_jsonl(
    path: Path, options: ParseOptions, progress: ProgressFn | None = None
) -> Iterator[Task | Rejected | Notice]:
    """Every task of a generic JSONL export (a JSON array works too)."""
    mapping = check_mapping(options.mapping)
    origin = options.origin or path.name

    def parse_record(record: Any, where: str) -> Iterator[Task]:
        if not isinstance(record, dict):
            raise RecordError("record", f"expected a JSON object, got {type(record).__name__}")
        yield generic_task(record, mapping, "jsonl", origin, where)

    yield from json_items(path, progress, options.encoding, parse_record)


def generic_task(
    record: dict[str, Any], mapping: dict[str, str], source: str, origin: str, where: str
) -> Task:
    """One generic record (already split into named values) as a :class:`Task`."""

    def value(ours: str) -> Any:
        v = record.get(mapping[ours])
        return None if isinstance(v, str) and not v.strip() else v

    def text(ours: str) -> str | None:
        return opt_str(value(ours), mapping[ours])

    def when(ours: str) -> Any:
        return parse_time(value(ours), mapping[ours])

    task_ref = text("task_ref")
    if task_ref is None:
        raise RecordError(mapping["task_ref"], "is missing or empty (every task needs a task_ref)")
    created, completed = when("created_at"), when("completed_at")
    events = []
    if created is not None:
        events.append(TaskEvent(created, "created"))
    if completed is not None:
        events.append(TaskEvent(completed, "completed", text("resolution") or ""))
    for i, ev in enumerate(as_list(value("events"), mapping["events"])):
        ev = as_dict(ev, f"events[{i}]")
        at = parse_time(ev.get("at"), f"events[{i}].at")
        kind = opt_str(ev.get("kind"), f"events[{i}].kind")
        if at is None or kind is None:
            raise RecordError(f"events[{i}]", "each event needs 'at' and 'kind'")
        detail = opt_str(ev.get("detail"), f"events[{i}].detail") or ""
        events.append(TaskEvent(at, kind, detail, opt_str(ev.get("actor"), f"events[{i}].actor")))
    links = []
    for i, link in enumerate(as_list(value("links"), mapping["links"])):
        link = as_dict(link, f"links[{i}]")
        target = opt_str(link.get("target_ref"), f"links[{i}].target_ref")
        if target is None:
            raise RecordError(f"links[{i}].target_ref", "is missing")
        direction = opt_str(link.get("direction"), f"links[{i}].direction") or "outward"
        if direction not in ("inward", "outward"):
            raise RecordError(f"links[{i}].direction", f"{direction!r} is not inward|outward")
        kind = opt_str(link.get("kind"), f"links[{i}].kind") or "relates"
        phrase = opt_str(link.get("phrase"), f"links[{i}].phrase")
        links.append(TaskLink(target, kind, direction, phrase))
    return Task(
        task_ref=task_ref,
        native_id=text("id") or task_ref,
        origin=origin,
        source=source,
        category=text("category") or "task",
        raw=record,
        title=text("title"),
        kind=text("kind"),
        project=text("project"),
        created_at=created,
        completed_at=completed,
        updated_on=when("updated_on") or completed or created,
        status=text("status"),
        resolution=text("resolution"),
        priority=text("priority"),
        labels=labels_of(value("labels"), mapping["labels"]),
        events=tuple(dict.fromkeys(events)),
        links=tuple(dict.fromkeys(links)),
        location=where,
    )
