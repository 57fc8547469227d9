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
# # P2 — Would anything have been caught *only* by self-reflection?
#
# We scan git history for **failure signals**: reverts, and fix-like commits shortly after a
# feature change (a merged PR or a `feat` commit) that touch one of its files. Each signal is
# put in a bucket by the pre-registered, ordered first-match rule table:
# 1. **ci** — the fix adds or changes tests or CI/build configuration, or names a failing test,
#    build, lint or type check;
# 2. **human-review** — the failing change's risk floor says it needed review;
# 3. **only-self-reflection** — otherwise.
#
# If the third bucket is near-empty, self-reflection has nothing to add: **kill**.

# %% tags=["parameters"]
db_path = "data/reflection.duckdb"
output_dir = "reports/adhoc/p2"
# "" = the repository's preregistration.toml
preregistration_path = ""
# e.g. {"p2.window_days": 14}; any change => EXPLORATORY
overrides = {}

# %%
from IPython.display import Markdown, display

from agent_reflection.experiments import notebook as nb
from agent_reflection.experiments import plots
from agent_reflection.experiments.p2 import run_p2

prereg = nb.prepare(preregistration_path, overrides)
display(Markdown(nb.banner(prereg)))

# %% [markdown]
# ## Compute
# Signals come from the `commits` and `commit_files` tables; a revert's target commit is
# resolved from its message and its risk floor computed from that commit's files.

# %%
con = nb.open_db(db_path)
result = run_p2(con, prereg)
doc = result.to_dict()
display(Markdown(nb.verdict_markdown(result)))

# %% [markdown]
# ## Buckets per repository and pooled

# %%
import pandas as pd

display(pd.DataFrame(doc["details"]["by_repo"]))
nb.figure(plots.buckets_figure(doc), output_dir, "p2_buckets")

# %% [markdown]
# ## Every signal, its bucket and the rule that put it there

# %%
signals = pd.DataFrame(doc["details"]["signals"])
signals.drop(columns=["failing_risk"], errors="ignore")

# %% [markdown]
# ## Save

# %%
print(nb.write_results(result, output_dir))
