"""GitHub issues, pull requests and their events, as the REST API, GraphQL, ``gh`` and GH
Archive write them.

Input: a JSON array (or arrays one after another: ``gh api --paginate``), an object with an
``items`` list (search API), or JSONL. Each record is read by its shape:

* an issue/PR object (has ``number``), REST snake_case (``created_at``, ``html_url``,
  ``pull_request``...), ``gh`` camelCase (``createdAt``, ``url``, ``isPullRequest``...) or a
  flattened dump (``repo``, ``is_pull_request``, ``pr_merged_at``, ``merge_commit_sha``). An
  embedded timeline (``timeline``, ``events``, ``timelineItems``) becomes its events;
* an event (has ``event``): one item of ``/issues/N/events`` or ``/issues/N/timeline`` (see
  :mod:`.github_events`). The task it belongs to comes from the record (``issue``,
  ``issue_url``, ``issue_number`` + ``repo``/``url``) or, for a per-issue response that does
  not say, from the file name (``events-N.json``, ``timeline-N.json``, ``N.json``) and
  ``--project``. Stored beside the task's own events (``via`` = events/timeline);
* a GraphQL response (has ``data``; ``gh api graphql --paginate`` writes one per page): every
  issue/PR node in it with ``timelineItems``; a node on several pages is one task with the
  events of every page;
* a GH Archive / Events API event (has ``type`` and ``payload``): Issues-, IssueComment- and
  PullRequestEvents become their issue/PR (its latest snapshot in the file) with one event per
  action; every other type (PushEvent...) carries no task history and is counted in a notice.

task_ref = ``owner/repo#number``. ``referenced`` / ``merged`` / ``closed`` events with a commit
id and a PR's ``merge_commit_sha`` fill ``task_commits`` (matched_by ``github-event``; repo =
the repository's name, as ``reflect load git`` names a clone of it).
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent_reflection.load.board.fields import as_dict, as_list, labels_of, opt_str
from agent_reflection.load.board.github_events import (
    API_REPO,
    WEB_URL,
    first,
    issue_of,
    parse_event,
    repo_name,
)
from agent_reflection.load.board.model import (
    EventRecord,
    Notice,
    ParseOptions,
    RecordError,
    Rejected,
    Task,
    TaskCommit,
    TaskEvent,
    TaskLink,
    unwrap_perceval,
)
from agent_reflection.load.board.source import ProgressFn, cut_json_text, json_items
from agent_reflection.load.board.timeparse import parse_time

_TIMELINE_KEYS = ("timeline", "events", "timelineItems", "timeline_items")
#: A per-issue response's file name: ``events-12.json``, ``timeline_12.jsonl.gz``, ``12.json``.
_FILE_NUMBER = re.compile(r"^(?:(?:events|timeline|issue)[-_]?)?(\d+)\.jsonl?(?:\.gz)?$", re.I)
#: GH Archive event types that carry an issue or a pull request.
_ARCHIVE_TYPES = ("IssuesEvent", "IssueCommentEvent", "PullRequestEvent")


def parse_github(
    path: Path, options: ParseOptions, progress: ProgressFn | None = None
) -> Iterator[Task | EventRecord | Rejected | Notice]:
    """Every issue/PR and event of a GitHub export (``.gz`` read transparently)."""
    m = _FILE_NUMBER.match(path.name)
    file_number = int(m.group(1)) if m else None
    via = "timeline" if "timeline" in path.name.lower() else "events"
    archive = _Archive(options)
    graphql: dict[str, Task] = {}  # a node repeated across pages: one task, every page's events

    def parse(record: Any, where: str) -> Iterator[Task | EventRecord]:
        if isinstance(record, dict) and "payload" in record and "type" in record:
            archive.add(record, where)
        elif _is_graphql(record):
            for task in _graphql_tasks(record, options, where):
                graphql[task.task_ref] = _merged(graphql.get(task.task_ref), task)
        elif isinstance(record, dict) and _is_event(record):
            yield event_record(record, options, where, file_number, via)
        else:
            yield github_task(record, options, where)

    yield from json_items(path, progress, options.encoding, parse, cut_json_text)
    yield from graphql.values()
    yield from archive.tasks()


def _merged(earlier: Task | None, later: Task) -> Task:
    """``later`` with the events, links and commits of ``earlier`` too (the same issue on two
    pages of a paginated ``timelineItems`` query)."""
    if earlier is None:
        return later
    return dataclasses.replace(
        later,
        events=tuple(dict.fromkeys([*earlier.events, *later.events])),
        links=tuple(dict.fromkeys([*earlier.links, *later.links])),
        commits=tuple(dict.fromkeys([*earlier.commits, *later.commits])),
        location=earlier.location,
    )


def _is_graphql(record: Any) -> bool:
    """A GraphQL response (``{"data": {...}}``), not a Perceval item (which has ``data`` too)."""
    return (
        isinstance(record, dict)
        and isinstance(record.get("data"), dict)
        and not ({"backend_name", "perceval_version"} & record.keys())
    )


def _is_event(record: dict[str, Any]) -> bool:
    return "number" not in record and ("event" in record or "__typename" in record)


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
        if isinstance(url, str) and (m := WEB_URL.match(url)):
            return m.group(1), m.group(2)
    api = record.get("repository_url")
    if isinstance(api, str) and (m := API_REPO.search(api)):
        return "https://github.com", m.group(1)
    repository = record.get("repository")
    if isinstance(repository, dict):
        full = repository.get("nameWithOwner") or repository.get("full_name")
        if isinstance(full, str) and "/" in full:
            return "https://github.com", full
    repo = record.get("repo")
    if isinstance(repo, str) and "/" in repo:  # a flattened dump
        return "https://github.com", repo
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
    url = opt_str(first(record, "html_url", "url"), "url") or ""
    is_pr = (
        record.get("pull_request") is not None
        or record.get("isPullRequest") is True
        or record.get("is_pull_request") is True
        or record.get("__typename") == "PullRequest"
        or "/pull/" in url
        or any(k in record for k in ("mergedAt", "merged_at", "headRefName", "merge_commit_sha"))
    )
    created = parse_time(first(record, "created_at", "createdAt"), "created_at")
    closed = parse_time(first(record, "closed_at", "closedAt"), "closed_at")
    pr_info = as_dict(record.get("pull_request"), "pull_request")
    merged = parse_time(
        first(record, "merged_at", "mergedAt", "pr_merged_at") or pr_info.get("merged_at"),
        "merged_at",
    )
    updated = parse_time(first(record, "updated_at", "updatedAt"), "updated_at")
    state = opt_str(record.get("state"), "state")
    reason = opt_str(first(record, "state_reason", "stateReason"), "state_reason")
    status = state.lower() if state else None
    resolution = "merged" if merged is not None else (reason.lower() if reason else None)
    events, links, commits = _timeline(record, repo)
    kinds = {e.kind for e in events}
    if created is not None and "created" not in kinds:
        events.append(TaskEvent(created, "created"))
    if closed is not None and "closed" not in kinds:
        events.append(TaskEvent(closed, "closed", resolution or ""))
    merge_sha = opt_str(first(record, "merge_commit_sha"), "merge_commit_sha")
    merge_sha = merge_sha.lower() if merged is not None and merge_sha else None
    if merged is not None and "merged" not in kinds:  # detail as a `merged` event's: the sha
        events.append(TaskEvent(merged, "merged", merge_sha or ""))
    if merge_sha:
        commits.append(TaskCommit(repo_name(repo), merge_sha))
    native = record.get("id")
    category = "pull_request" if is_pr else "issue"
    labels = record.get("labels")
    if isinstance(labels, dict):  # GraphQL connection
        labels = labels.get("nodes")
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
        labels=labels_of(labels, "labels"),
        events=tuple(dict.fromkeys(events)),
        links=tuple(dict.fromkeys(links)),
        location=where,
        commits=tuple(dict.fromkeys(commits)),
    )


def _timeline(
    record: dict[str, Any], repo: str
) -> tuple[list[TaskEvent], list[TaskLink], list[TaskCommit]]:
    raw = first(record, *_TIMELINE_KEYS)
    if isinstance(raw, dict):  # GraphQL connection: {"nodes": [...]}
        raw = raw.get("nodes")
    events: list[TaskEvent] = []
    links: list[TaskLink] = []
    commits: list[TaskCommit] = []
    for i, ev in enumerate(as_list(raw, "timeline")):
        parsed = parse_event(as_dict(ev, f"timeline[{i}]"), repo, f"timeline[{i}]")
        if parsed is None:
            continue
        events.append(parsed.event)
        if parsed.link is not None:
            links.append(parsed.link)
        if parsed.commit is not None:
            commits.append(parsed.commit)
    return events, links, commits


def event_record(
    record: dict[str, Any], options: ParseOptions, where: str, file_number: int | None, via: str
) -> EventRecord:
    """One item of an issue-events or timeline response, as an event of its task."""
    repo, number = issue_of(record, file_number)
    repo = repo or options.project
    if repo is None or number is None:
        raise RecordError(
            "issue",
            "the event names no issue (no issue / issue_url / issue_number + repo): name the "
            "file events-N.json or timeline-N.json for issue N and pass --project OWNER/REPO",
        )
    parsed = parse_event(record, repo, "event")
    if parsed is None:
        raise RecordError("created_at", "the event has no kind or no date")
    return EventRecord(f"{repo}#{number}", parsed.event, where, via, parsed.link, parsed.commit)


def _graphql_tasks(record: dict[str, Any], options: ParseOptions, where: str) -> Iterator[Task]:
    """Every issue/PR node of a GraphQL response, with its ``timelineItems``."""
    for node, repo in _issue_nodes(record["data"], None):
        if repo and not any(k in node for k in ("url", "html_url", "repository")):
            node = {**node, "repository": {"nameWithOwner": repo}}
        yield github_task(node, options, where)


def _issue_nodes(obj: Any, repo: str | None) -> Iterator[tuple[dict[str, Any], str | None]]:
    if isinstance(obj, list):
        for item in obj:
            yield from _issue_nodes(item, repo)
    elif isinstance(obj, dict):
        named = obj.get("nameWithOwner")
        repo = named if isinstance(named, str) else repo
        if "number" in obj and (
            "timelineItems" in obj or obj.get("__typename") in ("Issue", "PullRequest")
        ):
            yield obj, repo
            return
        for value in obj.values():
            yield from _issue_nodes(value, repo)


class _Archive:
    """GH Archive events grouped per issue/PR: one task each, from its latest snapshot."""

    def __init__(self, options: ParseOptions) -> None:
        self._options = options
        # ref -> ((is a PR object, at), object, where)
        self._latest: dict[str, tuple[tuple[bool, str], dict[str, Any], str]] = {}
        self._events: dict[str, list[TaskEvent]] = {}
        self._commits: dict[str, list[TaskCommit]] = {}
        self._skipped: Counter[str] = Counter()
        self._read = 0

    def add(self, record: dict[str, Any], where: str) -> None:
        self._read += 1
        kind = str(record.get("type"))
        if kind not in _ARCHIVE_TYPES:
            self._skipped[kind] += 1
            return
        payload = as_dict(record.get("payload"), "payload")
        obj = as_dict(payload.get("pull_request") or payload.get("issue"), "payload.issue")
        if not obj:
            raise RecordError("payload.issue", f"a {kind} without its issue / pull_request")
        repo_obj = as_dict(record.get("repo"), "repo")
        full = opt_str(repo_obj.get("name"), "repo.name")
        if full and not any(k in obj for k in ("html_url", "url", "repository_url")):
            obj = {**obj, "repo": full}
        _, repo = _repo_of(obj, self._options)
        ref = f"{repo}#{_number(obj)}"
        at_text = opt_str(record.get("created_at"), "created_at") or ""
        at = parse_time(at_text, "created_at")
        if at is None:
            raise RecordError("created_at", "the event has no date")
        # The latest snapshot, a pull request's own object before the issue view of it
        # (an IssueCommentEvent on a PR carries the issue view, without merged_at).
        rank = ("pull_request" in payload, at_text)
        if ref not in self._latest or rank >= self._latest[ref][0]:
            self._latest[ref] = (rank, obj, where)
        action = opt_str(payload.get("action"), "payload.action") or ""
        actor = opt_str(as_dict(record.get("actor"), "actor").get("login"), "actor.login")
        events = self._events.setdefault(ref, [])
        # A close or merge is dated by the object's own closed_at / merged_at: the archive's
        # event is stamped up to a second later, which would store the same close twice.
        if action == "closed":
            at = parse_time(first(obj, "merged_at", "closed_at"), "closed_at") or at
        if kind == "IssueCommentEvent":
            events.append(TaskEvent(at, "commented", "", actor))
        elif kind == "PullRequestEvent" and action == "closed" and obj.get("merged"):
            sha = opt_str(obj.get("merge_commit_sha"), "pull_request.merge_commit_sha")
            events.append(TaskEvent(at, "merged", (sha or "").lower(), actor))
            if sha:
                self._commits.setdefault(ref, []).append(TaskCommit(repo_name(repo), sha.lower()))
        elif action in ("labeled", "unlabeled"):
            label = as_dict(payload.get("label"), "payload.label").get("name")
            events.append(TaskEvent(at, action, opt_str(label, "payload.label.name") or "", actor))
        elif action:
            events.append(TaskEvent(at, action, "", actor))

    def tasks(self) -> Iterator[Task | Rejected | Notice]:
        if not self._read:
            return
        for ref, (_, obj, where) in self._latest.items():
            try:
                task = github_task(obj, self._options, where)
            except RecordError as exc:
                yield Rejected(where, cut_json_text(obj), str(exc))
                continue
            events = tuple(dict.fromkeys([*task.events, *self._events.get(ref, ())]))
            commits = tuple(dict.fromkeys([*task.commits, *self._commits.get(ref, ())]))
            yield dataclasses.replace(task, events=events, commits=commits)
        skipped = sum(self._skipped.values())
        kinds = ", ".join(f"{k} {n:,}" for k, n in self._skipped.most_common())
        yield Notice(
            f"GH Archive events: {self._read:,} read, {self._read - skipped:,} about "
            f"{len(self._latest):,} issue(s)/PR(s), loaded as one task each; {skipped:,} of "
            f"other types carry no task history and were not loaded ({kinds or 'none'})"
        )
