"""Jira exports: CSV (the issue navigator's export and the PROMISE bug-fix dataset) and JSON
(REST ``/search`` results: ``{"issues": [...]}``, a list of issues, or JSONL).

task_ref = the issue key (``KAFKA-1234``); project = the key's prefix (JSON:
``fields.project.key``). CSV links come either as token columns (``InwardIssueLinks`` /
``OutwardIssueLinks`` holding ``LinkType:KEY`` tokens separated by whitespace, newlines or
commas) or as the navigator's ``Inward issue link (Type)`` columns holding keys.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

from agent_reflection.load.board.fields import as_dict, as_list, labels_of, name_of, opt_str
from agent_reflection.load.board.model import (
    Notice,
    ParseOptions,
    RecordError,
    Rejected,
    Task,
    TaskEvent,
    TaskLink,
    unwrap_perceval,
)
from agent_reflection.load.board.source import (
    BoardFormatError,
    ProgressFn,
    RecordParser,
    csv_tasks,
    cut_json_text,
    json_items,
    looks_like_json,
    sniff,
)
from agent_reflection.load.board.timeparse import parse_time

JIRA_KEY = re.compile(r"^[A-Z][A-Z0-9_]*-\d+$")
#: ``LinkType:KEY`` tokens; a type may contain spaces or '/' ("is caused by", "Problem/Incident").
LINK_TOKEN = re.compile(r"([^\s:,][^:,\n]*?):([A-Z][A-Z0-9_]*-\d+)")
_UI_LINK = re.compile(r"^(Inward|Outward) issue link \((.+)\)$", re.IGNORECASE)

#: Our field -> header names it may have (first present wins).
CSV_COLUMNS: dict[str, tuple[str, ...]] = {
    "key": ("Key", "Issue key"),
    "id": ("Issue id",),
    "title": ("Summary",),
    "kind": ("Issue Type", "IssueType"),
    "status": ("Status",),
    "resolution": ("Resolution",),
    "priority": ("Priority",),
    "created": ("CreationDate", "Created"),
    "resolved": ("ResolutionDate", "Resolved"),
    "updated": ("LastUpdateDate", "Updated"),
    "inward": ("InwardIssueLinks",),
    "outward": ("OutwardIssueLinks",),
}


def parse_jira(
    path: Path, options: ParseOptions, progress: ProgressFn | None = None
) -> Iterator[Task | Rejected | Notice]:
    """Every task of a Jira CSV or JSON export (``.gz`` read transparently)."""
    head, problem = sniff(path, options.encoding)
    if problem is not None:
        yield problem
        return
    if looks_like_json(head):

        def parse_record(record: Any, where: str) -> Iterator[Task]:
            yield json_task(record, options, where, default_origin=path.name)

        yield from json_items(path, progress, options.encoding, parse_record, cut_json_text)
    else:
        origin = options.origin or path.name.removesuffix(".gz")

        def row_parser(header: list[str]) -> RecordParser:
            return partial(_csv_task, header, _resolve_columns(path, header), origin)

        yield from csv_tasks(path, progress, options.encoding, row_parser)


# -- CSV ------------------------------------------------------------------------------------


def _resolve_columns(path: Path, header: list[str]) -> dict[str, Any]:
    index = {name.strip(): i for i, name in reversed(list(enumerate(header)))}
    columns: dict[str, Any] = {}
    for ours, names in CSV_COLUMNS.items():
        columns[ours] = next((index[n] for n in names if n in index), None)
    if columns["key"] is None:
        raise BoardFormatError(
            f"{path}: no issue-key column; expected one of {list(CSV_COLUMNS['key'])}, found "
            f"{[h for h in header][:40]}. Is this a Jira export? For other CSVs use "
            "--format csv --map task_ref=<column>."
        )
    columns["labels"] = [i for i, h in enumerate(header) if h.strip() == "Labels"]
    columns["ui_links"] = [
        (i, m.group(1).lower(), m.group(2))
        for i, h in enumerate(header)
        if (m := _UI_LINK.match(h.strip()))
    ]
    return columns


def _csv_task(
    header: list[str], columns: dict[str, Any], origin: str, row: list[str], where: str
) -> Task:
    def cell(ours: str) -> str | None:
        i = columns[ours]
        return row[i].strip() or None if i is not None else None

    key = cell("key")
    if key is None or not JIRA_KEY.match(key):
        raise RecordError(header[columns["key"]], f"{key!r} is not a Jira key like KAFKA-123")
    created = parse_time(cell("created"), "created")
    resolved = parse_time(cell("resolved"), "resolved")
    updated = parse_time(cell("updated"), "updated")
    status, resolution = cell("status"), cell("resolution")
    links: list[TaskLink] = []
    for direction in ("inward", "outward"):
        links.extend(parse_link_tokens(cell(direction) or "", direction))
    for i, direction, link_type in columns["ui_links"]:
        for target in row[i].replace(",", " ").split():
            links.append(TaskLink(target, link_type, direction))
    raw: dict[str, Any] = {}
    for name, value in zip(header, row, strict=True):
        if name in raw:
            previous = raw[name]
            raw[name] = [*previous, value] if isinstance(previous, list) else [previous, value]
        else:
            raw[name] = value
    return Task(
        task_ref=key,
        native_id=cell("id") or key,
        origin=origin,
        source="jira",
        category="issue",
        raw=raw,
        title=cell("title"),
        kind=cell("kind"),
        project=key.rsplit("-", 1)[0],
        created_at=created,
        completed_at=resolved,
        updated_on=updated or resolved or created,
        status=status,
        resolution=resolution,
        priority=cell("priority"),
        labels=tuple(dict.fromkeys(row[i].strip() for i in columns["labels"] if row[i].strip())),
        events=_lifecycle(created, resolved, resolution or status),
        links=_dedupe(links),
        location=where,
    )


def parse_link_tokens(text: str, direction: str) -> list[TaskLink]:
    """``"Regression:KAFKA-1 Blocker:KAFKA-2"`` -> links of that direction."""
    return [TaskLink(m.group(2), m.group(1).strip(), direction) for m in LINK_TOKEN.finditer(text)]


def _lifecycle(created: Any, resolved: Any, resolved_detail: str | None) -> tuple[TaskEvent, ...]:
    events = []
    if created is not None:
        events.append(TaskEvent(created, "created"))
    if resolved is not None:
        events.append(TaskEvent(resolved, "resolved", resolved_detail or ""))
    return tuple(events)


def _dedupe(links: list[TaskLink]) -> tuple[TaskLink, ...]:
    seen: dict[tuple[str, str, str], TaskLink] = {}
    for link in links:
        seen.setdefault((link.target_ref, link.kind, link.direction), link)
    return tuple(seen.values())


# -- JSON -----------------------------------------------------------------------------------


def json_task(record: Any, options: ParseOptions, where: str, *, default_origin: str) -> Task:
    """One issue of Jira's REST representation (``key``, ``id``, ``self``, ``fields``...),
    bare or wrapped in a Perceval item."""
    record, envelope_origin = unwrap_perceval(record)
    if not isinstance(record, dict):
        raise RecordError("issue", f"expected a JSON object, got {type(record).__name__}")
    key = opt_str(record.get("key"), "key")
    if key is None or not JIRA_KEY.match(key):
        raise RecordError("key", f"{key!r} is not a Jira key like KAFKA-123")
    fields = as_dict(record.get("fields"), "fields")
    created = parse_time(fields.get("created"), "fields.created")
    resolved = parse_time(fields.get("resolutiondate"), "fields.resolutiondate")
    updated = parse_time(fields.get("updated"), "fields.updated")
    resolution = name_of(fields.get("resolution"), "fields.resolution")
    status = name_of(fields.get("status"), "fields.status")
    self_url = opt_str(record.get("self"), "self")
    origin = (
        options.origin
        or envelope_origin
        or (self_url.split("/rest/", 1)[0] if self_url and "/rest/" in self_url else default_origin)
    )
    project = as_dict(fields.get("project"), "fields.project").get("key") or key.rsplit("-", 1)[0]
    events = list(_lifecycle(created, resolved, resolution or status))
    changelog = as_dict(record.get("changelog"), "changelog")
    for h, history in enumerate(as_list(changelog.get("histories"), "changelog.histories")):
        history = as_dict(history, f"changelog.histories[{h}]")
        at = parse_time(history.get("created"), f"changelog.histories[{h}].created")
        author = as_dict(history.get("author"), f"changelog.histories[{h}].author")
        actor = opt_str(author.get("name") or author.get("displayName"), "author.name")
        for item in as_list(history.get("items"), f"changelog.histories[{h}].items"):
            item = as_dict(item, f"changelog.histories[{h}].items[]")
            if at is not None:
                events.extend(_changelog_events(item, at, actor, f"changelog.histories[{h}]"))
    links: list[TaskLink] = []
    for i, link in enumerate(as_list(fields.get("issuelinks"), "fields.issuelinks")):
        link = as_dict(link, f"fields.issuelinks[{i}]")
        link_type = as_dict(link.get("type"), f"fields.issuelinks[{i}].type")
        type_name = opt_str(link_type.get("name"), "type.name") or "link"
        for direction in ("inward", "outward"):
            other = link.get(f"{direction}Issue")
            if other is not None:
                target = opt_str(as_dict(other, f"{direction}Issue").get("key"), "key")
                if target:
                    phrase = opt_str(link_type.get(direction), f"type.{direction}")
                    links.append(TaskLink(target, type_name, direction, phrase))
    return Task(
        task_ref=key,
        native_id=opt_str(record.get("id"), "id") or key,
        origin=origin,
        source="jira",
        category="issue",
        raw=record,
        title=opt_str(fields.get("summary"), "fields.summary"),
        kind=name_of(fields.get("issuetype"), "fields.issuetype"),
        project=str(project),
        created_at=created,
        completed_at=resolved,
        updated_on=updated or resolved or created,
        status=status,
        resolution=resolution,
        priority=name_of(fields.get("priority"), "fields.priority"),
        labels=labels_of(fields.get("labels"), "fields.labels"),
        events=tuple(dict.fromkeys(events)),
        links=_dedupe(links),
        location=where,
    )


def _changelog_events(
    item: dict[str, Any], at: datetime, actor: str | None, where: str
) -> list[TaskEvent]:
    """Events of one changelog item (``expand=changelog``).

    status: ``status_changed`` "From -> To". resolution: ``resolution_changed`` "From -> To";
    a resolution set is a completion (``resolved`` with the resolution: the FIRST one dates
    the task's first completion), a resolution cleared is a reopen (``reopened``): Jira clears
    the resolution whenever an issue goes back to work, whatever the status is called.
    """
    field = str(item.get("field", "")).lower()
    before = opt_str(item.get("fromString"), f"{where}.fromString")
    after = opt_str(item.get("toString"), f"{where}.toString")
    if field == "status":
        return [TaskEvent(at, "status_changed", f"{before or ''} -> {after or ''}", actor)]
    if field != "resolution":
        return []
    events = [TaskEvent(at, "resolution_changed", f"{before or ''} -> {after or ''}", actor)]
    if after:
        events.append(TaskEvent(at, "resolved", after, actor))
    elif before:
        events.append(TaskEvent(at, "reopened", f"resolution {before} cleared", actor))
    return events
