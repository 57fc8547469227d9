"""GitHub issues and pull requests, as the REST API or ``gh issue|pr list --json`` writes them.

Input: a JSON array, an object with an ``items`` list (search API), or JSONL; each record is
an issue object in REST snake_case (``number``, ``created_at``, ``html_url``,
``pull_request``...) or ``gh`` camelCase (``createdAt``, ``url``, ``isPullRequest``...).
task_ref = ``owner/repo#number``; the repo comes from ``html_url``/``url``/``repository_url``
or ``--project owner/repo``. Timeline events, when a record embeds them under ``timeline``,
``events`` or ``timelineItems`` (REST ``event`` names or GraphQL ``__typename``s), become
``task_events``; ``cross-referenced`` events also become inward ``task_links``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
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
    unwrap_perceval,
)
from agent_reflection.load.board.source import ProgressFn, json_tasks
from agent_reflection.load.board.timeparse import parse_time

_WEB_URL = re.compile(r"^(https?://[^/]+)/([^/]+/[^/]+)/(?:issues|pull|pulls)/(\d+)")
_API_REPO = re.compile(r"/repos/([^/]+/[^/]+?)/?$")
_TIMELINE_KEYS = ("timeline", "events", "timelineItems", "timeline_items")
#: GraphQL ``__typename`` -> REST event name.
_TYPENAMES = {
    "ClosedEvent": "closed",
    "ReopenedEvent": "reopened",
    "LabeledEvent": "labeled",
    "UnlabeledEvent": "unlabeled",
    "CrossReferencedEvent": "cross-referenced",
    "MergedEvent": "merged",
    "AssignedEvent": "assigned",
    "RenamedTitleEvent": "renamed",
    "ReferencedEvent": "referenced",
    "IssueComment": "commented",
}


def parse_github(
    path: Path, options: ParseOptions, progress: ProgressFn | None = None
) -> Iterator[Task | Rejected | Notice]:
    """Every issue/PR of a GitHub export (``.gz`` read transparently)."""
    yield from json_tasks(
        path, progress, options.encoding, lambda record, where: github_task(record, options, where)
    )


def _get(record: dict[str, Any], *names: str) -> Any:
    return next((record[n] for n in names if record.get(n) is not None), None)


def _number(record: dict[str, Any]) -> int:
    value = record.get("number")
    if isinstance(value, bool) or value is None:
        raise RecordError("number", f"expected the issue number, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("#").isdigit():
        return int(value.strip().lstrip("#"))
    raise RecordError("number", f"expected an integer, got {type(value).__name__} {value!r}")


def _repo_of(record: dict[str, Any], options: ParseOptions) -> tuple[str, str]:
    """(host URL, owner/repo) of a record."""
    for name in ("html_url", "url"):
        url = record.get(name)
        if isinstance(url, str) and (m := _WEB_URL.match(url)):
            return m.group(1), m.group(2)
    api = record.get("repository_url")
    if isinstance(api, str) and (m := _API_REPO.search(api)):
        return "https://github.com", m.group(1)
    repository = record.get("repository")
    if isinstance(repository, dict):
        full = repository.get("nameWithOwner") or repository.get("full_name")
        if isinstance(full, str) and "/" in full:
            return "https://github.com", full
    if options.project:
        return "https://github.com", options.project
    raise RecordError(
        "html_url", "no html_url/url/repository_url names the repository; pass --project OWNER/REPO"
    )


def github_task(record: Any, options: ParseOptions, where: str) -> Task:
    """One REST or ``gh`` issue/PR object (or a Perceval item wrapping one) as a Task."""
    record, envelope_origin = unwrap_perceval(record)
    if not isinstance(record, dict):
        raise RecordError("issue", f"expected a JSON object, got {type(record).__name__}")
    number = _number(record)
    host, repo = _repo_of(record, options)
    task_ref = f"{repo}#{number}"
    url = opt_str(_get(record, "html_url", "url"), "url") or ""
    is_pr = (
        record.get("pull_request") is not None
        or record.get("isPullRequest") is True
        or "/pull/" in url
        or any(k in record for k in ("mergedAt", "merged_at", "headRefName"))
    )
    created = parse_time(_get(record, "created_at", "createdAt"), "created_at")
    closed = parse_time(_get(record, "closed_at", "closedAt"), "closed_at")
    pr_info = as_dict(record.get("pull_request"), "pull_request")
    merged = parse_time(
        _get(record, "merged_at", "mergedAt") or pr_info.get("merged_at"), "merged_at"
    )
    updated = parse_time(_get(record, "updated_at", "updatedAt"), "updated_at")
    state = opt_str(record.get("state"), "state")
    reason = opt_str(_get(record, "state_reason", "stateReason"), "state_reason")
    status = state.lower() if state else None
    resolution = "merged" if merged is not None else (reason.lower() if reason else None)
    events, links = _timeline(record, repo)
    kinds = {e.kind for e in events}
    if created is not None and "created" not in kinds:
        events.append(TaskEvent(created, "created"))
    if closed is not None and "closed" not in kinds:
        events.append(TaskEvent(closed, "closed", resolution or ""))
    if merged is not None and "merged" not in kinds:
        events.append(TaskEvent(merged, "merged"))
    native = record.get("id")
    category = "pull_request" if is_pr else "issue"
    return Task(
        task_ref=task_ref,
        native_id=str(native) if native is not None else str(number),
        origin=options.origin or envelope_origin or f"{host}/{repo}",
        source="github",
        category=category,
        raw=record,
        title=opt_str(record.get("title"), "title"),
        kind=category,
        project=repo,
        created_at=created,
        completed_at=closed or merged,
        updated_on=updated or closed or created,
        status=status,
        resolution=resolution,
        priority=None,
        labels=labels_of(record.get("labels"), "labels"),
        events=tuple(dict.fromkeys(events)),
        links=tuple(dict.fromkeys(links)),
        location=where,
    )


def _timeline(record: dict[str, Any], repo: str) -> tuple[list[TaskEvent], list[TaskLink]]:
    raw = _get(record, *_TIMELINE_KEYS)
    if isinstance(raw, dict):  # GraphQL connection: {"nodes": [...]}
        raw = raw.get("nodes")
    events: list[TaskEvent] = []
    links: list[TaskLink] = []
    for i, ev in enumerate(as_list(raw, "timeline")):
        ev = as_dict(ev, f"timeline[{i}]")
        typename = _TYPENAMES.get(str(ev.get("__typename")))
        kind = opt_str(ev.get("event"), f"timeline[{i}].event") or typename
        at = parse_time(_get(ev, "created_at", "createdAt", "submitted_at"), f"timeline[{i}].at")
        if kind is None or at is None:
            continue
        actor = as_dict(_get(ev, "actor", "user", "author"), f"timeline[{i}].actor")
        detail = ""
        if kind in ("labeled", "unlabeled"):
            detail = opt_str(as_dict(ev.get("label"), "label").get("name"), "label.name") or ""
        elif kind == "cross-referenced":
            source_ref = _source_ref(ev, repo)
            if source_ref:
                detail = source_ref
                links.append(TaskLink(source_ref, "cross-referenced", "inward", "mentioned in"))
        elif kind in ("closed", "merged", "referenced"):
            detail = opt_str(_get(ev, "commit_id", "state_reason", "stateReason"), "commit") or ""
        elif kind == "renamed":
            detail = opt_str(as_dict(ev.get("rename"), "rename").get("to"), "rename.to") or ""
        events.append(TaskEvent(at, kind, detail, opt_str(actor.get("login"), "actor.login")))
    return events, links


def _source_ref(ev: dict[str, Any], repo: str) -> str | None:
    source = as_dict(ev.get("source"), "source")
    issue = as_dict(source.get("issue") or source, "source.issue")
    number = issue.get("number")
    if not isinstance(number, int):
        return None
    url = issue.get("html_url") or issue.get("url") or ""
    m = _WEB_URL.match(url) if isinstance(url, str) else None
    return f"{m.group(2) if m else repo}#{number}"
