"""``reflect status``: what a workspace's database holds, and what each experiment needs next.

Read-only and quick: the ``loads`` bookkeeping per source, then for P1, P2 and P3 what data it
has in the terms its pre-registration decides on (P1's self-rated-high subset against its
minimum sample, P2's commits and SZZ, P3's completed tasks) and the one command to run next.
A database that does not exist is not created: the status says where it looked and how to
start.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from agent_reflection.experiments.registration import Preregistration, minimum_sample
from agent_reflection.store.db import (
    SIMULATED_SOURCE,
    connect,
    pandas_deferred,
    read_sql,
    simulated_origin,
)

#: What to run to give each experiment data (the commands a newcomer needs).
HOOK_INSTALL = "`reflect hook install`"
LOAD_SIDECARS = "`reflect load sidecars .reflection/`"
LOAD_LABELS = "`reflect load labels FILE`"
LOAD_GIT = "`reflect load git PATH --szz`"
LOAD_BOARD = "`reflect load board FILE`"


@dataclass(frozen=True)
class SourceLoads:
    """The loads of one source (``loads.source``), from the ``loads`` table."""

    source: str
    loads: int
    ok: int
    not_ok: int
    rows_loaded: int
    rows_rejected: int
    last_finished: str | None
    last_origin: str
    last_status: str

    def line(self) -> str:
        failed = f", {self.not_ok} not ok (newest: {self.last_status})" if self.not_ok else ""
        rejected = f", {self.rows_rejected:,} rejected" if self.rows_rejected else ""
        when = f", last {self.last_finished}" if self.last_finished else ""
        return (
            f"{self.source}: {self.loads} load(s){failed}; {self.rows_loaded:,} rows loaded"
            f"{rejected}{when} from {self.last_origin}"
        )


@dataclass(frozen=True)
class ExperimentStatus:
    """What one experiment has in the database, and the next step to a verdict."""

    experiment: str
    has: str
    next: str
    #: whether ``reflect run`` could reach a verdict on these data (else: insufficient-data)
    ready: bool

    def line(self) -> str:
        return f"{self.experiment.upper()}: {self.has}; next: {self.next}"


@dataclass(frozen=True)
class WorkspaceStatus:
    database: Path
    exists: bool
    sources: tuple[SourceLoads, ...]
    experiments: tuple[ExperimentStatus, ...]
    simulated: str | None = None

    def experiment(self, name: str) -> ExperimentStatus:
        return next(e for e in self.experiments if e.experiment == name)

    def lines(self) -> list[str]:
        """One screen: the database, what was loaded per source, each experiment's next step."""
        if not self.exists:
            head = [f"database: {self.database} (not there: nothing loaded yet)"]
        else:
            head = [f"database: {self.database}"]
        if self.simulated:
            head.append(f"SIMULATED data: {self.simulated}")
        loaded = [f"  {s.line()}" for s in self.sources] or ["  nothing yet"]
        steps = [f"  {e.line()}" for e in self.experiments]
        return [*head, "loaded:", *loaded, "experiments:", *steps]

    def to_dict(self) -> dict[str, Any]:
        return {
            "database": str(self.database),
            "exists": self.exists,
            "simulated": self.simulated,
            "sources": [asdict(s) for s in self.sources],
            "experiments": [asdict(e) for e in self.experiments],
        }


def workspace_status(db_path: Path, prereg: Preregistration) -> WorkspaceStatus:
    """The status of the database at ``db_path`` (opened read-only; never created)."""
    if not db_path.is_file():
        return WorkspaceStatus(db_path, False, (), experiment_steps({}, prereg))
    con = connect(db_path, read_only=True)
    try:
        with pandas_deferred():  # DuckDB's parameter binding would import pandas (0.3 s)
            return database_status(con, db_path, prereg)
    finally:
        con.close()


def database_status(
    con: duckdb.DuckDBPyConnection, db_path: Path, prereg: Preregistration
) -> WorkspaceStatus:
    """:func:`workspace_status` on an open connection."""
    present = {r[0] for r in con.execute(read_sql("experiments/notebook_tables.sql")).fetchall()}
    sources: tuple[SourceLoads, ...] = ()
    if "loads" in present:
        rows = con.execute(read_sql("status/loads_by_source.sql")).fetchall()
        sources = tuple(
            SourceLoads(
                str(source),
                int(loads),
                int(ok),
                int(not_ok),
                int(loaded),
                int(rejected),
                _stamp(finished),
                str(origin),
                str(status),
            )
            for source, loads, ok, not_ok, loaded, rejected, finished, origin, status in rows
            if source != SIMULATED_SOURCE  # said once, as what made the data
        )
    counts = _counts(con, present, prereg)
    simulated = simulated_origin(con) if "loads" in present else None
    return WorkspaceStatus(db_path, True, sources, experiment_steps(counts, prereg), simulated)


def _counts(
    con: duckdb.DuckDBPyConnection, present: set[str], prereg: Preregistration
) -> dict[str, int]:
    """The numbers the experiments' next steps depend on (0 where a table is missing)."""
    counts: dict[str, int] = {}

    def read(table: str, query: str, keys: tuple[str, ...], **params: Any) -> None:
        row = con.execute(read_sql(query), params).fetchone() if table in present else None
        counts.update({k: int(v or 0) for k, v in zip(keys, row or (0,) * len(keys), strict=True)})

    read("reflections", "status/self_reports.sql", ("sidecars", "with_confidence", "degraded"))
    read(
        "labels",
        "status/corpus_labels.sql",
        ("labels", "corpora", "high_correct", "high_incorrect"),
        threshold=prereg.p1.high_confidence_threshold,
    )
    if "session_outcomes" in present:
        outcomes = dict(con.execute(read_sql("status/session_outcomes.sql")).fetchall())
        counts.update({f"outcome {k}": int(v) for k, v in outcomes.items()})
    if "commits" in present and "fix_inducing" in present:
        read("commits", "status/git.sql", ("commits", "repos", "szz_repos"))
    read("tasks", "status/tasks.sql", ("tasks", "completed"))
    return counts


def experiment_steps(
    counts: Mapping[str, int], prereg: Preregistration
) -> tuple[ExperimentStatus, ...]:
    """P1, P2 and P3: what each has (``counts``, :func:`_counts`) and what it needs next."""
    return (p1_step(counts, prereg), p2_step(counts), p3_step(counts, prereg))


def self_reports(counts: Mapping[str, int]) -> tuple[str, str | None]:
    """(what the sidecars say about self-reports, the step that fixes their absence or None)."""
    sidecars, confident = counts.get("sidecars", 0), counts.get("with_confidence", 0)
    if not sidecars:
        return (
            "no sidecars loaded",
            f"capture your agents' self-reports: {HOOK_INSTALL}, then after some sessions "
            f"{LOAD_SIDECARS}",
        )
    text = f"{sidecars:,} sidecar(s), {confident:,} with a confidence"
    if not confident:
        return (
            f"{text}: self-reports are off (every sidecar is degraded)",
            f"make the agents write their self-report ({HOOK_INSTALL} sets it up; docs/capture.md)",
        )
    return text, None


def p1_step(counts: Mapping[str, int], prereg: Preregistration) -> ExperimentStatus:
    p1 = prereg.p1
    need = minimum_sample(p1).n
    reports, fix_reports = self_reports(counts)
    if p1.label_source == "loop":
        wrong, right = counts.get("outcome wrong", 0), counts.get("outcome right-so-far", 0)
        has = (
            f"{wrong + right:,} labelled session(s) ({wrong:,} wrong, {right:,} right so far; "
            f"{need:,} of each needed); {reports}"
        )
        if fix_reports:
            return ExperimentStatus("p1", has, fix_reports, False)
        if not wrong + right:
            step = f"derive each session's outcome from its commits: {LOAD_GIT}"
            return ExperimentStatus("p1", has, step, False)
        ready = min(wrong, right) >= need
        return ExperimentStatus("p1", has, _run_or_more("p1", ready, "labelled sessions"), ready)
    labels = counts.get("labels", 0)
    sessions = counts.get("outcome wrong", 0) + counts.get("outcome right-so-far", 0)
    if not labels:
        step = f"load labels with {LOAD_LABELS} (confidence and correctness per answer)"
        if fix_reports:
            step += f", or {fix_reports}"
        elif sessions:
            step += (
                f"; your {sessions:,} sessions with an outcome are loop labels: "
                "`reflect run p1 -p p1.label_source loop` (EXPLORATORY: the file registers corpus)"
            )
        return ExperimentStatus("p1", f"0 labelled rows; {reports}", step, False)
    correct, incorrect = counts.get("high_correct", 0), counts.get("high_incorrect", 0)
    has = (
        f"{labels:,} labelled rows in {counts.get('corpora', 0)} corpus(es); confidence >= "
        f"{p1.high_confidence_threshold:g}: {correct:,} correct, {incorrect:,} incorrect "
        f"({need:,} of each needed)"
    )
    ready = min(correct, incorrect) >= need
    return ExperimentStatus("p1", has, _run_or_more("p1", ready, "labels"), ready)


def p2_step(counts: Mapping[str, int]) -> ExperimentStatus:
    commits, repos, szz = (counts.get(k, 0) for k in ("commits", "repos", "szz_repos"))
    if not commits:
        return ExperimentStatus("p2", "0 commits", f"load a repository: {LOAD_GIT}", False)
    has = f"{commits:,} commits in {repos} repo(s), {szz} with SZZ attributions"
    if not szz:
        # P2 runs without SZZ (a fix is paired with a feature by a shared file, and the
        # report says so), but the registered attribution is SZZ's
        step = f"{LOAD_GIT} (SZZ, the registered attribution), then `reflect run p2`"
        return ExperimentStatus("p2", has, step, True)
    # whether its signals reach p2.min_signals is known once they are bucketed: by the run
    return ExperimentStatus("p2", has, "`reflect run p2` (it counts the failure signals)", True)


def p3_step(counts: Mapping[str, int], prereg: Preregistration) -> ExperimentStatus:
    tasks, completed = counts.get("tasks", 0), counts.get("completed", 0)
    if not tasks:
        return ExperimentStatus("p3", "0 tasks", f"load a board export: {LOAD_BOARD}", False)
    need = prereg.p3.min_tasks
    has = f"{tasks:,} tasks, {completed:,} completed ({need} eligible needed)"
    ready = completed >= need
    return ExperimentStatus("p3", has, _run_or_more("p3", ready, "completed tasks"), ready)


def _run_or_more(name: str, ready: bool, what: str) -> str:
    if ready:
        return f"`reflect run {name}`"
    return f"more {what} (`reflect run {name}` now says insufficient-data)"


def _stamp(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    return str(value)


def empty_run_steps(
    results: Mapping[str, Mapping[str, Any]], db_path: Path, prereg: Preregistration
) -> dict[str, str]:
    """For each experiment of a run that had no data (n = 0), the next step
    :func:`workspace_status` gives it; P1's label source is the one the run used."""
    empty = [name for name, doc in results.items() if not doc.get("n")]
    if not empty:
        return {}
    source = (results.get("p1", {}).get("parameters") or {}).get("label_source")
    if source and source != prereg.p1.label_source:
        prereg = dataclasses.replace(prereg, p1=dataclasses.replace(prereg.p1, label_source=source))
    status = workspace_status(db_path, prereg)
    return {name: status.experiment(name).next for name in empty}


def empty_run_hints(
    results: Mapping[str, Mapping[str, Any]], db_path: Path, prereg: Preregistration
) -> list[str]:
    """:func:`empty_run_steps` as the lines ``reflect run`` prints, pointing to
    ``reflect status``."""
    return [
        f"{name}: no data (n = 0); next: {step} (`reflect status` shows what each experiment has)"
        for name, step in empty_run_steps(results, db_path, prereg).items()
    ]
