"""P3 — can a right/wrong outcome be detected by machine within the window?

Completed tasks with at least ``min_follow_up_days`` of follow-up (the others are
right-censored: excluded and counted). Follow-up runs to the task's *source's* ``as_of``: the
latest timestamp among that source's own board records (a source = one board export, told apart
by its origin), never over other tables, not even commits naming its tasks. A task is
*detectable* when any signal falls within ``window_days`` after completion (``0 <= at -
completed_at <= window``, so day 30 counts and day 31 does not): reopened (not within the
pre-registered minutes of a close: that close was accidental, and is no completion either); a
pre-registered regression link in the pre-registered direction (dated by the linked task's
creation); a revert of, or a fix-like commit touching a file of, a commit linked to the task; a
verified / confirmed state or label; a pre-registered cross-reference whose polarity is known
(a problem report in the data, filed after the task's completion, mentioning it).

Channels before verdicts, per task: a channel counts only for the tasks that actually carry it.
A task carries ``reopened`` when it has an event history (an event its record's own date
fields do not make), ``commits`` when a commit linked to it is in the loaded git history;
``regression-link`` and ``verified`` are fields of every record, carried by every task of a
source holding any. The verdict comes from the Wilson interval of the fraction over the
eligible tasks that carry every pre-registered required channel
(:func:`agent_reflection.experiments.verdict.decide`, null 0, pre-registered smallest useful
fraction); the others are "not observable", counted per source and channel. When fewer than
``min_tasks`` are observable it is ``insufficient-data``, the measured fraction over all
eligible tasks shown only as a lower bound. One record (one commit naming one task) therefore
makes one task observable, never a whole source.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import Any, cast

import duckdb
import numpy as np
import pandas as pd

from agent_reflection.experiments.registration import P3Params, Preregistration, mark_seen
from agent_reflection.experiments.results import ExperimentResult, Metric, experiment_result
from agent_reflection.experiments.verdict import INSUFFICIENT, KILL, decide
from agent_reflection.load.board.channels import CHANNELS, capability
from agent_reflection.stats.interval import Interval
from agent_reflection.stats.wilson import wilson_ci
from agent_reflection.store.db import read_sql

TITLE = "P3 — outcome detectability (machine signal within the window)"
SIGNAL_KINDS = ("reopened", "regression-link", "revert", "fix", "verified", "cross-reference")
#: Signal kind -> the channel that carries it.
CHANNEL_OF_KIND = {
    "reopened": "reopened",
    "regression-link": "regression-link",
    "revert": "commits",
    "fix": "commits",
    "verified": "verified",
    "cross-reference": "cross-reference",
}
#: "No signal": no finished task's outcome is visible to a machine. The interval must exclude
#: it before P3 continues (the decision's null value).
NULL_FRACTION = 0.0
_SIGNAL_COLUMNS = ["task_ref", "kind", "polarity", "at", "detail", "origin", "filed_at"]


@dataclass(frozen=True)
class ChannelStatus:
    """One source's status on one channel: can its format carry it, does its data carry it."""

    origin: str
    format: str
    channel: str
    can_carry: bool | None  # None: a format the capability table does not know
    how: str
    records: int  # records of that kind in the source (any task, any date)
    dated: int  # of which dated (only links can be undated)
    required: bool
    eligible: int = 0  # the source's eligible (uncensored) completed tasks
    tasks: int = 0  # of which carry the channel themselves

    @property
    def share(self) -> float | None:
        return self.tasks / self.eligible if self.eligible else None

    @property
    def carries(self) -> bool:
        return self.records > 0

    def row(self) -> dict[str, Any]:
        return {**asdict(self), "carries": self.carries, "share": self.share}


@dataclass(frozen=True)
class SourceSummary:
    """One source's tasks, follow-up horizon, channels and (lower-bound) fraction."""

    origin: str
    format: str
    as_of: str | None
    tasks: int
    completed: int
    censored: int
    eligible: int
    detectable: int
    fraction: Interval | None  # None: no eligible task
    missing_channels: tuple[str, ...]  # required channels some eligible task does not carry
    observable: int = 0  # eligible tasks carrying every required channel
    #: required channel -> eligible tasks not carrying it
    lacking: tuple[tuple[str, int], ...] = ()

    @property
    def complete(self) -> bool:
        return not self.missing_channels

    def row(self) -> dict[str, Any]:
        doc = asdict(self)
        fraction = doc.pop("fraction") or {}
        missing = doc.pop("missing_channels")
        doc["lacking"] = dict(self.lacking)
        doc["not_observable"] = self.eligible - self.observable
        doc["fraction"] = fraction.get("value")
        doc["ci_low"] = fraction.get("ci_low")
        doc["ci_high"] = fraction.get("ci_high")
        doc["missing_channels"] = list(missing)
        doc["complete"] = self.complete
        doc["lower_bound"] = not self.complete
        return doc


def kill_condition(p: P3Params) -> str:
    required = ", ".join(p.required_channels) or "none"
    return (
        f"kill (caveat notes only) when the {p.confidence_level:.0%} Wilson interval's upper "
        f"bound of the fraction of completed tasks (>= {p.min_follow_up_days} days of follow-up) "
        f"with a signal within {p.window_days} days is below the smallest useful fraction "
        f"{p.smallest_useful_fraction:.0%}; continue when its lower bound is above "
        f"{NULL_FRACTION:g} and the fraction reaches {p.smallest_useful_fraction:.0%}; else "
        f"inconclusive. Only tasks carrying every required channel ({required}) are decided "
        "on (the others are not observable, counted); fewer than "
        f"{p.min_tasks} such eligible tasks -> insufficient-data (the fraction over all "
        "eligible tasks is then only a lower bound). A reopen within "
        f"{p.accidental_close_minutes} minutes of a close undoes an accidental close; a "
        "cross-reference counts only from a problem report filed after the completion"
    )


def fixed_as_of(p: P3Params) -> datetime | None:
    """The pre-registered instant, or None for ``as_of = "data"`` (per source)."""
    if p.as_of == "data":
        return None
    value = datetime.fromisoformat(p.as_of)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def sources(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """One row per source: origin, format, tasks, data_as_of, linked_commits."""
    return con.execute(read_sql("experiments/p3_sources.sql")).df()


def completed_tasks(con: duckdb.DuckDBPyConnection, p: P3Params) -> pd.DataFrame:
    """Tasks completed at least once: task_ref, project, origin, source, category,
    completed_at (the first completion that was not accidental), has_history and
    linked_commits (the task's own channels)."""
    return con.execute(
        read_sql("experiments/p3_tasks.sql"),
        {
            "completion_kinds": list(p.completion_event_kinds),
            "reopen_kinds": list(p.reopen_event_kinds),
            "reopen_status_pattern": p.reopen_status_pattern,
            "accidental_minutes": p.accidental_close_minutes,
        },
    ).df()


def signals(con: duckdb.DuckDBPyConnection, p: P3Params) -> pd.DataFrame:
    """Every signal about every task (task_ref, kind, polarity, at, detail, origin)."""
    sig = con.execute(
        read_sql("experiments/p3_signals.sql"),
        {
            "reopen_kinds": list(p.reopen_event_kinds),
            "reopen_status_pattern": p.reopen_status_pattern,
            "link_kinds": [r.kind for r in p.regression_links],
            "link_directions": [r.direction for r in p.regression_links],
            "verified_pattern": p.verified_pattern,
            "verified_kinds": list(p.verified_event_kinds),
            "commit_signals": p.commit_signals,
            "cross_reference_kinds": list(p.cross_reference_kinds),
            "cross_reference_pattern": p.cross_reference_pattern,
            "problem_pattern": p.cross_reference_problem_pattern,
            "completion_kinds": list(p.completion_event_kinds),
            "accidental_minutes": p.accidental_close_minutes,
        },
    ).df()
    origins = con.execute(read_sql("experiments/p3_task_origins.sql")).df()
    return sig.merge(origins, on="task_ref", how="left")


def with_follow_up(
    tasks: pd.DataFrame, srcs: pd.DataFrame, p: P3Params, as_of: datetime | None = None
) -> pd.DataFrame:
    """``tasks`` plus ``as_of`` (its source's, or the fixed instant) and ``follow_up_days``."""
    out = tasks.copy()
    fixed = as_of or fixed_as_of(p)
    if fixed is not None:
        stamp = pd.Timestamp(fixed)
        out["as_of"] = stamp.tz_convert("UTC") if stamp.tzinfo else stamp.tz_localize("UTC")
    else:
        by_origin = pd.to_datetime(srcs.set_index("origin")["data_as_of"], utc=True)
        out["as_of"] = out["origin"].map(by_origin)
    delta = pd.to_datetime(out["as_of"], utc=True) - pd.to_datetime(out["completed_at"], utc=True)
    out["follow_up_days"] = delta.dt.total_seconds() / 86400.0
    return out


def task_outcomes(
    con: duckdb.DuckDBPyConnection, p: P3Params, as_of: datetime | None = None
) -> pd.DataFrame:
    """One row per completed task: censored, detectable, first signal, negative/positive."""
    tasks = with_follow_up(completed_tasks(con, p), sources(con), p, as_of)
    return outcomes_from(tasks, signals(con, p), p)


def outcomes_from(tasks: pd.DataFrame, sig: pd.DataFrame, p: P3Params) -> pd.DataFrame:
    """Join tasks (with ``follow_up_days``) and signals into per-task outcomes (pure)."""
    out = tasks.copy()
    out["censored"] = out["follow_up_days"].isna() | (out["follow_up_days"] < p.min_follow_up_days)
    if sig.empty:
        sig = pd.DataFrame(columns=_SIGNAL_COLUMNS)
    if "filed_at" not in sig:
        sig = sig.assign(filed_at=None)
    s = sig[["task_ref", "kind", "polarity", "at", "filed_at"]].merge(
        out[["task_ref", "completed_at"]], on="task_ref", how="inner"
    )
    done = pd.to_datetime(s["completed_at"], utc=True)
    delta = pd.to_datetime(s["at"], utc=True) - done
    s["days"] = delta.dt.total_seconds() / 86400.0
    window = float(p.window_days)
    s["in_window"] = s["days"].notna() & (s["days"] >= 0) & (s["days"] <= window)
    # a mention counts only from a report filed after the completion (not an older issue)
    older = (s["kind"] == "cross-reference") & ~(pd.to_datetime(s["filed_at"], utc=True) >= done)
    s.loc[older, "in_window"] = False
    inw = s[s["in_window"]].sort_values(["task_ref", "days", "kind"])
    first = inw.groupby("task_ref", sort=False).first()
    out["detectable"] = out["task_ref"].isin(inw["task_ref"])
    out["first_signal_kind"] = out["task_ref"].map(first["kind"]) if len(first) else None
    out["days_to_signal"] = out["task_ref"].map(first["days"]) if len(first) else np.nan
    neg = set(inw.loc[inw["polarity"] == "negative", "task_ref"])
    pos = set(inw.loc[inw["polarity"] == "positive", "task_ref"])
    out["negative"] = out["task_ref"].isin(neg)
    out["positive"] = out["task_ref"].isin(pos)
    for kind in SIGNAL_KINDS:
        out[f"has_{kind}"] = out["task_ref"].isin(set(inw.loc[inw["kind"] == kind, "task_ref"]))
    return out


def channel_table(srcs: pd.DataFrame, sig: pd.DataFrame, p: P3Params) -> list[ChannelStatus]:
    """Per source and channel: can the format carry it, how many records the source has."""
    if sig.empty:
        sig = pd.DataFrame(columns=_SIGNAL_COLUMNS)
    channel = sig["kind"].map(CHANNEL_OF_KIND)
    rows: list[ChannelStatus] = []
    for src in srcs.itertuples(index=False):
        mine = sig[sig["origin"] == src.origin]
        mine_channel = channel[sig["origin"] == src.origin]
        formats = str(src.format).split(",")
        for name in CHANNELS:
            caps = [c for f in formats if (c := capability(f, name)) is not None]
            can = any(c.can_carry for c in caps) if caps else None
            how = next((c.how for c in caps if c.can_carry), caps[0].how if caps else "unknown")
            if name == "commits":
                records = int(cast(int, src.linked_commits)) if p.commit_signals else 0
                dated = records
            else:
                of_channel = mine[mine_channel == name]
                records, dated = len(of_channel), int(of_channel["at"].notna().sum())
            rows.append(
                ChannelStatus(
                    str(src.origin),
                    str(src.format),
                    name,
                    can,
                    how,
                    records,
                    dated,
                    name in p.required_channels,
                )
            )
    return rows


def run_p3(con: duckdb.DuckDBPyConnection, prereg: Preregistration) -> ExperimentResult:
    prereg = mark_seen(con, prereg, "p3")
    p = prereg.p3
    return analyse_p3(completed_tasks(con, p), signals(con, p), sources(con), prereg)


def analyse_p3(
    tasks: pd.DataFrame, sig: pd.DataFrame, srcs: pd.DataFrame, prereg: Preregistration
) -> ExperimentResult:
    """P3 from frames: completed tasks (task_ref, project, origin, source, completed_at,
    has_history, linked_commits), signals (task_ref, kind, polarity, at, detail, origin,
    filed_at) and sources (origin, format, tasks, data_as_of, linked_commits)."""
    p = prereg.p3
    source_channels = channel_table(srcs, sig, p)
    out = task_channels(outcomes_from(with_follow_up(tasks, srcs, p), sig, p), source_channels, p)
    uncensored = out[~out["censored"]]
    channels = [_with_task_counts(c, uncensored) for c in source_channels]
    summaries = [_source_summary(src, out, channels, p) for src in srcs.itertuples(index=False)]
    decided = uncensored[uncensored["observable"]]
    lacking = [s for s in summaries if not s.complete and s.eligible]
    not_observable = len(uncensored) - len(decided)
    lower_bound = len(decided) < p.min_tasks and not_observable > 0
    eligible = uncensored if lower_bound else decided
    n, k = len(eligible), int(eligible["detectable"].sum())
    if p.as_of != "data":
        notes = [f"as of {p.as_of} (pre-registered instant, every source)"]
    elif not summaries:
        notes = ["as of: unknown (no sources)"]
    else:
        per = "; ".join(f"{s.origin}: {s.as_of or 'unknown (no timestamps)'}" for s in summaries)
        notes = [f"as of, per source (latest timestamp of its own records): {per}"]
    censored = int(out["censored"].sum())
    if censored:
        notes.append(
            f"{censored} completed task(s) right-censored (< {p.min_follow_up_days} "
            "days of follow-up to their source's as_of): excluded"
        )
    name = "detectable_fraction_lower_bound" if lower_bound else "detectable_fraction"
    fraction = wilson_ci(k, n, p.confidence_level) if n else None
    metric = Metric(name, fraction, "wilson", p.confidence_level)
    notes.extend(
        f"source {s.origin} ({s.format}) lacks required channel(s) "
        f"{', '.join(s.missing_channels)} on {s.eligible - s.observable:,} of its {s.eligible:,} "
        f"eligible task(s) ({_lacking_text(s)}): not observable; its {s.detectable}/{s.eligible}"
        " detectable is a lower bound, not a verdict"
        for s in lacking
    )
    notes.extend(_silent_category_notes(uncensored, p))
    excluded = 0 if lower_bound else not_observable
    if lower_bound:
        verdict = INSUFFICIENT
        notes.insert(0, _lower_bound_note(k, n, len(decided), lacking, metric, p))
    elif n < p.min_tasks:
        verdict = INSUFFICIENT
        notes.insert(0, f"{n} eligible completed task(s); {p.min_tasks} needed for a verdict")
    else:
        assert fraction is not None
        decision = decide(
            fraction,
            null_value=NULL_FRACTION,
            smallest_useful=p.smallest_useful_fraction,
            what="detectable fraction",
        )
        verdict = decision.verdict
        notes.insert(0, f"{k}/{n} tasks detectable; {decision.reason}")
        if verdict == KILL:
            notes.append("caveat notes only: any closed loop could only produce caveat notes")
        if excluded:
            notes.append(
                f"{excluded} eligible task(s) lacking a required channel are not observable: "
                "excluded from the verdict (counted per source and channel)"
            )
    unseen = possibly_missed(out, sig)
    if len(unseen):
        notes.append(
            f"{len(unseen)} regression link(s) point at a task filed after the linking task "
            "was created but before its recorded completion, in a source with no resolution "
            "history for it (a Jira CSV's ResolutionDate is the LAST resolution): if it was "
            "resolved earlier, these are regressions of that first resolution the data cannot "
            "date; listed (possibly_missed), not counted"
        )
    undated = int(sig["at"].isna().sum()) if len(sig) else 0
    if undated:
        notes.append(
            f"{undated} signal(s) have no date (e.g. links to tasks not in the data) "
            "and do not count"
        )
    as_of_by_source = {s.origin: s.as_of for s in summaries}
    cols = ["task_ref", "project", "origin", "detectable", "first_signal_kind", "days_to_signal"]
    task_rows = [
        {str(k): v for k, v in r.items()}
        for r in eligible[cols].head(MAX_TASK_ROWS).to_dict("records")
    ]
    for r in task_rows:
        r["detectable"] = bool(r["detectable"])
        if not r["detectable"]:
            r["first_signal_kind"] = None
            r["days_to_signal"] = None
    single = set(as_of_by_source.values())
    detected = eligible.loc[eligible["detectable"], "days_to_signal"]
    details = {
        "reason": notes[0],  # the verdict's why, in one line (the CLI prints it)
        "as_of": next(iter(single)) if len(single) == 1 else None,
        "as_of_by_source": as_of_by_source,
        "lower_bound": lower_bound,
        "required_channels": list(p.required_channels),
        "channels": [c.row() for c in channels],
        "sources": [s.row() for s in summaries],
        "completed": len(out),
        "censored": censored,
        "observable": len(decided),
        "not_observable": not_observable,
        "excluded": excluded,
        "eligible": n,
        "detectable": k,
        "by_kind": [
            {
                "kind": kind,
                "tasks": int(eligible[f"has_{kind}"].sum()),
                "fraction": float(eligible[f"has_{kind}"].mean()) if n else None,
            }
            for kind in SIGNAL_KINDS
        ],
        "by_project": _by_group(eligible, "project", p),
        "by_category": _by_group(eligible, "category", p),
        "time_to_signal_days": [float(x) for x in detected],
        "time_to_signal_summary": None
        if detected.empty
        else {
            "min": float(detected.min()),
            "median": float(detected.median()),
            "mean": float(detected.mean()),
            "max": float(detected.max()),
        },
        "tasks": task_rows,
        "possibly_missed": unseen.head(MAX_TASK_ROWS).to_dict("records"),
        # signals that cannot be dated (links to tasks outside the data): listed, not counted
        "undated_signals": []
        if sig.empty
        else [
            {"task_ref": str(r["task_ref"]), "kind": str(r["kind"]), "detail": str(r["detail"])}
            for r in sig[sig["at"].isna()]
            .sort_values(["task_ref", "detail"])
            .head(MAX_TASK_ROWS)
            .to_dict("records")
        ],
    }
    return experiment_result(
        prereg,
        "p3",
        title=TITLE,
        verdict=verdict,
        metric=metric,
        n=n,
        thresholds={
            "smallest_useful_fraction": p.smallest_useful_fraction,
            "null_fraction": NULL_FRACTION,
            "window_days": p.window_days,
            "min_follow_up_days": p.min_follow_up_days,
            "min_tasks": p.min_tasks,
            "required_channels": list(p.required_channels),
        },
        kill_condition=kill_condition(p),
        notes=notes,
        details=details,
    )


def possibly_missed(outcomes: pd.DataFrame, sig: pd.DataFrame) -> pd.DataFrame:
    """Regression links (task_ref, detail, at) filed between the task's creation and its
    completion, for tasks with no event history: a task is dated from its FIRST resolution
    when the data hold its resolutions (a Jira changelog), but an export that keeps only the
    last (a Jira CSV) hides a regression of an earlier resolution before that date."""
    columns = ["task_ref", "detail", "at"]
    if sig.empty or "created_at" not in outcomes:
        return pd.DataFrame(columns=columns)
    links = sig.loc[(sig["kind"] == "regression-link") & sig["at"].notna(), columns]
    blind = outcomes.loc[~outcomes["has_history"].fillna(False).astype(bool)]
    both = links.merge(blind[["task_ref", "created_at", "completed_at"]], on="task_ref")
    at = pd.to_datetime(both["at"], utc=True)
    inside = (at > pd.to_datetime(both["created_at"], utc=True)) & (
        at < pd.to_datetime(both["completed_at"], utc=True)
    )
    found = both.loc[inside, columns].sort_values(columns).reset_index(drop=True)
    found["at"] = pd.to_datetime(found["at"], utc=True).map(lambda t: t.isoformat())
    return found


def task_channels(
    outcomes: pd.DataFrame, channels: list[ChannelStatus], p: P3Params
) -> pd.DataFrame:
    """``outcomes`` plus ``carries_<channel>`` per channel and ``observable`` (the task carries
    every required channel). A task carries ``reopened`` (``cross-reference``) when it has an
    event history and its source holds at least one such record, ``commits`` when a commit
    linked to it is loaded; ``regression-link`` and ``verified`` live in every record's fields,
    so a source holding any carries them for all its tasks."""
    out = outcomes.copy()
    carried = {(c.origin, c.channel) for c in channels if c.carries}
    origin = out["origin"].astype(str)
    history = out["has_history"].fillna(False).astype(bool)
    for name in CHANNELS:
        holding = {o for o, channel in carried if channel == name}
        in_source = origin.isin(holding)
        if name in ("reopened", "cross-reference"):
            carries = history & in_source
        elif name == "commits":
            carries = (out["linked_commits"].fillna(0) > 0) & bool(p.commit_signals)
        else:
            carries = in_source
        out[f"carries_{name}"] = carries
    out["observable"] = True
    for name in p.required_channels:
        out["observable"] &= out[f"carries_{name}"]
    return out


def _with_task_counts(c: ChannelStatus, uncensored: pd.DataFrame) -> ChannelStatus:
    mine = uncensored[uncensored["origin"] == c.origin]
    return replace(c, eligible=len(mine), tasks=int(mine[f"carries_{c.channel}"].sum()))


def _lacking_text(s: SourceSummary) -> str:
    return ", ".join(f"{channel}: {n:,} lack it" for channel, n in s.lacking)


def _source_summary(
    src: Any, out: pd.DataFrame, channels: list[ChannelStatus], p: P3Params
) -> SourceSummary:
    mine = out[out["origin"] == src.origin]
    eligible = mine[~mine["censored"]]
    k, n = int(eligible["detectable"].sum()), len(eligible)
    mine_channels = [c for c in channels if c.origin == src.origin and c.required]
    lacking = tuple((c.channel, c.eligible - c.tasks) for c in mine_channels)
    if n:  # per task: a required channel some eligible task does not carry
        missing = tuple(channel for channel, count in lacking if count)
    else:  # nothing eligible: what the source as a whole lacks
        missing = tuple(c.channel for c in mine_channels if not c.carries)
    fixed = fixed_as_of(p)
    as_of = fixed if fixed is not None else src.data_as_of
    return SourceSummary(
        origin=str(src.origin),
        format=str(src.format),
        as_of=None if as_of is None or pd.isna(as_of) else pd.Timestamp(as_of).isoformat(),
        tasks=int(src.tasks),
        completed=len(mine),
        censored=int(mine["censored"].sum()),
        eligible=n,
        detectable=k,
        fraction=wilson_ci(k, n, p.confidence_level) if n else None,
        missing_channels=missing,
        observable=int(eligible["observable"].sum()),
        lacking=tuple((channel, count) for channel, count in lacking if count),
    )


def _silent_category_notes(eligible: pd.DataFrame, p: P3Params) -> list[str]:
    """A note per source where one task category shows signals and another shows none at all:
    the export may hold no history for the silent one (the onnxruntime dump fetched events for
    issues only), so the source's fraction mixes tasks it can judge with tasks it cannot."""
    if "category" not in eligible or eligible.empty:
        return []
    notes: list[str] = []
    for origin, mine in eligible.groupby("origin", sort=True):
        per = mine.groupby("category", dropna=False)["detectable"].agg(["sum", "count"])
        silent = per[per["sum"] == 0]
        speaking = per[per["sum"] > 0]
        if silent.empty or speaking.empty:
            continue
        parts = []
        for cat, r in speaking.iterrows():
            k, n = int(r["sum"]), int(r["count"])
            w = wilson_ci(k, n, p.confidence_level)
            parts.append(f"{cat}: {k}/{n} = {w.value:.1%} ({w.ci_low:.1%}-{w.ci_high:.1%})")
        shown = "; ".join(parts)
        quiet = ", ".join(f"{cat} ({int(r['count'])} eligible)" for cat, r in silent.iterrows())
        notes.append(
            f"source {origin}: no {quiet} task shows any signal, while {shown}: the export may "
            "hold no event history for them, and the source's fraction mixes the two"
        )
    return notes


def _lower_bound_note(
    k: int, n: int, observable: int, lacking: list[SourceSummary], metric: Metric, p: P3Params
) -> str:
    per_source = "; ".join(
        f"{s.origin} ({s.format}) lacks {', '.join(s.missing_channels)} "
        f"({_lacking_text(s)}, of {s.eligible:,} eligible)"
        for s in lacking
    )
    text = (
        f"insufficient-data: {observable} eligible task(s) carry every required channel, "
        f"{p.min_tasks} needed; required channel(s) missing: {per_source}. The measured "
        f"{k}/{n} = {k / n:.1%} detectable is only a LOWER BOUND on the detectable fraction "
        "(signals the data cannot show were not counted)"
    )
    if metric.interval is not None and metric.interval.value >= p.smallest_useful_fraction:
        text += (
            f"; the lower bound already reaches the smallest useful fraction "
            f"{p.smallest_useful_fraction:.0%}: the missing channels could only raise it"
        )
    return text


def _by_group(eligible: pd.DataFrame, column: str, p: P3Params) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    if column not in eligible:  # a tasks frame built without it
        return rows
    for value, g in eligible.groupby(column, dropna=False, sort=True):
        k, n = int(g["detectable"].sum()), len(g)
        w = wilson_ci(k, n, p.confidence_level)
        rows.append(
            {
                column: str(value),
                "n": n,
                "detectable": k,
                "fraction": w.proportion,
                "ci_low": w.ci_low,
                "ci_high": w.ci_high,
            }
        )
    return rows


#: Per-task rows kept in results.json (the rest are counted, not listed).
MAX_TASK_ROWS = 5000
