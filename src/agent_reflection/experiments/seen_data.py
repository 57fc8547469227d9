"""Was the run's data read while its pre-registration was written?

A registration written while some data were read is not out of sample for those data: its rules
(and their amendments) were fitted, in part, to them. The registration names such data in its
``[seen]`` table (:class:`~agent_reflection.experiments.preregistration.SeenData`): markers of
each repository, board and label corpus it was written against. A run whose tables hold any
marker is **exploratory**, and says which data and why, so a verdict on them is never shown as
a confirmation of the registration. Other data confirm.

Markers, not the data: the registration stays small, and a marker is found wherever the data
were loaded from (a clone instead of a bundle, a renamed export). A small slice of a seen
repository or corpus can miss every sampled marker; a root or newest commit, or a project key,
still catches most loads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

import duckdb

from agent_reflection.experiments.preregistration import Preregistration
from agent_reflection.store.db import read_sql

Experiment = Literal["p1", "p2", "p3"]


@dataclass(frozen=True)
class SeenMatch:
    """Data of one repository, board project or label corpus that the registration saw."""

    what: str  # repository | board project | label corpus
    name: str  # the repository, project or corpus as loaded
    present: int  # markers (commits, labels) or tasks found
    example: str  # one of them

    def describe(self) -> str:
        """e.g. "repository 'flask' (19 of the [seen] marker commits, e.g. 001100bc0b3a)"."""
        found = {
            "repository": f"{self.present:,} of the [seen] marker commits, e.g. "
            f"{self.example[:12]}",
            "board project": f"{self.present:,} tasks, e.g. {self.example}",
            "label corpus": f"{self.present:,} of the [seen] marker records, e.g. "
            f"{self.example[:12]}",
        }[self.what]
        return f"{self.what} {self.name!r} ({found})"


def seen_reason(matches: Sequence[SeenMatch]) -> str:
    """The exploratory reason for ``matches`` (one or more), in one sentence."""
    return (
        f"the data include {'; '.join(m.describe() for m in matches)}, which the "
        "pre-registration's [seen] table names as read while it was written: its rules are "
        "not out of sample for these data (other data confirm)"
    )


def seen_in(
    con: duckdb.DuckDBPyConnection,
    prereg: Preregistration,
    experiment: Experiment,
    *,
    corpus: str | None = None,
) -> tuple[SeenMatch, ...]:
    """The seen data among the tables ``experiment`` reads (P1: the labels of ``corpus``,
    every corpus when None; P2: commits; P3: the board projects)."""
    seen = prereg.seen
    # (query, the table it reads, markers, parameters)
    checks: list[tuple[str, str, tuple[str, ...], dict[str, object]]] = []
    if experiment == "p1" and prereg.p1.label_source == "corpus":
        checks.append(
            ("experiments/seen_labels.sql", "labels", seen.label_record_keys, {"corpus": corpus})
        )
    elif experiment == "p2":
        checks.append(("experiments/seen_commits.sql", "commits", seen.git_commits, {}))
    elif experiment == "p3":
        checks.append(("experiments/seen_projects.sql", "tasks", seen.board_projects, {}))
    checks = [c for c in checks if c[2]]
    if not checks:
        return ()
    tables = {t for (t,) in con.execute(read_sql("experiments/seen_tables.sql")).fetchall()}
    found: list[SeenMatch] = []
    for query, table, markers, params in checks:
        if table not in tables:
            continue
        rows = con.execute(read_sql(query), {"markers": list(markers), **params}).fetchall()
        found.extend(SeenMatch(str(w), str(n), int(p), str(e)) for w, n, p, e in rows)
    return tuple(found)


def mark_seen(
    con: duckdb.DuckDBPyConnection,
    prereg: Preregistration,
    experiment: Experiment,
    *,
    corpus: str | None = None,
) -> Preregistration:
    """``prereg``, exploratory with a reason naming each seen repository, project or corpus
    when the data ``experiment`` reads include any."""
    matches = seen_in(con, prereg, experiment, corpus=corpus)
    if not matches:
        return prereg
    return replace(
        prereg,
        exploratory=True,
        reasons=(*prereg.reasons, seen_reason(matches)),
    )
