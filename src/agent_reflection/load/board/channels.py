"""Which outcome-signal channels each board format *can* carry (P3 reads this).

A channel is a kind of machine-readable evidence that finished work was right or wrong:

* ``reopened`` — a reopen event (or a status change to a reopened state);
* ``regression-link`` — a typed link by which a later task says this one broke something;
* ``commits`` — commits linked to the task (a later revert or fix of them is the signal);
* ``verified`` — a verified / confirmed state, label or event;
* ``cross-reference`` — a later record (another issue) mentions the task: GitHub's untyped
  link, which says the task's outcome was looked at again, not which way it went.

Whether a format *can* carry a channel is a property of the format (what its records have
room for); whether a loaded source *carries* it is a property of the data (at least one record
of that kind). P3 reports both, per source, so a missing field is never read as "no signal".
"""

from __future__ import annotations

from dataclasses import dataclass

CHANNELS = ("reopened", "regression-link", "commits", "verified", "cross-reference")


@dataclass(frozen=True)
class Capability:
    """Whether a format can carry a channel, and through which field (or why not)."""

    can_carry: bool
    how: str


_NO_HISTORY = "a row has no event history"
_BY_MESSAGE = "commits naming the task, after `reflect load git` + `reflect load match`"
_NO_MENTIONS = "no cross-reference events"

#: Board format (``tasks.source``) -> channel -> capability. One place: the loaders in this
#: package decide what a format's records can hold; keep this table in step with them.
CAN_CARRY: dict[str, dict[str, Capability]] = {
    "jira": {
        "reopened": Capability(
            True, "JSON changelog: status to Reopened, resolution cleared (CSV: none)"
        ),
        "regression-link": Capability(True, "issue links (CSV Inward/OutwardIssueLinks)"),
        "commits": Capability(True, _BY_MESSAGE + " (KEY-123)"),
        "verified": Capability(True, "status, labels, changelog status changes"),
        "cross-reference": Capability(False, _NO_MENTIONS + " (typed links: regression-link)"),
    },
    "github": {
        "reopened": Capability(
            True,
            "`reopened` events: issue-events / timeline responses, embedded timelines, "
            "GraphQL timelineItems, GH Archive IssuesEvents",
        ),
        "regression-link": Capability(False, "GitHub has no typed issue links"),
        "commits": Capability(
            True,
            _BY_MESSAGE + " (owner/repo#N, #N), and commit ids of `referenced` / `merged` "
            "/ `closed` events and PR merge commits",
        ),
        "verified": Capability(True, "labels and `labeled` events"),
        "cross-reference": Capability(True, "`cross-referenced` timeline events"),
    },
    "csv": {
        "reopened": Capability(False, _NO_HISTORY),
        "regression-link": Capability(False, "a row has no links column"),
        "commits": Capability(True, _BY_MESSAGE + " (the task_ref)"),
        "verified": Capability(True, "status, labels"),
        "cross-reference": Capability(False, _NO_HISTORY),
    },
    "jsonl": {
        "reopened": Capability(True, "`events` with kind reopened"),
        "regression-link": Capability(True, "`links` with kind and direction"),
        "commits": Capability(True, _BY_MESSAGE + " (the task_ref)"),
        "verified": Capability(True, "status, labels, `events`"),
        "cross-reference": Capability(True, "`events` with kind cross-referenced"),
    },
    "git-files": {
        "reopened": Capability(True, "a status line changed to reopened"),
        "regression-link": Capability(False, "task files have no links"),
        "commits": Capability(True, _BY_MESSAGE + " (the task file's path)"),
        "verified": Capability(True, "status lines"),
        "cross-reference": Capability(False, "task files have no mentions"),
    },
}


def capability(fmt: str, channel: str) -> Capability | None:
    """What ``fmt`` can carry on ``channel``; None for a format this table does not know."""
    if channel not in CHANNELS:
        raise ValueError(f"unknown channel {channel!r}; channels are {', '.join(CHANNELS)}")
    return CAN_CARRY.get(fmt, {}).get(channel)
