"""P1 — is self-rated confidence a usable signal of correctness?

Primary statistic (pre-registered): the **stratified** ROC AUC of confidence for correctness on
the self-rated-high subset (confidence >= threshold): per-stratum AUCs (strata = the first
pre-registered strata column present, e.g. ``model``) weighted by their correct x incorrect
pairs; strata with one class are listed and dropped. Its interval is a seeded **cluster
bootstrap** (clusters = e.g. ``question_id``: rows sharing a question are resampled together),
with a cluster-robust stratified DeLong interval beside it. Above the registered budget
(``bootstrap_budget``: resamples x (cluster types + keys)) the DeLong interval is primary and
the bootstrap is not run; ``details.primary_interval`` records which interval was used and why.

Three outcomes, from the interval (:func:`agent_reflection.experiments.verdict.decide`):
``continue`` when the lower bound is above 0.5 and the interval still allows
``smallest_useful_auc`` (``continue_rule = "interval"``; ``"estimate"``: the AUC reaches it);
``kill`` when the upper bound is below ``smallest_useful_auc``; otherwise ``inconclusive``, with
the number of further rows that would decide it. ``insufficient-data``: no interval, or an
undecided interval that includes 0.5 and is wider than the registered precision target
(``max_ci_half_width``), measured on the data at hand, so at their class balance and clustering;
the report says how many further rows at the observed mix would reach the target. An interval
that decides, or that already excludes chance, is never insufficient. (A registration without
the target: fewer rows of either class than the minimum derived from ``smallest_useful_auc`` and
``power``, Hanley-McNeil, is ``insufficient-data``.)

Strata qualify the verdict (``below_chance_strata = "bonferroni"``): every stratum whose AUC
interval, at the confidence level Bonferroni-adjusted for the number of strata, lies wholly
below 0.5 is named in the verdict ("continue, except model X, which is anti-informative") and
in results.json's ``qualifications``.

Secondary: the pooled AUC (DeLong) and its own decision, a ``simpson`` warning when pooled and
stratified disagree, per-stratum AUCs with Cochran's Q / I^2, per-group AUC, Brier score,
top-decile lift, ROC points and a reliability diagram over all rows.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from agent_reflection.errors import ReflectionError
from agent_reflection.experiments.registration import (
    P1Params,
    Preregistration,
    analysis_unit,
    mark_seen,
    minimum_sample,
)
from agent_reflection.experiments.results import ExperimentResult, Metric, experiment_result
from agent_reflection.experiments.verdict import (
    ANTI_INFORMATIVE,
    CONTINUE,
    INCONCLUSIVE,
    INSUFFICIENT,
    Decision,
    decide,
)
from agent_reflection.stats import UndefinedStatistic
from agent_reflection.stats._common import two_sided_z
from agent_reflection.stats.brier import brier_score
from agent_reflection.stats.cluster_bootstrap import (
    bootstrap_size,
    cluster_bootstrap_stratified_auc,
)
from agent_reflection.stats.delong import delong_ci
from agent_reflection.stats.ece import ReliabilityBin, reliability
from agent_reflection.stats.interval import Interval
from agent_reflection.stats.lift import top_fraction_lift
from agent_reflection.stats.power import (
    DecisionPower,
    decision_power,
    design_half_width,
    scale_to_decide,
)
from agent_reflection.stats.roc import roc_curve_points
from agent_reflection.stats.stratified import (
    MISSING_STRATUM,
    EncodedDesign,
    StratifiedAUC,
    encode_design,
    heterogeneity,
    stratified_auc,
)
from agent_reflection.stats.wilson import wilson_ci
from agent_reflection.store.db import read_sql

#: ROC points kept in results.json (evenly spaced along the curve).
ROC_POINTS = 500
#: An AUC with no signal.
NULL_AUC = 0.5
#: The names of the two intervals in the metric's ``ci_method``.
BOOTSTRAP_CI = "cluster bootstrap (percentile)"
DELONG_CI = "stratified DeLong (cluster-robust)"
#: ... when the bootstrap is over its registered budget (the summary line then says why)
DELONG_OVER_BUDGET_CI = "stratified DeLong (cluster-robust; cluster bootstrap over its budget)"
TITLE = "P1 — confidence calibration (stratified AUC on the self-rated-high subset)"


def kill_condition(p: P1Params) -> str:
    method = p.ci_method.replace("_", " ")
    if p.ci_method == "cluster_bootstrap" and p.bootstrap_budget > 0:
        method += "; the clustered stratified DeLong interval above the bootstrap budget"
    reaches = (
        f"its upper bound reaches {p.smallest_useful_auc}"
        if p.continue_rule == "interval"
        else f"the AUC reaches {p.smallest_useful_auc}"
    )
    if p.max_ci_half_width > 0:
        enough = (
            f"an undecided interval that includes {NULL_AUC} and is wider than the precision "
            f"target (half-width {p.max_ci_half_width:g}) -> insufficient-data"
        )
    else:
        n = minimum_sample(p).n
        enough = (
            f"fewer than {n} correct or incorrect rows (the sample giving each decision "
            f"{p.power:.0%} power) -> insufficient-data"
        )
    below = (
        "; strata whose Bonferroni-adjusted interval lies wholly below 0.5 are named in the verdict"
        if p.below_chance_strata == "bonferroni"
        else ""
    )
    return (
        f"on confidence >= {p.high_confidence_threshold}, the stratified AUC's "
        f"{p.confidence_level:.0%} CI ({method}): continue when its lower bound is above "
        f"{NULL_AUC} and {reaches}; kill only when its upper bound is below "
        f"{p.smallest_useful_auc}; otherwise inconclusive; {enough}{below}"
    )


@dataclass(frozen=True)
class OperatingCharacteristics:
    """What P1's registered rule does at its precision target: the target's half-width and
    standard error, and how often each decision happens at a true AUC of 0.5 and of the
    smallest useful AUC (normal approximation; ``reflect prereg power`` prints it). A narrower
    interval than the target gives each decision more power. ``estimate_rule`` is the power of
    "continue" had it also needed the estimate to reach the smallest useful AUC."""

    half_width: float
    se: float
    confidence_level: float
    continue_rule: str
    at_null: DecisionPower
    at_useful: DecisionPower
    estimate_rule_at_useful: DecisionPower
    rows_per_class: int


def precision_target(p: P1Params) -> float:
    """The registered half-width, or (a registration without one) the half-width at which each
    decision has the registered power."""
    if p.max_ci_half_width > 0:
        return p.max_ci_half_width
    return design_half_width(
        p.smallest_useful_auc,
        confidence_level=p.confidence_level,
        power=p.power,
        null_value=NULL_AUC,
    )


def operating_characteristics(p: P1Params) -> OperatingCharacteristics:
    """The power of each decision of ``p``'s rule at its precision target."""
    half = precision_target(p)
    se = half / two_sided_z(p.confidence_level)

    def at(truth: float, rule: str) -> DecisionPower:
        return decision_power(
            truth,
            se,
            null_value=NULL_AUC,
            smallest_useful=p.smallest_useful_auc,
            confidence_level=p.confidence_level,
            continue_when=rule,
        )

    return OperatingCharacteristics(
        half,
        se,
        p.confidence_level,
        p.continue_rule,
        at(NULL_AUC, p.continue_rule),
        at(p.smallest_useful_auc, p.continue_rule),
        at(p.smallest_useful_auc, "estimate"),
        minimum_sample(p).n,
    )


def corpus_labels(con: duckdb.DuckDBPyConnection, corpus: str | None = None) -> pd.DataFrame:
    """Rows of the ``labels`` table: confidence, correct, corpus and one column per group key.

    DuckDB reads the group keys column by column (no JSON parsed a row at a time in Python,
    except for a key of mixed or nested types): a key whose values are all strings is a column
    of strings, all integers one of integers (floats when some rows lack it, as pandas builds
    it from the decoded objects), all numbers one of floats.
    """
    where = {"corpus": corpus}
    found = con.execute(read_sql("experiments/p1_group_keys.sql"), where).fetchall()
    keys = [str(k) for (k,) in found]
    types: dict[str, set[str]] = {k: set() for k in keys}
    if keys:
        query = read_sql("experiments/p1_group_types.sql")
        for (kinds,) in con.execute(query, {**where, "keys": keys}).fetchall():
            for key, kind in zip(keys, kinds, strict=True):
                types[key].add(str(kind) if kind is not None else "NULL")
    # a key of one kind (strings, or numbers) is read as text and typed by Arrow
    text_keys = [
        k
        for k, kinds in types.items()
        if kinds - {"NULL"} <= {"VARCHAR"} or kinds - {"NULL"} <= _NUMBER_TYPES
    ]
    json_keys = [k for k in types if k not in text_keys]
    table = (
        con.execute(
            read_sql("experiments/p1_corpus_labels.sql"),
            {"corpus": corpus, "text_keys": text_keys or [""], "json_keys": json_keys or [""]},
        )
        .arrow()
        .read_all()
    )
    import pyarrow.compute as pc

    text, as_json = table.column("group_text"), table.column("group_json")
    df: pd.DataFrame = table.drop_columns(["group_text", "group_json"]).to_pandas()
    for key in types:
        if key in text_keys:
            df[key] = _text_column(pc.list_element(text, text_keys.index(key)), types[key])
        else:  # mixed or nested types: decoded one by one, as the objects hold them
            values = pc.list_element(as_json, json_keys.index(key)).to_pylist()
            df[key] = [json.loads(v) if v is not None else np.nan for v in values]
    return df


#: JSON types (``json_type`` names) read as integers / as floats.
_INTEGER_TYPES = {"BIGINT", "UBIGINT"}
_NUMBER_TYPES = {"BIGINT", "UBIGINT", "DOUBLE"}


def _text_column(text: Any, kinds: set[str]) -> Any:
    """One group key's values (Arrow text, null where a row lacks the key) of one kind (all
    strings or all numbers) as the column pandas builds from the decoded objects."""
    kinds = kinds - {"NULL"}
    if kinds <= {"VARCHAR"}:
        return text.to_numpy(zero_copy_only=False)
    if kinds <= _INTEGER_TYPES and text.null_count == 0:
        return text.cast("int64").to_numpy()
    return text.cast("float64").to_numpy(zero_copy_only=False)


def run_p1(
    con: duckdb.DuckDBPyConnection, prereg: Preregistration, *, corpus: str | None = None
) -> ExperimentResult:
    """P1 on the labels chosen by ``prereg.p1.label_source``."""
    if prereg.p1.label_source == "loop":
        from agent_reflection.experiments.p1.loop_labels import describe, loop_labels

        labels = loop_labels(con, prereg)
        source = "loop: each session's last sidecar confidence joined to session_outcomes"
        return analyse_p1(
            labels.frame,
            prereg,
            source=source,
            more_notes=[*labels.notes, *describe(labels)],
            more_details={"loop": {"counts": dict(labels.counts), "exploratory": labels.secondary}},
        )
    prereg = mark_seen(con, prereg, "p1", corpus=corpus)
    df = corpus_labels(con, corpus)
    return analyse_p1(df, prereg, source=f"corpus: labels table ({corpus or 'all corpora'})")


class MissingUnitColumn(ReflectionError, ValueError):
    """P1's labels lack a column the registration declares as its strata or cluster column."""


def check_unit(df: pd.DataFrame, prereg: Preregistration) -> tuple[dict[str, str], list[str]]:
    """P1's declared analysis unit (:func:`~agent_reflection.experiments.registration.
    analysis_unit`) and notes, or :class:`MissingUnitColumn`.

    Labels that lack a declared column while they carry a column the registration does not
    declare (it may be the declared one renamed: ``model`` -> ``llm``) stop the run: P1 never
    switches silently to one stratum or to unclustered rows. Labels that carry no column but
    ``confidence`` and ``correct`` (and the other declared column) have nothing to stratify or
    cluster by: P1 runs without it and a note says so.
    """
    unit = analysis_unit(prereg.p1)
    loop = prereg.p1.label_source == "loop"
    have = sorted(c for c in df.columns if c not in _NOT_UNIT_COLUMNS)
    undeclared = [c for c in have if c not in unit.values()]
    notes = []
    for role, column in unit.items():
        if not column or not len(df) or column in df.columns:
            continue
        key = f"loop_{role}_column" if loop else f"{role}_column"
        instead = "one stratum" if role == "strata" else "unclustered rows"
        if not undeclared:
            notes.append(
                f"the labels have no {role} column ({column!r}, [p1] {key}) and no other "
                f"column it could be: P1 ran with {instead}"
            )
            continue
        raise MissingUnitColumn(
            f"P1's labels have no column {column!r}, which the registration declares as P1's "
            f"{role} column ([p1] {key} in {prereg.path}); they have {undeclared}, which it "
            f"does not declare. P1 does not fall back to {instead}. Fix: load the labels again "
            f"naming the column that holds {column}: reflect load labels FILE --map "
            + (
                f"{column}={undeclared[0]}"
                if len(undeclared) == 1
                else f"{column}=COLUMN, COLUMN one of {undeclared}"
            )
        )
    return unit, notes


#: Columns of P1's label frame that are never a strata or cluster column.
_NOT_UNIT_COLUMNS = {"confidence", "correct", "corpus"}


def _design(sub: pd.DataFrame, unit: Mapping[str, str]) -> tuple[str | None, str | None, Any, Any]:
    """(strata column, cluster column, per-row stratum, per-row cluster) of the high subset:
    the declared columns (:func:`check_unit`).

    A missing stratum value is a stratum of its own, "(missing)"; a row without a cluster id
    is a cluster of its own.
    """
    strata_col = unit["strata"] if unit["strata"] in sub.columns else None
    cluster_col = unit["cluster"] if unit["cluster"] in sub.columns else None
    strata = sub[strata_col].to_numpy() if strata_col else np.zeros(len(sub), dtype=np.int64)
    clusters = sub[cluster_col].to_numpy() if cluster_col else None
    return strata_col, cluster_col, strata, clusters


def _auc_block(conf: np.ndarray[Any, Any], y: np.ndarray[Any, Any], p: P1Params) -> dict[str, Any]:
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    out: dict[str, Any] = {"n": int(y.size), "n_correct": n_pos, "n_incorrect": n_neg}
    try:
        d = delong_ci(conf, y, p.confidence_level)
        out.update(auc=d.value, ci_low=d.ci_low, ci_high=d.ci_high, se=d.se)
    except UndefinedStatistic as exc:
        out.update(auc=None, ci_low=None, ci_high=None, se=None, undefined=str(exc))
    return out


def _decide(estimate: Interval, p: P1Params, what: str) -> Decision:
    # a percentile interval can miss its own estimate on degenerate data; widen it to hold it
    value = estimate.value
    return decide(
        Interval(value, min(estimate.ci_low, value), max(estimate.ci_high, value)),
        null_value=NULL_AUC,
        smallest_useful=p.smallest_useful_auc,
        what=what,
        continue_when=p.continue_rule,
    )


def _half_width(estimate: Interval) -> float:
    return (estimate.ci_high - estimate.ci_low) / 2


def judge(
    estimate: Interval | None, n_pos: int, n_neg: int, p: P1Params, what: str
) -> tuple[str, str]:
    """(verdict, reason) of one interval under the registered rule, insufficient-data included:
    without a precision target, fewer rows of a class than the per-class minimum; with one, an
    undecided interval that includes 0.5 and is wider than the target, and, whatever the
    interval says, so few rows that no ranking of them could exclude chance (the exact rank
    test's smallest two-sided p-value is above 1 - level: 3 correct and 3 incorrect rows, or 1
    and 38). A large-sample interval on such rows can be degenerate (1 correct above 1 incorrect
    gives a percentile interval of 1.0-1.0) and would otherwise continue."""
    if estimate is None:
        return INSUFFICIENT, f"no interval for the {what}"
    if p.max_ci_half_width > 0:
        smallest_p = _smallest_rank_test_p(n_pos, n_neg)
        if smallest_p > 1 - p.confidence_level:
            return INSUFFICIENT, (
                f"{n_pos} correct and {n_neg} incorrect rows: no ranking of so few rows could "
                f"exclude chance at {p.confidence_level:.0%} (the exact rank test's smallest "
                f"two-sided p-value is {smallest_p:.3g}), so no interval on them decides"
            )
    if p.max_ci_half_width <= 0:
        need = minimum_sample(p).n
        if n_pos < need or n_neg < need:
            return INSUFFICIENT, (
                f"the high subset has {n_pos} correct and {n_neg} incorrect rows in strata with "
                f"both classes; {need} of each are needed for a verdict (each decision then has "
                f"{p.power:.0%} power at the smallest useful AUC {p.smallest_useful_auc})"
            )
    decision = _decide(estimate, p, what)
    half = _half_width(estimate)
    target = p.max_ci_half_width
    if (
        decision.verdict == INCONCLUSIVE
        and target > 0
        and half > target
        and estimate.ci_low <= NULL_AUC
    ):
        return INSUFFICIENT, (
            f"{what} {estimate.value:.3f} (CI {estimate.ci_low:.3f}–{estimate.ci_high:.3f}): the "
            f"interval decides nothing and its half-width {half:.4f} is wider than the registered "
            f"precision target {target:g} (measured on these rows, at their class balance and "
            "clustering)"
        )
    return decision.verdict, decision.reason


#: Past this many rankings, 2 / C(n_pos + n_neg, n_pos) rounds to 0.0 as a float.
_RANKINGS_PAST_FLOAT = 2**1076


def _smallest_rank_test_p(n_pos: int, n_neg: int) -> float:
    """The smallest two-sided p-value the exact Mann-Whitney test can reach with these class
    sizes: 2 / C(n_pos + n_neg, n_pos) (the one most extreme ranking of each direction).

    C is built term by term and left unfinished once it is past what a float can divide into
    2 (the answer is then 0.0, as with the whole of it): at a million rows the whole of it has
    some 300,000 digits and took 1.8 s."""
    if n_pos < 1 or n_neg < 1:
        return 1.0
    k, n = min(n_pos, n_neg), n_pos + n_neg
    rankings = 1
    for i in range(1, k + 1):  # C(n - k + i, i), which only grows with i
        rankings = rankings * (n - k + i) // i
        if rankings > _RANKINGS_PAST_FLOAT:
            return 0.0
    return min(1.0, 2 / rankings)


def analyse_p1(
    df: pd.DataFrame,
    prereg: Preregistration,
    *,
    source: str = "",
    more_notes: Sequence[str] = (),
    more_details: Mapping[str, Any] | None = None,
) -> ExperimentResult:
    """P1 on a frame with ``confidence`` (0–1) and ``correct`` (bool) columns, optionally
    strata and cluster columns (the declared ``strata_column`` / ``cluster_column``, which
    labels must have: :func:`check_unit`). ``more_notes``
    and ``more_details`` come from the label source (loop labels: counts, exploratory
    measures)."""
    p = prereg.p1
    unit, unit_notes = check_unit(df, prereg)
    notes: list[str] = [f"labels from {source}"] if source else []
    notes += unit_notes
    conf_all = df["confidence"].to_numpy(dtype=np.float64) if len(df) else np.zeros(0)
    y_all = df["correct"].to_numpy(dtype=bool) if len(df) else np.zeros(0, dtype=bool)
    high = conf_all >= p.high_confidence_threshold
    conf, y = conf_all[high], y_all[high]
    sub = df[high] if len(df) and not high.all() else df
    strata_col, cluster_col, strata, clusters = _design(sub, unit)
    size = minimum_sample(p)
    pooled = _auc_block(conf, y, p)

    encoded = encode_design(strata, clusters, conf.size)  # once, for both intervals
    strat: StratifiedAUC | None = None
    try:
        strat = stratified_auc(
            conf, y, strata, clusters, confidence_level=p.confidence_level, encoded=encoded
        )
    except UndefinedStatistic as exc:
        notes.append(f"stratified AUC undefined on the high subset: {exc}")
    budget = _bootstrap_budget(conf, y, encoded, p) if strat else None
    run_boot = strat is not None and (budget is None or budget["within"])
    boot = _cluster_bootstrap(conf, y, encoded, p, notes) if run_boot else None
    estimate: Interval | None = None
    se = None
    ci_method = None
    primary: dict[str, Any] | None = None
    if strat is not None:
        if p.ci_method == "cluster_bootstrap" and boot is not None:
            estimate, se = Interval(strat.value, boot["ci_low"], boot["ci_high"]), boot["se"]
            ci_method = BOOTSTRAP_CI
            why = "registered primary interval" + (
                f" (resamples x (cluster types + keys) = {budget['cost']:,}, within the "
                f"budget of {budget['budget']:,})"
                if budget
                else ""
            )
        else:
            estimate, se = Interval(strat.value, strat.ci_low, strat.ci_high), strat.se
            ci_method = DELONG_CI
            if p.ci_method != "cluster_bootstrap":
                why = "registered primary interval (ci_method = stratified_delong)"
            elif budget is not None and not budget["within"]:
                ci_method = DELONG_OVER_BUDGET_CI
                why = (
                    f"the cluster bootstrap is over its registered budget: "
                    f"{p.bootstrap_resamples:,} resamples x ({budget['cluster_types']:,} cluster "
                    f"types + {budget['keys']:,} keys) = {budget['cost']:,} > bootstrap_budget "
                    f"{budget['budget']:,}; at such sizes the bootstrap and the clustered "
                    "DeLong interval agree (preregistration.toml), so the DeLong one is primary"
                )
            else:
                why = (
                    "the cluster bootstrap was not available; the stratified DeLong one is primary"
                )
            if p.ci_method == "cluster_bootstrap":
                notes.append(f"primary interval: clustered stratified DeLong, because {why}")
        primary = {"method": ci_method, "reason": why, "budget": budget}
    n_pos = strat.n_pos if strat else pooled["n_correct"]
    n_neg = strat.n_neg if strat else pooled["n_incorrect"]

    more: dict[str, Any] | None = None
    verdict, reason = judge(estimate, n_pos, n_neg, p, "stratified AUC")
    notes.append(reason)
    if estimate is not None:
        if verdict == CONTINUE and estimate.ci_low < p.smallest_useful_auc:
            notes.append(
                f"the interval still includes AUCs below the smallest useful "
                f"{p.smallest_useful_auc} (lower bound {estimate.ci_low:.3f}): chance is ruled "
                "out, a useful size is not yet"
            )
        half = _half_width(estimate)
        if verdict == INSUFFICIENT and 0 < p.max_ci_half_width < half:
            more = _rows_to_target(estimate, n_pos, n_neg, p)
            notes.append(more["note"])
        elif verdict == INCONCLUSIVE and se is not None:
            more = _more_rows(estimate.value, se, n_pos, n_neg, p)
            notes.append(more["note"])
    observed = None if estimate is None or se is None or se <= 0 else _observed_power(se, p)

    pooled_auc = (
        None
        if pooled["auc"] is None
        else Interval(pooled["auc"], pooled["ci_low"], pooled["ci_high"])
    )
    pooled_verdict, _ = judge(
        pooled_auc, pooled["n_correct"], pooled["n_incorrect"], p, "pooled AUC"
    )
    strata_rows = []
    for r in strat.strata if strat else ():
        # a stratum whose own interval would be insufficient is shown greyed: it decides nothing
        own = None if r.auc is None else Interval(r.auc.value, r.auc.ci_low, r.auc.ci_high)
        decisive = own is not None and judge(own, r.n_pos, r.n_neg, p, "AUC")[0] != INSUFFICIENT
        strata_rows.append({**r.to_dict(), "decisive": decisive})
    hetero = asdict(heterogeneity(strat.strata)) if strat else None
    warnings = _warnings(strat, estimate, verdict, pooled, pooled_verdict, strata_rows)
    notes.extend(w["message"] for w in warnings)
    below = [r for r in strata_rows if r["ci_high"] is not None and r["ci_high"] < NULL_AUC]
    qualifications = _anti_informative(strata_rows, strata_col, p)
    if below:
        notes.append(
            f"strata whose {p.confidence_level:.0%} CI lies wholly below 0.5 (confidence ranks "
            "their wrong answers above their right ones): "
            + "; ".join(
                f"{r['stratum']} AUC {r['auc']:.3f} (CI {r['ci_low']:.3f}–{r['ci_high']:.3f})"
                for r in below
            )
        )
    notes.extend(q["message"] for q in qualifications)
    if hetero is not None:
        hetero["strata_below_chance"] = [r["stratum"] for r in below]

    details: dict[str, Any] = {
        "label_source": source,
        "n_all": int(y_all.size),
        "n_high": int(y.size),
        "strata_column": strata_col,
        "cluster_column": cluster_col,
        "stratified": None
        if strat is None
        else {
            "auc": strat.value,
            "ci_low": None if estimate is None else estimate.ci_low,
            "ci_high": None if estimate is None else estimate.ci_high,
            "se": se,
            "ci_method": ci_method,
            "n_correct": strat.n_pos,
            "n_incorrect": strat.n_neg,
            "n_clusters": strat.n_clusters,
            "n_strata_used": sum(1 for r in strata_rows if r["auc"] is not None),
            "dropped_strata": list(strat.dropped),
            "delong": {
                "ci_low": strat.ci_low,
                "ci_high": strat.ci_high,
                "se": strat.se,
                "se_rows_independent": strat.se_rows_independent,
            },
        },
        "high_subset": {**pooled, "verdict": pooled_verdict},
        "strata": strata_rows,
        "heterogeneity": hetero,
        "warnings": warnings,
        "power": {
            **asdict(size),
            "precision_target": p.max_ci_half_width or None,
            "half_width": None if estimate is None else _half_width(estimate),
            "at_observed_se": observed,
            "more_rows_to_decide": more,
        },
        "bootstrap": boot,
        "primary_interval": primary,
    }
    details["groups"] = _groups(sub, conf, y, p, (strata_col, encoded))
    details.update(_secondary(conf_all, y_all, conf, y, p, notes))
    details["strata_roc"] = _strata_roc(conf, y, encoded)
    details.update(more_details or {})
    notes.extend(more_notes)

    return experiment_result(
        prereg,
        "p1",
        title=TITLE,
        verdict=verdict,
        metric=Metric("stratified_roc_auc", estimate, ci_method, p.confidence_level),
        # the rows the verdict stands on: a stratum with one class adds no pair
        n=int(strat.n_pos + strat.n_neg) if strat else int(y.size),
        thresholds={
            "high_confidence_threshold": p.high_confidence_threshold,
            "null_auc": NULL_AUC,
            "smallest_useful_auc": p.smallest_useful_auc,
            "power": p.power,
            **(
                {"max_ci_half_width": p.max_ci_half_width}
                if p.max_ci_half_width > 0
                else {"min_per_class": size.n}
            ),
        },
        kill_condition=kill_condition(p),
        notes=notes,
        details=details,
        qualifications=qualifications,
    )


def _observed_power(se: float, p: P1Params) -> dict[str, Any]:
    """Each decision's power at this run's standard error, at a true AUC of 0.5 and of the
    smallest useful AUC (what these data could show, whatever they did show)."""
    out: dict[str, Any] = {"se": se}
    for key, truth in (("at_null", NULL_AUC), ("at_smallest_useful", p.smallest_useful_auc)):
        power = decision_power(
            truth,
            se,
            null_value=NULL_AUC,
            smallest_useful=p.smallest_useful_auc,
            confidence_level=p.confidence_level,
            continue_when=p.continue_rule,
        )
        out[key] = {"p_continue": power.p_continue, "p_kill": power.p_kill}
    return out


def _rows_to_target(estimate: Interval, n_pos: int, n_neg: int, p: P1Params) -> dict[str, Any]:
    """Further rows, at the observed mix of classes, strata and clusters, that would bring the
    interval's half-width to the precision target (it shrinks as 1/sqrt(rows))."""
    half = _half_width(estimate)
    scale = (half / p.max_ci_half_width) ** 2
    more_pos, more_neg = math.ceil((scale - 1) * n_pos), math.ceil((scale - 1) * n_neg)
    return {
        "scale": scale,
        "more_correct": more_pos,
        "more_incorrect": more_neg,
        "more_rows": more_pos + more_neg,
        "note": (
            f"insufficient-data: about {more_pos + more_neg:,} more rows ({more_pos:,} correct, "
            f"{more_neg:,} incorrect: {scale:.1f}x the sample, same mix of classes, strata and "
            f"clusters) would bring the half-width from {half:.4f} to the precision target "
            f"{p.max_ci_half_width:g}"
        ),
    }


def _anti_informative(
    strata_rows: list[dict[str, Any]], column: str | None, p: P1Params
) -> list[dict[str, Any]]:
    """The registered rule naming strata whose confidence is anti-informative: a stratum's
    DeLong interval at the Bonferroni-adjusted level (1 - (1 - level) / strata with an AUC)
    lies wholly below 0.5. Only with two strata or more (one stratum is the verdict itself)."""
    used = [r for r in strata_rows if r["auc"] is not None and r["se"] is not None]
    if p.below_chance_strata != "bonferroni" or len(used) < 2:
        return []
    level = 1 - (1 - p.confidence_level) / len(used)
    z = two_sided_z(level)
    out: list[dict[str, Any]] = []
    for r in used:
        low, high = max(0.0, r["auc"] - z * r["se"]), min(1.0, r["auc"] + z * r["se"])
        if high >= NULL_AUC or r["se"] <= 0:  # a zero SE (one row of a class) shows nothing
            continue
        out.append(
            {
                "kind": ANTI_INFORMATIVE,
                "column": column,
                "stratum": r["stratum"],
                "auc": r["auc"],
                "ci_low": low,
                "ci_high": high,
                "confidence_level": level,
                "message": (
                    f"anti-informative: {column} {r['stratum']} has AUC {r['auc']:.3f} "
                    f"({level:.2%} CI {low:.3f}–{high:.3f}, Bonferroni-adjusted for "
                    f"{len(used)} strata), wholly below 0.5: its confidence ranks its wrong "
                    "answers above its right ones, so a loop calibrated on it would be misled"
                ),
            }
        )
    return out


def _more_rows(auc: float, se: float, n_pos: int, n_neg: int, p: P1Params) -> dict[str, Any]:
    scale = scale_to_decide(
        auc,
        se,
        null_value=NULL_AUC,
        smallest_useful=p.smallest_useful_auc,
        confidence_level=p.confidence_level,
        power=p.power,
    )
    if scale is None:
        return {
            "scale": None,
            "more_correct": None,
            "more_incorrect": None,
            "more_rows": None,
            "note": "inconclusive, not a kill: the estimate sits on the smallest useful AUC, "
            "so no sample size decides it with the registered power",
        }
    more_pos, more_neg = math.ceil((scale - 1) * n_pos), math.ceil((scale - 1) * n_neg)
    toward = (
        "clear 0.5" if auc >= p.smallest_useful_auc else (f"fall below {p.smallest_useful_auc}")
    )
    return {
        "scale": scale,
        "more_correct": more_pos,
        "more_incorrect": more_neg,
        "more_rows": more_pos + more_neg,
        "note": (
            f"inconclusive, not a kill: if the true AUC is the estimate {auc:.3f}, about "
            f"{more_pos:,} more correct and {more_neg:,} more incorrect rows ({scale:.1f}x the "
            f"sample, same mix of strata) would make the interval {toward} with "
            f"{p.power:.0%} power"
        ),
    }


def _warnings(
    strat: StratifiedAUC | None,
    estimate: Interval | None,
    verdict: str,
    pooled: dict[str, Any],
    pooled_verdict: str,
    strata_rows: list[dict[str, Any]],
) -> list[dict[str, str]]:
    used = [r for r in strata_rows if r["auc"] is not None]
    if strat is None or estimate is None or pooled["auc"] is None:
        return []
    if len(used) < 2:
        return []
    auc, lo, hi = estimate.value, estimate.ci_low, estimate.ci_high
    outside = not lo <= pooled["auc"] <= hi
    if pooled_verdict == verdict and not outside:
        return []
    acc = sorted(used, key=lambda r: r["accuracy"])
    conf = sorted(used, key=lambda r: r["mean_score"])
    # the over-confidence that touches the most rows: (mean confidence - accuracy) x rows
    worst = max(used, key=lambda r: (r["mean_score"] - r["accuracy"]) * r["n"])
    why = (
        f"verdicts differ (pooled {pooled_verdict}, stratified {verdict})"
        if pooled_verdict != verdict
        else f"the pooled AUC lies outside the stratified interval {lo:.3f}–{hi:.3f}"
    )
    message = (
        f"simpson: pooled AUC {pooled['auc']:.3f} vs stratified {auc:.3f}: {why}. Pooling "
        f"ranks answers across strata that differ in base rate (accuracy "
        f"{acc[0]['accuracy']:.2f} in {acc[0]['stratum']} to {acc[-1]['accuracy']:.2f} in "
        f"{acc[-1]['stratum']}) and in mean confidence ({conf[0]['mean_score']:.3f} to "
        f"{conf[-1]['mean_score']:.3f}); {worst['stratum']} says {worst['mean_score']:.2f} on "
        f"average and is right {worst['accuracy']:.0%} of the time, so its wrong answers "
        "outrank other strata's right ones. The stratified AUC compares answers within a "
        "stratum only and is the pre-registered statistic."
    )
    return [{"kind": "simpson", "message": message}]


def _bootstrap_budget(
    conf: np.ndarray[Any, Any], y: np.ndarray[Any, Any], encoded: EncodedDesign, p: P1Params
) -> dict[str, Any] | None:
    """The bootstrap's work (resamples x (cluster types + keys)) against the registered
    budget; None when none is registered (the bootstrap then runs at every size)."""
    if p.bootstrap_budget <= 0:
        return None
    size = bootstrap_size(conf, y, encoded.strata, encoded.clusters)
    cost = size.cost(p.bootstrap_resamples)
    return {
        "cluster_types": size.cluster_types,
        "keys": size.keys,
        "cost": cost,
        "budget": p.bootstrap_budget,
        "within": cost <= p.bootstrap_budget,
    }


def _cluster_bootstrap(
    conf: np.ndarray[Any, Any],
    y: np.ndarray[Any, Any],
    encoded: EncodedDesign,
    p: P1Params,
    notes: list[str],
) -> dict[str, Any] | None:
    try:
        b = cluster_bootstrap_stratified_auc(
            conf,
            y,
            encoded.strata,
            encoded.clusters,
            confidence_level=p.confidence_level,
            n_resamples=p.bootstrap_resamples,
            seed=p.seed,
            draws=p.bootstrap_draws,
            encoded=encoded,
        )
    except (UndefinedStatistic, ValueError) as exc:
        notes.append(f"cluster bootstrap CI not available: {exc}")
        return None
    # results.json names the bootstrap's own estimate "estimate"
    return {("estimate" if k == "value" else k): v for k, v in asdict(b).items()}


def _groups(
    df: pd.DataFrame,
    conf: np.ndarray[Any, Any],
    y: np.ndarray[Any, Any],
    p: P1Params,
    strata: tuple[str | None, EncodedDesign],
) -> list[dict[str, Any]]:
    """Per value of each group column (missing values left out), its rows' pooled AUC;
    ``strata`` (the strata column and its encoding) spares encoding that column again."""
    out: list[dict[str, Any]] = []
    for column in p.group_columns:
        if column not in df.columns:
            continue
        if column == strata[0]:
            names: list[str] = list(strata[1].stratum_names)
            codes = strata[1].strata
            if names and names[-1] == MISSING_STRATUM:  # a missing value is no group
                names.pop()
        else:
            codes, uniques = pd.factorize(df[column], sort=True)
            names = [str(u) for u in uniques]
        for index, name in enumerate(names):
            inside = codes == index
            row: dict[str, Any] = {"column": column, "group": name}
            size = int(np.count_nonzero(inside))
            if size < p.min_group_rows:
                row.update(n=size, auc=None, note=f"fewer than {p.min_group_rows} rows")
            else:
                row.update(_auc_block(conf[inside], y[inside], p))
            out.append(row)
    return out


def _strata_roc(
    conf: np.ndarray[Any, Any], y: np.ndarray[Any, Any], encoded: EncodedDesign
) -> dict[str, dict[str, Any]]:
    """ROC points of each stratum with both classes (for the per-stratum curves)."""
    if len(encoded.stratum_names) < 2:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for index, name in enumerate(encoded.stratum_names):
        inside = encoded.strata == index
        with contextlib.suppress(UndefinedStatistic):
            out[name] = asdict(
                roc_curve_points(conf[inside], y[inside], max_points=ROC_POINTS // 5)
            )
    return out


def _bin_interval(b: ReliabilityBin, p: P1Params) -> dict[str, float | None]:
    """A reliability bin's Wilson interval for its accuracy (a bin of a few rows is shown with
    the wide interval it has, not as a bar as sure as any other)."""
    if not b.count or b.accuracy is None:
        return {"ci_low": None, "ci_high": None}
    w = wilson_ci(round(b.accuracy * b.count), b.count, p.confidence_level)
    return {"ci_low": w.ci_low, "ci_high": w.ci_high}


def _secondary(
    conf_all: np.ndarray[Any, Any],
    y_all: np.ndarray[Any, Any],
    conf: np.ndarray[Any, Any],
    y: np.ndarray[Any, Any],
    p: P1Params,
    notes: list[str],
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "brier_all": None,
        "brier_high": None,
        "lift": None,
        "reliability": None,
        "roc": None,
    }
    if y_all.size:
        out["brier_all"] = brier_score(conf_all, y_all)
    if y.size:
        out["brier_high"] = brier_score(conf, y)
    try:
        out["lift"] = asdict(top_fraction_lift(conf_all, y_all, p.lift_fraction))
    except UndefinedStatistic as exc:
        notes.append(f"lift not available: {exc}")
    try:
        rel = reliability(conf_all, y_all, p.ece_bins)
        out["reliability"] = {
            "ece": rel.ece,
            "n": rel.n,
            "out_of_range": rel.out_of_range,
            "confidence_level": p.confidence_level,
            "bins": [{**asdict(b), **_bin_interval(b, p)} for b in rel.bins],
        }
    except UndefinedStatistic as exc:
        notes.append(f"reliability diagram not available: {exc}")
    with contextlib.suppress(UndefinedStatistic):
        out["roc"] = asdict(roc_curve_points(conf, y, max_points=ROC_POINTS))
    return out
