"""The normalised board record every format parser produces, and the Perceval-style envelope.

A parser turns one native record (a GitHub issue, a Jira row, a CSV line, a task file's
history) into one :class:`Task` carrying its :class:`TaskEvent` and :class:`TaskLink` rows,
or into a :class:`Rejected` naming where it was and why it could not be read. The writer
stores both; nothing is dropped.

Envelope (after Perceval, so a later GrimoireLab import needs no schema change):
``uuid`` = ``sha1(origin + ":" + native_id)`` exactly like ``perceval.backend.uuid``;
``origin`` = the board URL (or the export's file name when the export has no URL);
``updated_on`` = the record's last-update time; ``category`` = issue | pull_request | task.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any


class RecordError(ValueError):
    """One record is unusable; ``field`` names the offending field."""

    def __init__(self, field_name: str, problem: str) -> None:
        self.field = field_name
        self.problem = problem
        super().__init__(f"field {field_name!r}: {problem}")


def perceval_uuid(*args: str) -> str:
    """Perceval's ``uuid(*args)``: sha1 of the arguments joined by ``:``."""
    for arg in args:
        if not isinstance(arg, str) or not arg:
            raise RecordError("uuid", f"uuid parts must be non-empty strings, got {arg!r}")
    text = ":".join(args)
    return hashlib.sha1(text.encode("utf-8", errors="surrogateescape")).hexdigest()


@dataclass(frozen=True)
class TaskEvent:
    """Something that happened to a task at an instant (created, closed, status_changed...)."""

    at: datetime
    kind: str
    detail: str = ""
    actor: str | None = None


@dataclass(frozen=True)
class TaskLink:
    """A typed link from a task to another task (``direction``: inward | outward)."""

    target_ref: str
    kind: str
    direction: str
    phrase: str | None = None


@dataclass(frozen=True)
class TaskCommit:
    """A commit a board record itself ties to a task (a GitHub ``referenced`` / ``merged``
    event's commit id, a PR's merge commit): ``repo`` is the repository's name as
    ``reflect load git`` names a clone of it (its last path part), ``sha`` the full id."""

    repo: str
    sha: str


@dataclass(frozen=True)
class EventRecord:
    """One record of an event stream (GitHub ``/issues/N/events``, ``/issues/N/timeline``)
    about a task whose own record may come from another file (or not at all).

    Stored beside the task's events with ``via`` naming the stream, so re-loading the task's
    own record (which replaces its record-derived events) keeps it.
    """

    task_ref: str
    event: TaskEvent
    location: str
    via: str
    link: TaskLink | None = None
    commit: TaskCommit | None = None


@dataclass(frozen=True)
class Task:
    """One board task, normalised. ``raw`` is the native record, kept whole."""

    task_ref: str
    native_id: str
    origin: str
    source: str
    category: str
    raw: Any
    title: str | None = None
    kind: str | None = None
    project: str | None = None
    created_at: datetime | None = None
    completed_at: datetime | None = None
    updated_on: datetime | None = None
    status: str | None = None
    resolution: str | None = None
    priority: str | None = None
    labels: tuple[str, ...] = ()
    events: tuple[TaskEvent, ...] = ()
    links: tuple[TaskLink, ...] = ()
    location: str = ""
    commits: tuple[TaskCommit, ...] = ()

    @property
    def uuid(self) -> str:
        return perceval_uuid(self.origin, self.native_id)

    @cached_property
    def raw_json(self) -> str:
        """The native record as canonical JSON (sorted keys), computed once."""
        return json.dumps(self.raw, sort_keys=True, ensure_ascii=False, default=str)

    def fingerprint(self) -> str:
        """sha1 of everything stored for the task (not the load id): equal means unchanged."""
        body: list[object] = [
            self.task_ref,
            self.native_id,
            self.origin,
            self.source,
            self.category,
            self.title,
            self.kind,
            self.project,
            _iso(self.created_at),
            _iso(self.completed_at),
            _iso(self.updated_on),
            self.status,
            self.resolution,
            self.priority,
            list(self.labels),
            sorted(([_iso(e.at), e.kind, e.detail, e.actor] for e in self.events), key=_none_first),
            sorted(
                [link.target_ref, link.kind, link.direction, link.phrase] for link in self.links
            ),
            self.raw_json,
        ]
        if self.commits:  # appended only when present: older fingerprints stay valid
            body.append(sorted([c.repo, c.sha] for c in self.commits))
        text = json.dumps(body, ensure_ascii=False, default=str)
        return hashlib.sha1(text.encode("utf-8", errors="surrogateescape")).hexdigest()


@dataclass(frozen=True)
class Rejected:
    """A record (or whole file) that could not be read: where, the raw text, and why.

    ``file_error``: the file could not be read on from here (damage, binary data, a cut JSON
    document), so the load fails though it keeps what it read before."""

    location: str
    raw: str | bytes | None
    reason: str
    file_error: bool = False


@dataclass(frozen=True)
class Notice:
    """Something the user should know about the whole export (no record): e.g. that bytes
    which were not UTF-8 were read as Windows-1252."""

    text: str


@dataclass(frozen=True)
class ParseOptions:
    """What the user told us about the export (all optional)."""

    origin: str | None = None  # overrides the envelope origin
    project: str | None = None  # e.g. owner/repo for GitHub records without a URL
    mapping: dict[str, str] = field(default_factory=dict)  # generic csv/jsonl: ours -> theirs
    path_filter: str | None = None  # git-files: folder inside the repo
    encoding: str | None = None  # text encoding of the export; None: detect (load/text.py)
    done_statuses: frozenset[str] = frozenset(
        {"done", "closed", "completed", "complete", "resolved", "fixed", "merged"}
    )


def unwrap_perceval(record: Any) -> tuple[Any, str | None]:
    """A Perceval item (``{"backend_name", "origin", "uuid", "data": {...}}``) -> (data, origin).

    Any other record comes back unchanged with ``None``: exports written by Perceval (or read
    back from GrimoireLab's raw indexes) load like the native ones, keeping their origin.
    """
    if (
        isinstance(record, dict)
        and isinstance(record.get("data"), dict)
        and ("backend_name" in record or "perceval_version" in record)
    ):
        origin = record.get("origin")
        return record["data"], origin if isinstance(origin, str) and origin else None
    return record, None


def _none_first(row: list[str | None]) -> list[tuple[bool, str]]:
    """A sort key for rows that may hold None beside text (the same event with and without
    its actor): None sorts first; rows without None sort as before."""
    return [(v is not None, v or "") for v in row]


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None
