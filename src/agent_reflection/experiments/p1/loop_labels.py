"""P1 on loop labels: each session's final confidence against its outcome in the history.

``reflect load git`` links sessions to their commits and derives each session's outcome
(``session_outcomes``: wrong / right-so-far / censored, see docs/loading.md). Here a session is
one row: the confidence of its last sidecar (its final self-report), correct = not wrong.
Censored sessions are excluded and counted; so are sessions whose last sidecar has no
confidence, and sessions with sidecars but no linked commit (no outcome can exist).

When the stored outcomes were derived with another ``p1.loop_window_days`` or
``loop_ignore_cosmetic_fixes`` than the run's (an override), the outcomes are derived again from
``session_commits`` with the run's values by the same query (a SELECT: the database stays
read-only), and a note says so.

Two secondary measures, registered as EXPLORATORY (no threshold, no decision):
``most_likely_wrong.surface`` against the risk-floor surface of the files the session's revert
or fix touched (hit rate vs the base rate of the named surface among those fixes), and the share
of sessions with a non-empty ``known_not_in_diff`` among wrong vs right-so-far sessions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import duckdb
import pandas as pd

from agent_reflection.experiments.registration import Preregistration
from agent_reflection.reflection.risk_floor import evaluate_risk_floor
from agent_reflection.stats import UndefinedStatistic
from agent_reflection.stats.wilson import wilson_ci
from agent_reflection.store.db import read_sql

WRONG, RIGHT, CENSORED = "wrong", "right-so-far", "censored"
LABEL_COLUMNS = [
    "session_id",
    "confidence",
    "correct",
    "agent",
    "repo",
    "task_ref",
    "mlw_surface",
    "known_not_in_diff",
    "outcome",
    "evidence_surface",
]


@dataclass(frozen=True)
class LoopLabels:
    """The labelled sessions (one row each) and what was left out, and why."""

    frame: pd.DataFrame
    counts: dict[str, int]
    notes: tuple[str, ...] = ()
    secondary: dict[str, Any] = field(default_factory=dict)


def loop_labels(con: duckdb.DuckDBPyConnection, prereg: Preregistration) -> LoopLabels:
    """The P1 rows of the sessions in ``con`` (see the module docstring)."""
    p = prereg.p1
    notes: list[str] = []
    sidecars = con.execute(read_sql("experiments/p1_loop_sidecars.sql")).df()
    stored = con.execute(read_sql("experiments/p1_loop_outcomes.sql")).df()
    pairs = zip(stored["window_days"].astype(int), stored["ignore_cosmetic_fixes"], strict=True)
    used = sorted({(int(w), bool(c)) for w, c in pairs})
    wanted = (p.loop_window_days, p.loop_ignore_cosmetic_fixes)
    if used and used != [wanted]:
        from agent_reflection.load.sessions import session_outcomes

        stored = session_outcomes(con, prereg).to_pandas()
        notes.append(
            f"session_outcomes were derived with (loop_window_days, "
            f"loop_ignore_cosmetic_fixes) {used}; this run's are {wanted}: outcomes derived "
            "again from session_commits with them"
        )
    # one outcome per session (a session committing in several repos: wrong if any is, else
    # censored if any is), with its first wrong repo's evidence commit
    columns = ["session_id", "outcome", "repo", "evidence_sha"]
    per_session = pd.DataFrame(columns=columns)
    if not stored.empty:
        rank = stored["outcome"].map({WRONG: 0, CENSORED: 1, RIGHT: 2})
        ordered = stored.assign(_rank=rank).sort_values(["session_id", "_rank", "repo"])
        per_session = ordered.drop_duplicates("session_id")[columns].reset_index(drop=True)
    merged = sidecars.merge(per_session, on="session_id", how="left")
    counts = {
        "sessions_with_sidecars": len(sidecars),
        "no_linked_commit": int(merged["outcome"].isna().sum()),
        "censored": int((merged["outcome"] == CENSORED).sum()),
        "wrong": int((merged["outcome"] == WRONG).sum()),
        "right_so_far": int((merged["outcome"] == RIGHT).sum()),
    }
    known = merged[merged["outcome"].isin([WRONG, RIGHT])].copy()
    counts["no_confidence"] = int(known["confidence"].isna().sum())
    known["evidence_surface"] = _evidence_surfaces(con, known)
    frame = known[known["confidence"].notna()].copy()
    frame["correct"] = frame["outcome"] != WRONG
    frame["repo"] = frame["repo"].fillna(frame["sidecar_repo"])
    counts["labelled"] = len(frame)
    counts["labelled_wrong"] = int((~frame["correct"]).sum())
    notes.append(
        f"loop labels: {counts['labelled']} sessions ({counts['labelled_wrong']} wrong, "
        f"{counts['labelled'] - counts['labelled_wrong']} right so far); excluded: "
        f"{counts['censored']} censored (less than {p.loop_window_days} days of history after "
        f"their last commit), {counts['no_linked_commit']} without a linked commit, "
        f"{counts['no_confidence']} without a confidence"
    )
    if len(stored) and not bool(stored["szz_loaded"].all()):
        notes.append(
            "some repos were loaded without --szz: fixes of the sessions' lines were not "
            "looked for there, so 'wrong' undercounts (reverts and reopened tasks only)"
        )
    secondary = exploratory_measures(frame, p.confidence_level)
    return LoopLabels(frame[LABEL_COLUMNS].reset_index(drop=True), counts, tuple(notes), secondary)


def _evidence_surfaces(con: duckdb.DuckDBPyConnection, known: pd.DataFrame) -> list[str | None]:
    """The risk-floor surface of the files each wrong session's revert or fix touched."""
    wanted = known[(known["outcome"] == WRONG) & known["evidence_sha"].notna()]
    if wanted.empty:
        return [None] * len(known)
    rows = con.execute(
        read_sql("experiments/p1_loop_commit_files.sql"),
        {"repos": list(wanted["repo"]), "shas": list(wanted["evidence_sha"])},
    ).fetchall()
    surface = {(repo, sha): evaluate_risk_floor(paths).surface for repo, sha, paths in rows}
    return [
        surface.get((r, s)) if isinstance(s, str) else None
        for r, s in zip(known["repo"], known["evidence_sha"], strict=True)
    ]


def exploratory_measures(frame: pd.DataFrame, confidence_level: float) -> dict[str, Any]:
    """The two exploratory measures on labelled sessions (see the module docstring)."""
    said = frame["known_not_in_diff"].fillna("").astype(str).str.strip() != ""
    return {
        "registered": "exploratory",
        "surface": _surface_hits(frame, confidence_level),
        "known_not_in_diff": {
            name: _wilson(
                int((said & (frame["outcome"] == outcome)).sum()),
                int((frame["outcome"] == outcome).sum()),
                confidence_level,
            )
            for name, outcome in (("wrong", WRONG), ("right_so_far", RIGHT))
        },
    }


def _wilson(k: int, n: int, level: float) -> dict[str, Any]:
    try:
        w = wilson_ci(k, n, level)
    except UndefinedStatistic:
        return {"k": k, "n": n, "share": None, "ci_low": None, "ci_high": None}
    return {"k": k, "n": n, "share": w.proportion, "ci_low": w.ci_low, "ci_high": w.ci_high}


def _surface_hits(frame: pd.DataFrame, level: float) -> dict[str, Any]:
    """Wrong sessions that named a surface and whose revert/fix touched a known surface: how
    often the named surface is the fix's. Base rate: the hit rate expected if each session named
    its surface at random with the frequencies of the fix surfaces of these same sessions."""
    rows = frame[
        (frame["outcome"] == WRONG)
        & frame["mlw_surface"].notna()
        & frame["evidence_surface"].notna()
    ]
    n = len(rows)
    hits = int((rows["mlw_surface"] == rows["evidence_surface"]).sum())
    out: dict[str, Any] = {"hits": _wilson(hits, n, level), "base_rate": None, "by_surface": []}
    if not n:
        return out
    fix_share = rows["evidence_surface"].value_counts(normalize=True)
    out["base_rate"] = float(rows["mlw_surface"].map(fix_share).fillna(0.0).mean())
    for surface, g in rows.groupby("mlw_surface", sort=True):
        out["by_surface"].append(
            {
                "named": str(surface),
                "n": len(g),
                "hits": int((g["evidence_surface"] == surface).sum()),
                "base_rate": float(fix_share.get(surface, 0.0)),
            }
        )
    return out


def describe(labels: LoopLabels) -> list[str]:
    """Report lines of the exploratory measures."""
    s = labels.secondary
    lines = []
    hits = s.get("surface", {}).get("hits")
    if hits and hits["n"]:
        lines.append(
            f"EXPLORATORY: most_likely_wrong.surface named the surface of the eventual fix in "
            f"{hits['k']}/{hits['n']} wrong sessions ({hits['share']:.0%}, "
            f"{hits['ci_low']:.0%}-{hits['ci_high']:.0%}); base rate of the named surfaces "
            f"among those fixes {s['surface']['base_rate']:.0%}"
        )
    k = s.get("known_not_in_diff", {})
    if k and k["wrong"]["n"] and k["right_so_far"]["n"]:
        w, r = k["wrong"], k["right_so_far"]
        lines.append(
            f"EXPLORATORY: known_not_in_diff non-empty in {w['k']}/{w['n']} wrong sessions "
            f"({w['share']:.0%}, {w['ci_low']:.0%}-{w['ci_high']:.0%}) vs {r['k']}/{r['n']} "
            f"right-so-far ({r['share']:.0%}, {r['ci_low']:.0%}-{r['ci_high']:.0%})"
        )
    return lines
