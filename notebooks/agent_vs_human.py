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
# # Agent-authored vs human commits (EXPLORATORY)
#
# One repository, loaded with `reflect load git REPO --szz`. A commit is agent-authored when
# `commits.agent` is set: its author, committer or message carries a coding agent's mark
# (docs/git.md, "Agent marks"). Everything else counts as human, including agent work that was
# not signed, so the human group is a mix and any difference is, if anything, diluted.
#
# Only non-merge commits on the analysed line of history (reachable from its head) are compared,
# and only from the months that hold an agent commit (`[agent_vs_human] span` in the
# pre-registration). For each group:
#
# - **reverted**: a pure revert on that line names the commit within `follow_up_days`;
# - **fixed**: SZZ blames a later fix on that line on the commit's lines within `follow_up_days`
#   (fixes whose message says lint / formatting / annotation work are not counted);
# - commits with fewer than `follow_up_days` of history after them are **censored**: in neither
#   rate, and counted;
# - **time to fix**: days to the first fix, over the commits ever fixed; the never-fixed ones
#   are censored at their follow-up (shown);
# - **surviving lines**: lines the commit added that `git blame -w` still gives to it at the
#   head (cosmetic fixes ignored), over the lines it added.
#
# This analysis is not part of the Phase-0 gate.

# %% tags=["parameters"]
# "" = the workspace's database, found from the folder the kernel runs in upward
db_path = ""
# "" = agent-vs-human under the workspace's reports folder
output_dir = ""
# the clone, bare repository or .bundle that was loaded
repo_path = ""
# its name in commits.repo; empty: the basename, as reflect load git names it
name = ""
# the line of history to analyse; empty: HEAD, else main, else master
head = ""
# where a bundle's clone is kept; empty: the default cache
cache_dir = ""
preregistration_path = ""
overrides = {}

# %%
from pathlib import Path

import pandas as pd
from IPython.display import Markdown, display

from agent_reflection.experiments import notebook as nb
from agent_reflection.experiments.agent_vs_human import report, run_agent_vs_human
from agent_reflection.experiments.report import write_summary
from agent_reflection.load.git.repo import open_repo

out = Path(nb.output_folder(output_dir, "agent-vs-human"))
out.mkdir(parents=True, exist_ok=True)
prereg = nb.prepare(preregistration_path, overrides)
params = prereg.agent_vs_human
source = open_repo(repo_path, name=name or None, cache_dir=cache_dir or None)
con = nb.open_db(db_path)
summary_block = display(Markdown("_Summary: filled in by the last cell._"), display_id=True)
display(Markdown(report.parameters_markdown(prereg)))
params

# %%
result = run_agent_vs_human(
    con,
    source,
    params,
    head=head,
    cosmetic_message=prereg.p2.cosmetic_lint_message,
    kind_rules=prereg.p2.kind_rules,  # bots, bumps and releases: in neither group
)
con.close()

# %% [markdown]
# ## Rates, time to fix and surviving lines per group

# %%
groups = pd.DataFrame(report.groups_table(result))
groups.to_csv(out / "groups.csv", index=False)
groups.set_index("group").T

# %% [markdown]
# ## Agent minus human
#
# Newcombe's hybrid score interval for the difference of two proportions (built from the two
# Wilson intervals, commits independent), and a seeded bootstrap interval that resamples each
# group's days (a day's commits, often one agent session, move together). A difference counts
# only when both exclude 0. Shown only when the agent group reaches the pre-registered minimum.

# %%
differences = pd.DataFrame(report.differences_table(result))
differences if len(differences) else "no comparison: too few agent commits"

# %%
nb.figure(report.rates_figure(result), out, "agent_vs_human")

# %% [markdown]
# ## The compared commits that were reverted or fixed
#
# Every compared commit is in `fates.csv`; here the ones reverted or fixed at any time, to open
# with `git show`. `days_to_fix` / `days_to_revert` are empty when nothing followed on the
# analysed line of history.

# %%
# the columns are named even when no commit is compared (the demo repository: none)
fates = pd.DataFrame(report.fates_table(result), columns=list(report.FATE_COLUMNS))
fates.to_csv(out / "fates.csv", index=False)
followed = fates[fates["days_to_fix"].notna() | fates["days_to_revert"].notna()]
followed.assign(sha=followed["sha"].str[:10]).sort_values(["group", "at"])

# %%
opening = report.summary(result)
write_summary(opening, out)
summary_block.update(Markdown(opening.markdown()))
