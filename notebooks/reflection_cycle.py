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
# # The reflection cycle on recorded agent runs
#
# Tier 1 of the reflection cycle runs four rules over the run log: **consecutive_failures**
# (pause a task whose last 3 outcomes failed or timed out), **timeout_pattern**, **stale_task**
# and **skill_failure_correlation**. Every rule looks at a window of `lookback_seconds` before a
# clock `now`. A recorded export is long past, so its clock must be set explicitly: this
# notebook replays the history step by step, as if the cycle had been watching.
#
# The example is the real export of 500 mini-swe-agent runs on SWE-bench Verified (all within
# about two hours). A *task* there is a repository (`django/django`), a *sub-session* one
# instance; a run that did not resolve its instance counts as **failed**.

# %% tags=["parameters"]
db_path = "reports/cycle/cycle.duckdb"
output_dir = "reports/cycle"
# the clock of the final pass: ISO-8601, epoch seconds, or "latest" (newest outcome)
now = "latest"
# the window; 24 h (the default) would cover the whole two-hour export at every step
lookback_seconds = 3600
# loaded when the database has no runs yet; "" is the real export in ../shared (or in
# $AGENT_REFLECTION_SHARED), beside the checkout
runs_dir = ""
# minutes between replay steps, widened when the history would need more than max_steps
step_minutes = 5
max_steps = 120

# %%
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pandas as pd
from IPython.display import Markdown, display
from matplotlib.figure import Figure

from agent_reflection.cycle.clock import resolve_clock
from agent_reflection.cycle.config import load_config
from agent_reflection.cycle.engine import run_cycle
from agent_reflection.cycle.replay import clocks, replay, span
from agent_reflection.errors import ReflectionError
from agent_reflection.experiments import notebook as nb
from agent_reflection.experiments import plots
from agent_reflection.experiments.report import Summary, write_summary
from agent_reflection.in_loop import replay_inputs
from agent_reflection.load.runs import load_runs
from agent_reflection.store import db

out = Path(output_dir)
out.mkdir(parents=True, exist_ok=True)
con = db.connect(db_path)
# the summary opens the report; the last cell fills it in once the cycle has run
summary_block = display(Markdown("_Summary: filled in by the last cell._"), display_id=True)
if con.execute(db.read_sql("cycle/outcome_count.sql")).fetchone()[0] == 0:
    runs = Path(runs_dir) if runs_dir else replay_inputs.shared_dir() / replay_inputs.AGENT_RUNS
    if not (runs / "runs.jsonl").is_file():
        raise ReflectionError(
            f"{db_path} holds no run logs, and {runs} has no runs.jsonl to replay instead: load "
            "your agents' run logs first (reflect load runs FILE), or set "
            "AGENT_REFLECTION_SHARED to the folder whose data/agent-runs/ holds the sample export"
        )
    for name in ("runs.jsonl", "steps.jsonl.gz"):
        print(load_runs(con, runs / name).summary.line())
config = replace(load_config(None, env={}), lookback_seconds=int(lookback_seconds))
first, last = span(con)
clock = resolve_clock(con, str(now))
display(
    Markdown(
        f"Outcomes from **{first:%Y-%m-%d %H:%M}Z** to **{last:%Y-%m-%d %H:%M}Z**; final clock "
        f"**{clock:%Y-%m-%d %H:%M:%S}Z**, lookback **{config.lookback_seconds:,} s**."
    )
)

# %% [markdown]
# ## Setting the clock for replayed data
# With the wall clock as `now`, nothing recorded in 2025 is inside a 24-hour window: no task
# is a candidate and the rules find nothing. Replaying means evaluating at clocks inside the
# recorded span; the window must be shorter than the span or every step sees everything.

# %%
start = first + timedelta(minutes=step_minutes)
at = clocks(start, clock, timedelta(minutes=step_minutes), max_clocks=int(max_steps))
found, streak = replay(con, config, at)
every = (at[1] - at[0]) if len(at) > 1 else timedelta(minutes=step_minutes)
widened = f" (widened from {step_minutes} to stay within {max_steps} steps)" * (
    every > timedelta(minutes=step_minutes)
)
print(f"{len(at)} clocks every {every}{widened}, {len(found)} findings in total")

# %% [markdown]
# ## Findings by rule over time

# %%
fig = Figure(figsize=(9, 3.5))
ax = fig.subplots()
ax.set_title(f"findings per replay step (lookback {config.lookback_seconds:,} s)")
if found.empty:
    plots.nothing_to_show(ax, "no findings at any clock")
else:
    table = found.groupby(["clock", "rule"]).size().unstack(fill_value=0)
    table.reindex(at, fill_value=0).plot(ax=ax, drawstyle="steps-post")
    ax.set_xlabel("clock (UTC)")
    ax.set_ylabel("findings")
    plots.integer_counts(ax)
display(nb.figure(fig, out, "findings_by_rule"))
if not found.empty:
    display(table.tail(10))

# %% [markdown]
# ## Failure streaks per task
# The streak counts back from a task's latest outcome over its whole history (the window only
# decides which tasks are candidates). The dashed line is the pause limit.

# %%
fig = Figure(figsize=(9, 4))
ax = fig.subplots()
ax.set_title("failure streaks of the six tasks with the longest ones")
if streak.empty:
    plots.nothing_to_show(ax, "no failure streaks")
else:
    wide = streak.pivot_table(index="clock", columns="subject_id", values="count", aggfunc="max")
    top = wide.max().sort_values(ascending=False).head(6).index
    wide[top].plot(ax=ax, drawstyle="steps-post")
    ax.axhline(config.consecutive_failure_limit, ls="--", color="grey", label="pause limit")
    ax.set_xlabel("clock (UTC)")
    ax.set_ylabel("failure streak")
    plots.integer_counts(ax)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
display(nb.figure(fig, out, "failure_streaks"))
if not found.empty:
    paused = found[found.rule == "consecutive_failures"]
    display(paused.groupby("subject_id").agg(first_at=("clock", "min"), longest=("count", "max")))

# %% [markdown]
# ## Skills vs failures
# `skill_failure_correlation` needs sub-sessions that read skill files. The SWE-bench agent
# has no skills (its steps are bash commands), so for it the table below is empty; what its
# steps do show is how often commands failed in failed vs completed runs.

# %%
skills = con.execute(db.read_sql("cycle/skill_reads_by_status.sql")).df()
display(skills if not skills.empty else Markdown("*No skill reads in this log.*"))
steps = con.execute(db.read_sql("cycle/step_outcomes_by_status.sql")).df()
if not steps.empty:
    display(steps.pivot_table(index="step_outcome", columns="status", values="steps").fillna(0))

# %% [markdown]
# ## The pass at the final clock, and what the LLM tier said
# A dry run (nothing is paused): findings go to the `findings` and `events` tables. Tier 2
# runs only when an endpoint is configured (`[reflection.llm]` or `$REFLECT_LLM_URL`).

# %%
result = run_cycle(con, config, now=clock, trigger="notebook", apply=False)
for f in result.findings:
    print(f.line())
for line in result.pause.lines():
    print(line)
analyses = con.execute(db.read_sql("cycle/analyses.sql")).df()
display(analyses if not analyses.empty else Markdown("*No analysis recorded.*"))
con.close()
counts = found["rule"].value_counts() if not found.empty else pd.Series(dtype=int)
by_rule = ", ".join(f"{rule} {n:,}" for rule, n in counts.items()) or "none"
pausing = found[found.rule == "consecutive_failures"] if not found.empty else found
report_summary = Summary(
    "Reflection cycle",
    "Replayed over the recorded runs, which tasks would the cycle's rules flag or pause?",
    (
        ("outcomes", f"{first:%Y-%m-%d %H:%M}Z to {last:%Y-%m-%d %H:%M}Z"),
        ("replay", f"{len(at):,} clocks, lookback {config.lookback_seconds:,} s"),
        ("findings", f"{len(found):,} in total; by rule: {by_rule}"),
        ("at the final clock", f"{len(result.findings):,} finding(s) at {clock:%Y-%m-%d %H:%M}Z"),
        (
            "tasks flagged by consecutive_failures",
            f"{pausing['subject_id'].nunique() if len(pausing) else 0:,}",
        ),
    ),
)
write_summary(report_summary, out)
summary_block.update(Markdown(report_summary.markdown()))
