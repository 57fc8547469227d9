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
# # P3 — Can we tell, by machine, whether finished work was right?
#
# Among completed tasks with at least 30 days of follow-up in the data (younger ones are
# right-censored: excluded, and counted), a task is **detectable** when a machine-readable
# signal arrives within 30 days of completion: it was reopened; a regression / caused-by link
# points at it; a commit linked to it was reverted or fixed; or it was marked verified /
# confirmed. A signal on day 30 counts; day 31 does not.
#
# The statistic is the detectable fraction with a Wilson CI. Below 20% (pre-registered), any
# closed loop could only produce **caveat notes**: that is P3's kill.

# %% tags=["parameters"]
db_path = "data/reflection.duckdb"
output_dir = "reports/adhoc/p3"
# "" = the repository's preregistration.toml
preregistration_path = ""
# e.g. {"p3.window_days": 60}; any change => EXPLORATORY
overrides = {}

# %%
from IPython.display import Markdown, display

from agent_reflection.experiments import notebook as nb
from agent_reflection.experiments import plots
from agent_reflection.experiments.p3 import run_p3

prereg = nb.prepare(preregistration_path, overrides)
display(Markdown(nb.banner(prereg)))

# %% [markdown]
# ## Compute

# %%
con = nb.open_db(db_path)
result = run_p3(con, prereg)
doc = result.to_dict()
display(Markdown(nb.verdict_markdown(result)))

# %% [markdown]
# ## By signal kind and by project
# A task may have several kinds of signal; each kind counts the tasks that have it.

# %%
import pandas as pd

display(pd.DataFrame(doc["details"]["by_project"]))
nb.figure(plots.by_kind_figure(doc), output_dir, "p3_by_kind")

# %% [markdown]
# ## Time to first signal

# %%
display(pd.DataFrame([doc["details"]["time_to_signal_summary"] or {}]))
nb.figure(plots.time_to_signal_figure(doc), output_dir, "p3_time_to_signal")

# %% [markdown]
# ## Save

# %%
print(nb.write_results(result, output_dir))
