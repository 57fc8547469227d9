"""P2 — of the failures visible in git history, which gate would have caught each one?

1. Signals (:mod:`.signals`): reverts resolved to their target, and fixes whose SZZ-introducing
   commit is a recent feature change; cancelled reverts, unresolved reverts and cosmetic fixes
   are listed with their category but not counted.
2. Buckets (:mod:`.buckets`): each counted signal goes to *ci*, *human-review* or
   *only-self-reflection* by the pre-registered first-match rules.
3. Precision (:mod:`.precision`): measured on the hand-labelled validation set; the
   precision-corrected share is reported.
4. Gate correction (:mod:`.gates`): the buckets corrected by gate labels (double sampling);
   by the pre-registration's ``share_statistic`` (gate-corrected as registered) the verdict is
   :func:`~agent_reflection.experiments.verdict.decide` on that only-self-reflection share
   (:mod:`.shares`: the statistics, their intervals and the verdict).

The database is read by :mod:`.inputs`; this module runs the steps and writes the result.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from agent_reflection.experiments.p2.buckets import (
    BUCKETS,
    CI,
    CI_FAILED,
    CI_FIX_TEST,
    CI_INFERRED,
    CI_PASSED,
    CiResults,
    ci_evidence,
    classify,
    fix_tests,
)
from agent_reflection.experiments.p2.gates import (
    GateLabelSet,
    read_gate_label_set,
)
from agent_reflection.experiments.p2.inputs import History, load_ci_results, load_history
from agent_reflection.experiments.p2.paths import matches
from agent_reflection.experiments.p2.precision import (
    Label,
    PrecisionRow,
    SignalView,
    corrected_counts,
    label_files,
    precision_row,
    read_labels,
    row_doc,
)
from agent_reflection.experiments.p2.raters import (
    SecondRater,
    compare_raters,
    raters_note,
    read_second_rater,
)
from agent_reflection.experiments.p2.shares import (
    RepoShare,
    correct_by_gates,
    gate_doc,
    kill_condition,
    knowable_note,
    knowable_shares,
    precision_used,
    repo_shares_note,
    share_table,
    share_verdict,
    shares_by_repo,
)
from agent_reflection.experiments.p2.signals import (
    CATEGORIES,
    COUNTED,
    Signal,
    find_signals,
)
from agent_reflection.experiments.p2.standing import label_standing, standing_doc
from agent_reflection.experiments.registration import (
    P2Params,
    Preregistration,
    mark_seen,
)
from agent_reflection.experiments.results import ExperimentResult, experiment_result
from agent_reflection.load.git.signals import FIX_WORDINGS
from agent_reflection.reflection.risk_floor import evaluate_risk_floor

TITLE = "P2 — git history (what would only self-reflection have caught?)"


def run_p2(
    con: duckdb.DuckDBPyConnection,
    prereg: Preregistration,
    *,
    labels: Sequence[Label] | None = None,
    gate_labels: GateLabelSet | None = None,
    own_gate_labels: Sequence[str | Path] = (),
) -> ExperimentResult:
    """P2 on the database; labels from the pre-registration's ``labels_paths`` and gate labels
    from its gate keys unless ``labels`` is given (then only ``gate_labels`` correct by gate).
    ``own_gate_labels``: more files of the team's own gate labels (the notebook's
    ``gate_labels`` parameter), read after ``[p2] gate_labels_paths`` (a later row wins)."""
    prereg = mark_seen(con, prereg, "p2")
    p = prereg.p2
    history = load_history(con, p)
    holdout: Sequence[Label] = ()
    holdout_source: list[str] = []
    raters = SecondRater()
    if labels is None:
        base = Path(prereg.path).parent
        paths = label_files(base, p.labels_paths)
        labels = read_labels(paths)
        source = [path.relative_to(base).as_posix() for path in paths]
        held = label_files(base, p.holdout_labels_paths)
        holdout = read_labels(held)
        holdout_source = [path.relative_to(base).as_posix() for path in held]
        raters = read_second_rater(base, p.second_rater_labels_paths, p.adjudication_paths)
        gate_labels = read_gate_label_set(
            base,
            p.gate_labels_paths,
            raters,
            p.gate_label_buckets_paths,
            BUCKETS,
            extra_own=[Path(path).resolve() for path in own_gate_labels],
        )
    else:
        source = ["(given)"]
    repos = sorted({c.repo for c in history.commits.values()})
    ci = load_ci_results(con, p)
    inputs: dict[str, Any] = {
        "repos": repos,
        "labels_source": source,
        "holdout": holdout,
        "holdout_source": holdout_source,
        "ci": ci,
        "second_rater": raters,
        "gate_labels": gate_labels,
    }
    other_reading = None
    if p.fix_wording_sensitivity:  # the same analysis under the other reading of the fix words
        wording = next(w for w in FIX_WORDINGS if w != p.fix_wording)  # the one not registered
        other = replace(prereg, p2=replace(p, fix_wording=wording))
        alt = analyse_p2(load_history(con, other.p2), labels, other, **inputs)
        other_reading = reading_summary(alt)
    return analyse_p2(history, labels, prereg, **inputs, other_reading=other_reading)


def analyse_p2(
    history: History,
    labels: Sequence[Label],
    prereg: Preregistration,
    *,
    repos: Sequence[str] = (),
    labels_source: Sequence[str] = (),
    holdout: Sequence[Label] = (),
    holdout_source: Sequence[str] = (),
    ci: CiResults | None = None,
    second_rater: SecondRater | None = None,
    gate_labels: GateLabelSet | None = None,
    other_reading: Mapping[str, Any] | None = None,
) -> ExperimentResult:
    """P2 on a history. ``holdout``: the labels judged after the rules were frozen (also among
    ``labels``); their precision is reported apart, as the unbiased one. ``ci``: CI results
    by commit (``ci_runs``); without them the CI bucket is inferred from the fixing commit.
    ``second_rater``: an independent rating of the counted signals, compared with ``labels``
    (``details.precision.raters``, :mod:`~agent_reflection.experiments.p2.raters`).
    ``gate_labels``: the gate labels that correct the buckets (``details.gate_correction``,
    :mod:`~agent_reflection.experiments.p2.gates`); None = no gate correction.
    ``other_reading``: :func:`reading_summary` of the same analysis under the fix words' other
    reading (``details.fix_wording.other_reading`` and a note); None = not run.

    Steps: bucket the signals (CI results first, where there are any) and mark the labelled
    ones; say how fixes were paired with their cause and where the CI bucket came from;
    measure precision (all labels, then the held-out ones); correct the counts by it and by the
    gate labels; decide on the registered only-self-reflection share; tabulate.
    """
    p = prereg.p2
    notes: list[str] = []
    ci = ci or CiResults()
    signals = [_bucketed(history, p, s, ci) for s in find_signals(history, p)]
    counted = [s for s in signals if s["bucket"] is not None]
    # by sha alone: a clone's repo name (its folder) need not be the name the labels use
    label_map = {lab.fixing_sha: lab for lab in labels}
    for s in signals:  # each signal's hand label: failure true/false, None when not labelled
        lab = label_map.get(s["fixing_sha"])
        s["label_is_failure"] = None if lab is None else lab.is_failure
    attribution = _attribution(history, repos, notes)
    ci_note, ci_source = _ci_note(counted, ci)
    notes.append(ci_note)
    unresolved = sum(1 for s in signals if s["category"] == "revert-unresolved")
    if unresolved:
        notes.append(f"{unresolved} revert(s) whose target is not in the data: listed, not counted")
    # counted fixes whose typo words could not decide: attributed before text_lines
    stale = [
        s["fixing_sha"][:8]
        for s in counted
        if p.cosmetic_typo_text_only
        and (diff := history.diffs.get((s["repo"], s["fixing_sha"]))) is not None
        and diff.text_lines is None
        and re.search(p.cosmetic_typo_message, s["subject"], re.IGNORECASE)
    ]
    if stale:
        notes.append(
            f"{len(stale)} counted fix(es) whose subject says typo/spelling were attributed by an "
            f"older SZZ (no fix_changes.text_lines), so typo words could not decide for them "
            f"({', '.join(stale[:5])}{', ...' if len(stale) > 5 else ''}): delete the "
            "repository's fix_inducing and fix_changes rows and run `reflect load git --szz` again"
        )
    if p.fix_wording != "word":
        fix_like = sum(1 for c in history.commits.values() if c.is_fix_like)
        notes.append(
            f"fix words read as verbs ([p2] fix_wording = {p.fix_wording}): "
            f"{len(history.not_fix_by_wording):,} commit(s) whose fix words are only nouns or "
            "adjectives ('a fix', 'small fixes', 'fixed cost') are not fixes; "
            f"{fix_like:,} commit(s) are fix-like; on human-written messages this reading misses "
            "about a fifth of the repair claims that any fix word finds (tests/data/"
            "fix_wording_gharchive; docs/git.md, 'The verb reading')"
        )

    raw = Counter(s["bucket"] for s in counted)
    categories = Counter(s["category"] for s in signals)
    raw_counts = {b: raw.get(b, 0) for b in BUCKETS}
    precision = _precision(signals, counted, label_map, p, labels_source)
    holdout_map = {lab.fixing_sha: lab for lab in holdout}
    precision["doc"]["holdout"] = _holdout(counted, holdout_map, p, holdout_source)
    held = precision["doc"]["holdout"]["counted"]
    if held["labelled"]:
        notes.append(
            f"held-out precision (labels judged after the rules were frozen): "
            f"{held['failures']}/{held['labelled']} = {held['precision']:.2f} (Wilson "
            f"{held['ci_low']:.2f}-{held['ci_high']:.2f}); the pooled precision also uses labels "
            "read while the rules were revised, so it is optimistic"
        )
    if second_rater is not None and second_rater.labels:
        precision["doc"]["raters"] = compare_raters(
            [_view(s) for s in counted],
            labels,
            second_rater.labels,
            second_rater.adjudications,
            holdout=holdout_map,
            raw_counts=raw_counts,
            min_labelled=p.min_labelled_for_precision,
            confidence_level=p.confidence_level,
            sources={"first": labels_source, **second_rater.sources},
        )
        if precision["doc"]["raters"]["compared"]:
            notes.append(raters_note(precision["doc"]["raters"]))
    corrected = corrected_counts(
        raw_counts,
        {r.group: r for r in precision["rows_by_bucket"]},
        precision["row_counted"],
        p.min_labelled_for_precision,
    )
    n = len(counted)
    choice, gates = correct_by_gates(counted, raw_counts, gate_labels, p)
    standing = label_standing(counted, gate_labels, choice, p)
    for s in signals:  # each signal's gate label and who gave it, where labelled
        s["gate_label"], s["gate_rater"] = _gate_label(gate_labels, s["fixing_sha"])
    if standing.reason is not None:
        prereg = replace(prereg, exploratory=True, reasons=(*prereg.reasons, standing.reason))
    shares, exact = share_table(raw_counts, corrected, gates, n, p)
    verdict, metric = share_verdict(
        shares, exact, corrected, precision["row_counted"], choice, gates, n, p, notes
    )
    all_repos = sorted(set(repos) | {s["repo"] for s in counted})
    repo_shares = (
        shares_by_repo(counted, all_repos, gate_labels, p)
        if p.share_statistic == "gate-corrected" and gate_labels is not None
        else []
    )
    strata_note = repo_shares_note(repo_shares, verdict)
    if strata_note is not None:
        notes.append(strata_note)
    if other_reading is not None:
        notes.append(other_reading_note(other_reading, verdict))
    knowable = knowable_shares(counted, gate_labels, p)
    if knowable is not None:
        notes.append(knowable_note(knowable))
    notes.insert(0, standing.rests_on)  # first: on whose labels the verdict rests
    return experiment_result(
        prereg,
        "p2",
        title=TITLE,
        verdict=verdict,
        metric=metric,
        n=n,
        thresholds={
            "smallest_useful_share": p.smallest_useful_share,
            "min_signals": p.min_signals,
            "window_days": p.window_days,
            "min_labelled_for_precision": p.min_labelled_for_precision,
        },
        kill_condition=kill_condition(p),
        notes=notes,
        details={
            "verdict_rests_on": standing.rests_on,
            "knowable": knowable,
            "label_standing": standing_doc(standing),
            "attribution": attribution,
            "fix_wording": {
                "reading": p.fix_wording,
                "not_fix_like": len(history.not_fix_by_wording),
                "other_reading": None if other_reading is None else dict(other_reading),
            },
            "ci_bucket_source": ci_source,
            "ci_evidence": dict(Counter(str(s["ci_evidence"]) for s in counted)),
            "pooled": raw_counts,
            "pooled_corrected": (
                None if corrected is None else {b: round(v, 3) for b, v in corrected.counts.items()}
            ),
            "precision_used": precision_used(corrected),
            "shares": shares,
            "gate_correction": gate_doc(choice, gates, gate_labels, raw_counts, p),
            "by_repo": _by_repo(counted, all_repos, repo_shares),
            "by_category": {c: categories.get(c, 0) for c in CATEGORIES},
            "by_rule": dict(sorted(Counter(s["rule"] for s in signals).items())),
            "precision": precision["doc"],
            "signals": signals,
        },
    )


def _gate_label(labels: GateLabelSet | None, sha: str) -> tuple[str | None, str | None]:
    """The gate label of one signal and its rater(s): the team's own (its consensus, the
    raters named), else the shipped second rater's; (None, None) where none labels it."""
    if labels is None:
        return None, None
    if sha in labels.own:
        raters = sorted(labels.own_ratings.get(sha, {})) or ["own"]
        return labels.own[sha], "+".join(raters)
    if sha in labels.shipped:
        return labels.shipped[sha], "shipped second rater"
    return None, None


def _attribution(history: History, repos: Sequence[str], notes: list[str]) -> dict[str, str]:
    """How each repository's fixes were paired with the change they fix (SZZ or file overlap),
    with the note that says what the weaker pairing means."""
    all_repos = sorted({*repos, *(c.repo for c in history.commits.values())})
    attribution = {r: "szz" if r in history.szz_repos else "file-overlap" for r in all_repos}
    overlap = [r for r, how in attribution.items() if how == "file-overlap"]
    if overlap:
        notes.append(
            f"SZZ attribution not loaded for {', '.join(overlap)} (run `reflect load git "
            "--szz`): there a fix is paired with a feature change by a shared code file, the "
            "imprecise rule the SZZ table replaces"
        )
    return attribution


def reading_summary(result: ExperimentResult) -> dict[str, Any]:
    """What a P2 result under another fix-word reading decided, for the registered one's
    report: the reading, the counted signals, the statistic with its interval, the verdict."""
    return {
        "reading": result.details["fix_wording"]["reading"],
        "counted": result.n,
        **{k: v for k, v in result.metric.to_dict().items() if k in ("value", "ci_low", "ci_high")},
        "verdict": result.verdict,
    }


def other_reading_note(other: Mapping[str, Any], verdict: str) -> str:
    """One line: the verdict under the other fix-word reading, and whether it is the same."""
    shown = (
        "undefined"
        if other["value"] is None or other["value"] != other["value"]
        else f"{other['value']:.3f} ({other['ci_low']:.3f}-{other['ci_high']:.3f})"
    )
    same = (
        "the same verdict: it does not hang on how fix words are read"
        if other["verdict"] == verdict
        else f"NOT the registered verdict ({verdict}): the verdict hangs on how fix words are read"
    )
    return (
        f"under the other reading of fix words (fix_wording = {other['reading']}): "
        f"{other['counted']} counted signal(s), statistic {shown}, verdict {other['verdict']}; "
        f"{same}"
    )


def _by_repo(
    counted: Sequence[Mapping[str, Any]], repos: Sequence[str], shares: Sequence[RepoShare]
) -> list[dict[str, Any]]:
    """Counted signals per repository and bucket (every repository in ``repos``, even empty),
    with its gate-corrected share and verdict alone where ``shares`` has them."""
    per_repo: dict[str, Counter[str]] = {r: Counter() for r in repos}
    for s in counted:
        per_repo.setdefault(s["repo"], Counter())[s["bucket"]] += 1
    alone = {s.repo: s for s in shares}
    rows = []
    for r, c in sorted(per_repo.items()):
        row: dict[str, Any] = {"repo": r, "signals": sum(c.values())}
        row.update({b: c.get(b, 0) for b in BUCKETS})
        if r in alone:
            a = alone[r]
            share = {} if a.share is None else a.share.to_dict(4)
            row.update(
                {
                    "gate_corrected": share.get("value"),
                    "ci_low": share.get("ci_low"),
                    "ci_high": share.get("ci_high"),
                    "gate_labels": a.labels,
                    "verdict_alone": a.verdict,
                }
            )
        rows.append(row)
    return rows


def _ci_note(counted: Sequence[Mapping[str, Any]], ci: CiResults) -> tuple[str, str]:
    """The report's line on where the CI bucket came from, and ``inferred`` | ``ci_runs`` |
    ``mixed`` (some signals decided by CI results, the others by the fix's diff or inferred)."""
    by = Counter(str(s["ci_evidence"]) for s in counted)
    tested = (
        f"; {by[CI_FIX_TEST]} whose fix adds the test beside the code it repairs (the fix's "
        "diff: no check caught it when it landed, so its paths infer no CI)"
        if by[CI_FIX_TEST]
        else ""
    )
    if not ci:
        return (
            "CI bucket inferred from the fixing commit (its words or a configuration-only "
            f"diff): no CI results are loaded{tested}",
            "inferred",
        )
    data = by[CI_FAILED] + by[CI_PASSED]
    source = "inferred" if not data else ("ci_runs" if data == len(counted) else "mixed")
    return (
        f"CI bucket from CI results (ci_runs) for {data} of {len(counted)} counted signal(s): "
        f"{by[CI_FAILED]} with a failed CI run on the introducing commit or the fix's parent "
        f"(CI caught it), {by[CI_PASSED]} whose runs there all passed{tested}; inferred from "
        f"the fixing commit for the other {by[CI_INFERRED]} (no CI result on their commits)",
        source,
    )


def _bucketed(history: History, p: P2Params, s: Signal, ci: CiResults) -> dict[str, Any]:
    risk = None
    bucket = None
    rule = s.category_rule
    why = s.why
    adds_tests: list[str] = []
    tests: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    if s.kind == "fix":
        files = history.files.get((s.repo, s.fixing_sha), ())
        adds_tests = [f.path for f in files if (f.added or 0) > 0 and matches(f.path, p.test_paths)]
        tests = fix_tests(
            [(f.path, f.added) for f in files], p.test_paths, p.non_code_paths, p.ci_fix_test
        )
    if s.introducing_sha is not None:
        # lockfiles, manifests, bundler configs and docs are no review surface by themselves
        surface = [
            path
            for path in history.paths(s.repo, s.introducing_sha)
            if not matches(path, p.review_surface_ignore_paths)
        ]
        risk = evaluate_risk_floor(surface, threshold=p.risk_threshold)
    evidence = None
    gate_evidence = None
    if s.category in COUNTED:
        if ci or tests[0]:
            evidence = ci_evidence(
                ci, s.introducing_sha, s.fixing_sha, p.ci_failed_conclusions, tests
            )
        facts = history.facts(
            s.repo,
            s.fixing_sha,
            p.non_code_paths,
            failing_risk=risk,
            failing_review=history.review(s.repo, s.introducing_sha),
        )
        c = classify(p.rules, facts, ci=evidence)
        bucket, rule, gate_evidence = c.bucket, c.rule, c.evidence
        why = f"{s.why}; {c.why}"
        if evidence is not None and evidence.status in (CI_PASSED, CI_FIX_TEST):
            why += f"; {evidence.why}"
        elif adds_tests and bucket != CI:
            why += f"; the fix adds test lines ({', '.join(adds_tests[:2])}): CI did not catch it"
    return {
        "repo": s.repo,
        "kind": s.kind,
        "category": s.category,
        "fixing_sha": s.fixing_sha,
        "introducing_sha": s.introducing_sha,
        "at": pd.Timestamp(s.at).isoformat(),
        "subject": s.subject,
        "bucket": bucket,
        "rule": rule,
        "category_rule": s.category_rule,
        "why": why,
        "resolved_by": s.resolved_by,
        "blamed_lines": s.blamed_lines,
        "gap_days": None if s.gap_days is None else round(s.gap_days, 3),
        "adds_tests": bool(adds_tests),
        "ci_evidence": None if bucket is None else (evidence.status if evidence else CI_INFERRED),
        "evidence": gate_evidence,
        "introducing_risk": None if risk is None else risk.to_dict(),
    }


def _rows(
    views: Sequence[SignalView], labels: Mapping[str, Label], level: float, name: str
) -> tuple[list[PrecisionRow], list[PrecisionRow], PrecisionRow]:
    """Precision of ``views`` by kind, by bucket, and of them all (the row ``name``)."""
    by_kind = [
        precision_row(k, [v for v in views if v.category == k], labels, level) for k in COUNTED
    ]
    by_bucket = [
        precision_row(b, [v for v in views if v.bucket == b], labels, level) for b in BUCKETS
    ]
    return by_kind, by_bucket, precision_row(name, views, labels, level)


def _precision(
    signals: Sequence[Mapping[str, Any]],
    counted: Sequence[Mapping[str, Any]],
    labels: Mapping[str, Label],
    p: P2Params,
    source: Sequence[str],
) -> dict[str, Any]:
    level = p.confidence_level
    views = [_view(s) for s in counted]
    by_kind, by_bucket, all_counted = _rows(views, labels, level, "all counted")
    excluded = precision_row(
        "not counted (cosmetic, cancelled, unresolved, duplicate)",
        [_view(s) for s in signals if s["bucket"] is None],
        labels,
        level,
    )
    doc = {
        "measured": bool(labels) and all_counted.labelled >= max(p.min_labelled_for_precision, 1),
        "labels": list(source),
        "labelled_commits": len(labels),
        "by_kind": [row_doc(r) for r in by_kind],
        "by_bucket": [row_doc(r) for r in by_bucket],
        "counted": row_doc(all_counted),
        # a high failure share here means P2 throws real failures away
        "not_counted": row_doc(excluded),
    }
    return {"doc": doc, "rows_by_bucket": by_bucket, "row_counted": all_counted}


def _holdout(
    counted: Sequence[Mapping[str, Any]],
    labels: Mapping[str, Label],
    p: P2Params,
    source: Sequence[str],
) -> dict[str, Any]:
    """Precision on the labels judged after the rules were frozen (``holdout_labels_paths``):
    the rules were revised after reading the other labels, so only this one is unbiased."""
    views = [_view(r) for r in counted]
    by_kind, by_bucket, held = _rows(views, labels, p.confidence_level, "held-out counted")
    return {
        "labels": list(source),
        "labelled_commits": len(labels),
        "counted": row_doc(held),
        "by_kind": [row_doc(r) for r in by_kind],
        "by_bucket": [row_doc(r) for r in by_bucket],
    }


def _view(row: Mapping[str, Any]) -> SignalView:
    return SignalView(
        row["repo"], row["fixing_sha"], row["category"], row["bucket"], row["introducing_sha"]
    )
