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
#
# The question: when an agent says it is confident, is it more often right? We take the
# **self-rated-high subset** (confidence at or above the pre-registered threshold) and ask how
# well confidence ranks correct above incorrect answers there: the **ROC AUC**, with a DeLong
# confidence interval (and a seeded BCa bootstrap interval as a cross-check).
#
# The verdict rule was fixed before the data were seen (`preregistration.toml`): **kill** when the
# CI's lower bound is at or below 0.5 or the AUC is below 0.55; too few correct or incorrect rows
# give **insufficient-data** instead of a verdict.

# %% tags=["parameters"]
db_path = "data/reflection.duckdb"
output_dir = "reports/adhoc/p1"
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
display(Markdown(nb.banner(prereg)))

# %% [markdown]
# ## Compute
# Labels come from the pre-registered source: a labelled corpus (`reflect load labels FILE`) or
# the loop itself (sidecar confidence joined to P3's outcome signals).

# %%
con = nb.open_db(db_path)
result = run_p1(con, prereg, corpus=corpus or None)
doc = result.to_dict()
display(Markdown(nb.verdict_markdown(result)))

# %% [markdown]
# ## Discrimination: the ROC curve
# Each step is one confidence value; a curve hugging the diagonal means confidence does not
# separate right from wrong.

# %%
nb.figure(plots.roc_figure(doc), output_dir, "p1_roc")

# %% [markdown]
# ## Calibration: the reliability diagram
# Over **all** rows: observed accuracy per confidence bin (bins pre-registered), with the
# number of rows in each bin. The expected calibration error (ECE) weights each bin's gap by
# its count.

# %%
nb.figure(plots.reliability_figure(doc), output_dir, "p1_reliability")

# %% [markdown]
# ## Secondary numbers and per-group AUC
# Brier score, lift in the top confidence decile, and AUC per group (e.g. per model or agent).

# %%
import pandas as pd

d = doc["details"]
display(
    pd.DataFrame(
        [
            {
                "brier (all rows)": d["brier_all"],
                "brier (high subset)": d["brier_high"],
                "top-decile lift": (d["lift"] or {}).get("lift"),
                "bootstrap CI": None
                if not d["bootstrap"]
                else f"{d['bootstrap']['ci_low']:.3f}–{d['bootstrap']['ci_high']:.3f}",
            }
        ]
    )
)
pd.DataFrame(d["groups"])

# %% [markdown]
# ## Save
# `results.json` (schema results.v1) records the verdict, the pre-registration's SHA-256 and
# whether this run is exploratory.

# %%
print(nb.write_results(result, output_dir))
