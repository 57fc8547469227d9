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

# %% tags=["parameters"]
# "" = the workspace's database, found from the folder the kernel runs in upward
db_path = ""
# "" = adhoc/p3 under the workspace's reports folder
output_dir = ""
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
con = nb.open_db(db_path)
output_dir = nb.output_folder(output_dir, "adhoc/p3")
result = run_p3(con, prereg)
doc = result.to_dict()
# the report opens with its summary: question, verdict, number, n, what would change it
nb.show_opening(doc, prereg, con)

# %% [markdown]
# ## Method
#
# Among completed tasks (from their first completion) with at least 30 days of follow-up to
# their own source's latest record (younger ones are right-censored: excluded, and counted), a
# task is **detectable** when a machine-readable signal arrives within 30 days of completion:
# it was reopened (not within 5 minutes of a close: that undoes an accidental close); a later
# task's regression / caused-by link says it broke something (only the pre-registered link
# kinds and direction); a commit linked to it was reverted or fixed; a later problem report in
# the data mentions it; or it was marked verified / confirmed. A signal on day 30 counts; day
# 31 does not.
#
# **Channels before verdicts, per task.** Each source (board export) is checked first: which
# signal channels its format *can* carry, which its data hold, and how many of its tasks carry
# each channel themselves (an event history; a linked commit in the loaded git history). Only
# tasks that carry every pre-registered required channel are decided on; the others are "not
# observable", counted. With too few observable tasks there is no verdict, and the fraction
# over all tasks is only a lower bound, since the signals they cannot show were never counted.
#
# The statistic is the detectable fraction with a Wilson CI, decided by the interval: kill
# (the loop could only produce **caveat notes**) only when the upper bound is below the
# smallest useful fraction (20%, pre-registered); continue when the lower bound is above 0
# and the fraction reaches 20%; otherwise inconclusive.

# %% [markdown]
# ## Verdict and its notes

# %%
display(Markdown(nb.verdict_markdown(result, con)))

# %% [markdown]
# ## Channels: what each source can carry, and what it carries
# `can_carry`: the board format has room for the channel (`how`); `carries`: the source holds
# at least one record of it (`records`; `dated`: of which dated — a link to a task outside the
# data has no date and never counts); `tasks` of the source's `eligible` tasks carry it
# themselves (`share`). `required`: pre-registered; a task not carrying a required channel is
# not observable and gets no verdict.

# %%
import pandas as pd

channels = pd.DataFrame(doc["details"]["channels"])
if channels.empty:
    display(Markdown("_No sources loaded._"))
else:
    shown = ["origin", "format", "channel", "required", "can_carry", "carries", "records"]
    display(channels[[*shown, "dated", "eligible", "tasks", "share", "how"]])

# %% [markdown]
# ## Per source: follow-up horizon and (lower-bound) fraction

# %%
display(pd.DataFrame(doc["details"]["sources"]))

# %% [markdown]
# ## Undated signals
# Links to tasks outside the data cannot be dated: listed here, never counted.

# %%
display(pd.DataFrame(doc["details"]["undated_signals"], columns=["task_ref", "kind", "detail"]))

# %% [markdown]
# ## By signal kind, by project and by category
# A task may have several kinds of signal; each kind counts the tasks that have it.

# %%
display(pd.DataFrame(doc["details"]["by_project"]))
display(pd.DataFrame(doc["details"]["by_category"]))
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
