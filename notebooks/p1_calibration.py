# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # P1 — Is self-rated confidence a usable signal?

# %% tags=["parameters"]
# "" = the workspace's database, found from the folder the kernel runs in upward
db_path = ""
# "" = adhoc/p1 under the workspace's reports folder
output_dir = ""
# "" = the repository's preregistration.toml
preregistration_path = ""
# e.g. {"p1.high_confidence_threshold": 0.7}; any change => EXPLORATORY
overrides = {}
# one labels corpus; "" = every corpus
corpus = ""

# %%
from IPython.display import Markdown, display

from agent_reflection.experiments import notebook as nb
from agent_reflection.experiments import plots
from agent_reflection.experiments.p1 import run_p1

prereg = nb.prepare(preregistration_path, overrides)
con = nb.open_db(db_path)
output_dir = nb.output_folder(output_dir, "adhoc/p1")
result = run_p1(con, prereg, corpus=corpus or None)
doc = result.to_dict()
# the report opens with its summary: question, verdict, number, n, what would change it
nb.show_opening(doc, prereg, con)

# %% [markdown]
# ## Method
#
# The question: when an agent says it is confident, is it more often right? We take the
# **self-rated-high subset** (confidence at or above the pre-registered threshold) and ask how
# well confidence ranks correct above incorrect answers there. The primary number is the
# **stratified AUC**: the AUC *within* each stratum (e.g. each model), weighted by its
# correct x incorrect pairs, with a seeded **cluster bootstrap** interval (rows of one question
# are resampled together) and a cluster-robust stratified DeLong interval beside it. Above the
# registered bootstrap budget (resamples x (cluster types + keys), `bootstrap_budget`) the
# DeLong interval is the primary one and the bootstrap is not run; the verdict notes and the
# interval's name below say which was used and why. The pooled AUC, which also compares
# answers *across* models, is a secondary number.
#
# The decision rule was fixed before the data were seen (`preregistration.toml`): **continue**
# when the interval's lower bound is above 0.5 and the interval still allows the smallest useful
# AUC; **kill** only when the interval's upper bound is below it; otherwise **inconclusive** (with
# the number of further rows that would decide it). An undecided interval that includes 0.5 and
# is wider than the registered precision target (its half-width, measured on these rows at their
# class balance and clustering) gives **insufficient-data**, with the number of further rows at
# the observed mix that would reach the target. Strata whose interval (Bonferroni-adjusted) lies
# wholly below 0.5 are named in the verdict.

# %% [markdown]
# ## Verdict and its notes
# Labels come from the pre-registered source: a labelled corpus (`reflect load labels FILE`) or
# the loop itself (each session's last sidecar confidence joined to its `session_outcomes` row,
# which `reflect load git` derives from the session's commits: wrong = reverted, blamed by SZZ
# for a fix, or its task reopened within the window; censored sessions are excluded and counted).

# %%
display(Markdown(nb.verdict_markdown(result, con)))

# %% [markdown]
# ## Per stratum, heterogeneity and warnings
# One row per stratum: its AUC with a DeLong interval, its base rate (accuracy) and mean
# confidence, and its share of the pairs behind the stratified AUC. Rows in grey have an
# interval that would be insufficient-data on its own: shown, but they decide nothing.
# Cochran's Q and I² say how much the per-stratum AUCs differ beyond chance. A `simpson`
# warning appears when the pooled AUC disagrees with the stratified one.

# %%
import pandas as pd

d = doc["details"]
strata = pd.DataFrame(d["strata"])
if not strata.empty:
    strata = strata[
        [
            "stratum",
            "n",
            "n_pos",
            "n_neg",
            "accuracy",
            "mean_score",
            "auc",
            "ci_low",
            "ci_high",
            "pair_weight",
            "decisive",
        ]
    ]
    display(
        strata.style.apply(
            lambda row: ["" if row["decisive"] else "color: #999"] * len(row), axis=1
        ).format(precision=3)
    )
display(pd.DataFrame([d["heterogeneity"] or {}]))
display(
    pd.DataFrame(
        [
            {
                "stratified AUC": (d["stratified"] or {}).get("auc"),
                "primary CI": (
                    f"{doc['metric']['ci_low']:.3f}–{doc['metric']['ci_high']:.3f}"
                    if doc["metric"]["ci_low"] is not None
                    else None
                ),
                "pooled AUC": d["high_subset"]["auc"],
                "pooled verdict": d["high_subset"]["verdict"],
                "precision target (half-width)": d["power"]["precision_target"],
                "half-width": d["power"]["half_width"],
            }
        ]
    )
)
for warning in d["warnings"]:
    display(Markdown(f"**Warning ({warning['kind']}).** {warning['message']}"))

# %% [markdown]
# ## Discrimination: the ROC curve
# All strata pooled (the legend's AUC is the pooled one; the subtitle gives the stratified AUC
# the verdict reads). Each segment joins two successive confidence thresholds (tied confidences
# move the curve diagonally), so the area under the drawn line is the pooled AUC; a curve hugging
# the diagonal means confidence does not separate right from wrong. Pooling ranks answers across
# strata, which is why the verdict uses the stratified AUC instead (see the warnings above).

# %%
nb.figure(plots.roc_figure(doc), output_dir, "p1_roc")

# %% [markdown]
# ## The ROC curve within each stratum
# One curve per stratum (e.g. model), with its own AUC: the stratified AUC is their
# pair-weighted mean.

# %%
strata_auc = {r["stratum"]: r["auc"] for r in d["strata"]}
curves = {
    name: (roc["fpr"], roc["tpr"], strata_auc[name])
    for name, roc in (d.get("strata_roc") or {}).items()
    if strata_auc.get(name) is not None
}
if curves:
    # display(): a figure inside an `if` is not the cell's last expression, so not shown
    display(nb.figure(plots.roc_figure(doc, curves), output_dir, "p1_roc_strata"))
else:
    display(Markdown("One stratum only: the pooled curve above is the stratified one."))

# %% [markdown]
# ## Calibration: the reliability diagram
# Over **all** rows: observed accuracy per confidence bin (bins pre-registered), with its Wilson
# interval and the number of rows in each bin: a bin of a few rows has an interval spanning most
# of the axis and says little. The expected calibration error (ECE) weights each bin's gap by
# its count.

# %%
nb.figure(plots.reliability_figure(doc), output_dir, "p1_reliability")

# %% [markdown]
# ## Secondary numbers and per-group AUC
# Brier score, lift in the top confidence decile, and AUC per group (e.g. per model or agent).

# %%
display(
    pd.DataFrame(
        [
            {
                "brier (all rows)": d["brier_all"],
                "brier (high subset)": d["brier_high"],
                "top-decile lift": (d["lift"] or {}).get("lift"),
            }
        ]
    )
)
pd.DataFrame(d["groups"])

# %% [markdown]
# ## Loop labels: who was left out, and two exploratory measures
# Only with `label_source = "loop"`. The counts say how many sessions had sidecars, how many
# had no linked commit or too little history after it (censored), and how many lacked a
# confidence. The two measures below are registered as **exploratory** (no threshold, no
# decision): how often the session's `most_likely_wrong.surface` named the risk-floor surface of
# the files its revert or fix touched, against the hit rate a guess with the fixes' own surface
# frequencies would get; and whether `known_not_in_diff` was filled more often by sessions that
# went wrong (Wilson intervals).

# %%
loop = d.get("loop")
if loop is None:
    display(Markdown("Corpus labels: no sessions, nothing to show here."))
else:
    display(pd.DataFrame([loop["counts"]]))
    surface = loop["exploratory"]["surface"]
    display(
        pd.DataFrame(
            [{**surface["hits"], "base_rate": surface["base_rate"]}], index=["surface named"]
        )
    )
    if surface["by_surface"]:
        display(pd.DataFrame(surface["by_surface"]))
    display(pd.DataFrame(loop["exploratory"]["known_not_in_diff"]).T)

# %% [markdown]
# ## Save
# `results.json` (schema results.v1) records the verdict, the pre-registration's SHA-256 and
# whether this run is exploratory.

# %%
print(nb.write_results(result, output_dir))
