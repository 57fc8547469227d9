"""GitHub events, one shape for every place they come from.

An event reads the same whether it sits in an issue's embedded timeline, in a REST
``/issues/N/events`` or ``/issues/N/timeline`` response (or ``gh api --paginate`` output of
them), in a GraphQL ``timelineItems`` connection, or in a flattened dump of those responses
(``actor_login``, ``label`` as a name, ``source_repo`` / ``source_number`` /
``source_is_pull_request``, ``issue_number``, ``repo``, as the onnxruntime dump in
``../shared/`` writes them). :func:`parse_event` turns one into a :class:`ParsedEvent`:

* ``closed`` / ``merged`` / ``referenced`` keep their commit id as the detail (a ``closed``
  without one keeps its ``state_reason``) and give a :class:`TaskCommit`;
* ``labeled`` / ``unlabeled`` keep the label name, ``renamed`` the new title;
* ``cross-referenced`` keeps ``issue OWNER/REPO#N`` or ``pull_request OWNER/REPO#N`` (the
  kind of the record that mentioned this one; just the ref when the export does not say) and
  gives an inward ``cross-referenced`` :class:`TaskLink`;
* ``committed`` (a PR timeline's commits) is dated by its committer and gives its commit;
* any other kind is kept with an empty detail (nothing is dropped).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agent_reflection.load.board.fields import as_dict, opt_str
from agent_reflection.load.board.model import RecordError, TaskCommit, TaskEvent, TaskLink
from agent_reflection.load.board.timeparse import parse_time

WEB_URL = re.compile(r"^(https?://[^/]+)/([^/]+/[^/]+)/(?:issues|pull|pulls)/(\d+)")
#: ``https://api.github.com/repos/O/R/...``: the repository of an API URL.
API_REPO = re.compile(r"/repos/([^/]+/[^/]+?)(?:/|$)")
_API_ISSUE = re.compile(r"/repos/([^/]+/[^/]+)/issues/(\d+)(?:$|[/?#])")
_API_COMMIT = re.compile(r"/repos/([^/]+/[^/]+)/(?:git/)?commits/([0-9a-fA-F]{7,40})")
_SHA = re.compile(r"^[0-9a-fA-F]{7,40}$")

#: GraphQL ``__typename`` -> REST event name.
TYPENAMES = {
    "ClosedEvent": "closed",
    "ReopenedEvent": "reopened",
    "LabeledEvent": "labeled",
    "UnlabeledEvent": "unlabeled",
    "CrossReferencedEvent": "cross-referenced",
    "MergedEvent": "merged",
    "AssignedEvent": "assigned",
    "UnassignedEvent": "unassigned",
    "RenamedTitleEvent": "renamed",
    "ReferencedEvent": "referenced",
    "IssueComment": "commented",
    "MentionedEvent": "mentioned",
    "SubscribedEvent": "subscribed",
    "MarkedAsDuplicateEvent": "marked_as_duplicate",
    "PullRequestCommit": "committed",
    "HeadRefForcePushedEvent": "head_ref_force_pushed",
    "PullRequestReview": "reviewed",
    "ConnectedEvent": "connected",
}
COMMIT_KINDS = ("closed", "merged", "referenced", "committed")


@dataclass(frozen=True)
class ParsedEvent:
    event: TaskEvent
    link: TaskLink | None = None
    commit: TaskCommit | None = None


def first(record: dict[str, Any], *names: str) -> Any:
    """The first of ``names`` that ``record`` holds a non-null value for."""
    return next((record[n] for n in names if record.get(n) is not None), None)


def repo_name(full: str) -> str:
    """``owner/repo`` -> ``repo``: the name ``reflect load git`` gives a clone of it."""
    return full.rstrip("/").rsplit("/", 1)[-1]


def event_kind(ev: dict[str, Any], field: str) -> str | None:
    kind = opt_str(ev.get("event"), f"{field}.event")
    if kind is None and ev.get("__typename") is not None:
        typename = str(ev.get("__typename"))
        snake = re.sub(r"(?<!^)(?=[A-Z])", "_", typename.removesuffix("Event")).lower()
        kind = TYPENAMES.get(typename) or snake
    return kind


def parse_event(ev: dict[str, Any], repo: str, field: str) -> ParsedEvent | None:
    """One event of task ``repo#N`` (``field`` names it in errors); ``None`` when it has no
    kind or no date (a timeline item GitHub does not date, e.g. a REST ``committed`` without
    its committer)."""
    kind = event_kind(ev, field)
    if kind is None:
        return None
    at = parse_time(
        first(ev, "created_at", "createdAt", "submitted_at", "submittedAt"), f"{field}.created_at"
    )
    if at is None and kind == "committed":
        dated = as_dict(first(ev, "committer", "author"), f"{field}.committer")
        at = parse_time(first(dated, "date", "committedDate"), f"{field}.committer.date")
        if at is None:
            node = as_dict(ev.get("commit"), f"{field}.commit")
            at = parse_time(node.get("committedDate"), f"{field}.commit.committedDate")
    if at is None:
        return None
    actor_obj = as_dict(first(ev, "actor", "user", "author"), f"{field}.actor")
    actor = opt_str(first(ev, "actor_login") or actor_obj.get("login"), f"{field}.actor.login")
    detail = ""
    link: TaskLink | None = None
    commit: TaskCommit | None = None
    if kind in ("labeled", "unlabeled"):
        label = ev.get("label")
        detail = (
            opt_str(as_dict(label, f"{field}.label").get("name"), f"{field}.label.name")
            if isinstance(label, dict)
            else opt_str(label, f"{field}.label")
        ) or ""
    elif kind == "cross-referenced":
        source_kind, source_ref = _cross_source(ev, repo, field)
        if source_ref:
            detail = f"{source_kind} {source_ref}" if source_kind else source_ref
            link = TaskLink(source_ref, "cross-referenced", "inward", "mentioned in")
    elif kind in COMMIT_KINDS:
        sha, commit_repo = _commit_of(ev, field)
        if sha:
            commit = TaskCommit(repo_name(commit_repo or repo), sha)
        reason = opt_str(first(ev, "state_reason", "stateReason"), f"{field}.state_reason")
        detail = sha or (reason.lower() if reason else "")
    elif kind == "renamed":
        rename = as_dict(ev.get("rename"), f"{field}.rename")
        detail = (
            opt_str(
                first(ev, "rename_to", "currentTitle") or rename.get("to"), f"{field}.rename.to"
            )
            or ""
        )
    return ParsedEvent(TaskEvent(at, kind, detail, actor), link, commit)


def _commit_of(ev: dict[str, Any], field: str) -> tuple[str | None, str | None]:
    """(sha, owner/repo of the commit when the event says) of a commit-carrying event."""
    commit = as_dict(
        ev.get("commit") if isinstance(ev.get("commit"), dict) else None, f"{field}.commit"
    )
    closer = as_dict(ev.get("closer"), f"{field}.closer")
    sha = opt_str(
        first(ev, "commit_id", "sha")
        or commit.get("oid")
        or commit.get("sha")
        or closer.get("oid"),
        f"{field}.commit_id",
    )
    if sha is not None and not _SHA.match(sha):
        raise RecordError(f"{field}.commit_id", f"{sha[:60]!r} is not a commit id")
    sha = sha.lower() if sha else None
    where = None
    url = first(ev, "commit_url")
    if isinstance(url, str) and (m := _API_COMMIT.search(url)):
        where = m.group(1)
    repository = as_dict(
        first(ev, "commitRepository") or commit.get("repository"), f"{field}.commitRepository"
    )
    named = repository.get("nameWithOwner") or repository.get("full_name")
    if isinstance(named, str) and "/" in named:
        where = named
    return sha, where


def _cross_source(ev: dict[str, Any], repo: str, field: str) -> tuple[str | None, str | None]:
    """(``issue`` | ``pull_request`` | None, ``owner/repo#N``) of what mentioned the task."""
    if ev.get("source_number") is not None:  # the flattened dump
        number = ev.get("source_number")
        if not isinstance(number, int) or isinstance(number, bool):
            raise RecordError(f"{field}.source_number", f"expected an integer, got {number!r}")
        source_repo = opt_str(ev.get("source_repo"), f"{field}.source_repo") or repo
        is_pr = ev.get("source_is_pull_request")
        flat_kind = None if is_pr is None else ("pull_request" if is_pr else "issue")
        return flat_kind, f"{source_repo}#{number}"
    source = as_dict(ev.get("source"), f"{field}.source")
    issue = as_dict(source.get("issue") or source, f"{field}.source.issue")
    number = issue.get("number")
    if not isinstance(number, int) or isinstance(number, bool):
        return None, None
    url = first(issue, "html_url", "url") or ""
    m = WEB_URL.match(url) if isinstance(url, str) else None
    repository = as_dict(issue.get("repository"), f"{field}.source.repository")
    named = repository.get("nameWithOwner") or repository.get("full_name")
    source_repo = m.group(2) if m else (named if isinstance(named, str) else repo)
    typename = issue.get("__typename")
    if typename in ("Issue", "PullRequest"):
        kind: str | None = "pull_request" if typename == "PullRequest" else "issue"
    elif issue.get("pull_request") is not None or (isinstance(url, str) and "/pull/" in url):
        kind = "pull_request"
    elif url:  # a REST issue (PRs carry `pull_request`) or an issue URL
        kind = "issue"
    else:  # nothing says which: the detail is the bare ref, which no issue-only rule matches
        kind = None
    return kind, f"{source_repo}#{number}"


def issue_of(ev: dict[str, Any], file_number: int | None) -> tuple[str | None, int | None]:
    """(owner/repo or None, issue number or None) an event record names for its task."""
    issue = as_dict(ev.get("issue"), "issue")
    number: Any = first(ev, "issue_number") or issue.get("number")
    repo = None
    for url in (ev.get("issue_url"), issue.get("url"), issue.get("html_url")):
        if not isinstance(url, str):
            continue
        if m := _API_ISSUE.search(url):
            repo, number = m.group(1), number or int(m.group(2))
        elif m := WEB_URL.match(url):
            repo, number = m.group(2), number or int(m.group(3))
    if isinstance(number, str) and number.strip().lstrip("#").isdigit():
        number = int(number.strip().lstrip("#"))
    if number is not None and (not isinstance(number, int) or isinstance(number, bool)):
        raise RecordError("issue_number", f"expected an integer, got {number!r}")
    repository = as_dict(ev.get("repository"), "repository")
    named = ev.get("repo") if isinstance(ev.get("repo"), str) else repository.get("full_name")
    if isinstance(named, str) and "/" in named:
        repo = named
    if repo is None:
        # the event's own URL (.../repos/O/R/issues/events/ID), never its commit's: a commit
        # may live in another repository
        api = first(ev, "url") or issue.get("repository_url")
        if isinstance(api, str) and (m := API_REPO.search(api)):
            repo = m.group(1)
    return repo, number if number is not None else file_number
