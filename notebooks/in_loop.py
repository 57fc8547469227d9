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
# # In-loop reflection: cadence checkpoints and escalations
#
# Reads the transcript tables (`reflect load transcripts ...`) and answers four questions:
#
# 1. How many tool calls does each session make?
# 2. Where did checkpoints fire, and where *would* they fire at cadences 5, 7 and 10?
# 3. What happened after each checkpoint: did the next calls change direction (open a file or
#    run a command never seen before in the session)? Compared with the same measure after
#    every call, as a baseline.
# 4. Escalations by attempt band and suspected failure layer.
#
# Outputs go to `output_dir`: CSV tables, `summary.json` and a chart.

# %% tags=["parameters"]
db_path = "data/reflection.duckdb"
output_dir = "reports/in-loop"
cadences = [5, 7, 10]
window = 3  # tool calls after a checkpoint that count as "what happened next"

# %%
import json
from pathlib import Path

import pandas as pd
from IPython.display import Markdown, display
from matplotlib.figure import Figure

from agent_reflection.experiments import notebook as nb
from agent_reflection.experiments import plots
from agent_reflection.experiments.summary import findings_summary, write_summary
from agent_reflection.store.db import connect, read_sql

out = Path(output_dir)
out.mkdir(parents=True, exist_ok=True)
con = connect(db_path, read_only=True)
# the summary opens the report; the last cell fills it in once everything is counted
summary_block = display(Markdown("_Summary: filled in by the last cell._"), display_id=True)

# %% [markdown]
# ## 1. Tool calls per session

# %%
per_session = con.execute(read_sql("in_loop/tool_calls_per_session.sql")).df()
per_session.to_csv(out / "tool_calls_per_session.csv", index=False)
per_session[["session_id", "n_prompts", "n_tool_calls", "n_checkpoints", "n_escalations"]]

# %% [markdown]
# ## 2. Checkpoints: fired, and would fire at each cadence

# %%
fired = con.execute(read_sql("in_loop/checkpoints_fired.sql")).df()
would = con.execute(read_sql("in_loop/would_fire.sql"), {"cadences": list(cadences)}).df()
would.to_csv(out / "would_fire.csv", index=False)
fired.to_csv(out / "checkpoints_fired.csv", index=False)
would_per_session = (
    would.groupby(["session_id", "cadence"])
    .size()
    .unstack("cadence", fill_value=0)
    .reindex(columns=list(cadences), fill_value=0)
    .reindex(per_session["session_id"], fill_value=0)
)
would_per_session

# %%
fig = Figure(figsize=(8, 0.6 * max(len(per_session), 2) + 1))
ax = fig.subplots()
labels = [s[:8] for s in per_session["session_id"]]
ax.barh(labels, per_session["n_tool_calls"], color="#bbb", label="tool calls")
for i, sid in enumerate(per_session["session_id"]):
    for j, c in enumerate(cadences):  # one colour per cadence in every session
        seqs = would.loc[(would["session_id"] == sid) & (would["cadence"] == c), "seq"]
        ax.scatter(
            seqs,
            [i + (j - 1) * 0.2] * len(seqs),
            s=12,
            color=f"C{j}",
            label=f"would fire at cadence {c}" if i == 0 else None,
        )
    got = fired.loc[fired["session_id"] == sid, "after_seq"]
    ax.scatter(
        got, [i] * len(got), marker="x", color="k", label="fired" if i == 0 and len(fired) else None
    )
ax.set_xlabel("tool call")
plots.integer_counts(ax, "x")
if len(per_session):
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
else:
    plots.nothing_to_show(ax, "no sessions")
nb.figure(fig, out, "checkpoints")

# %% [markdown]
# ## 3. What happened after each checkpoint
#
# For every call, `next_new_file` / `next_new_command` / `next_new_program` say whether one of
# the next `window` calls touched a file, ran an exact command, or ran a program (first word of
# the command) not seen before in the session. The baseline is the same share over all calls
# followed by at least one call; a checkpoint that redirects the agent should beat it.

# %%
direction = con.execute(read_sql("in_loop/call_direction.sql"), {"window": window}).df()
direction = direction[direction["next_calls"] > 0]
measures = ["next_new_file", "next_new_command", "next_new_program"]


def shares(frame: pd.DataFrame, label: str) -> dict[str, object]:
    row: dict[str, object] = {"positions": label, "n": len(frame)}
    for m in measures:
        row[m] = round(float(frame[m].mean()), 3) if len(frame) else None
    return row


rows = [shares(direction, "every call (baseline)")]
for c in cadences:
    at = would[would["cadence"] == c][["session_id", "seq"]]
    rows.append(shares(direction.merge(at, on=["session_id", "seq"]), f"cadence {c}"))
actual = fired.rename(columns={"after_seq": "seq"})[["session_id", "seq"]]
rows.append(shares(direction.merge(actual, on=["session_id", "seq"]), "fired checkpoints"))
after = pd.DataFrame(rows)
after.to_csv(out / "after_checkpoint.csv", index=False)
after

# %% [markdown]
# ## 4. Escalations by attempt band and failure layer

# %%
bands = con.execute(read_sql("in_loop/escalations_by_band.sql")).df()
bands.to_csv(out / "escalations_by_band.csv", index=False)
bands if len(bands) else "no <ESCALATION> blocks in these transcripts"

# %%
summary = {
    "sessions": len(per_session),
    "tool_calls": int(per_session["n_tool_calls"].sum()),
    "checkpoints_fired": len(fired),
    "would_fire": {str(c): int((would["cadence"] == c).sum()) for c in cadences},
    "after_checkpoint": after.to_dict(orient="records"),
    "escalations": int(bands["blocks"].sum()) if len(bands) else 0,
}
(out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
con.close()
# share of positions followed by a new file, for each row that has positions
new_file = "; ".join(
    f"{r['positions']} {r['next_new_file']} (n = {r['n']:,})" for _, r in after.iterrows() if r["n"]
)
report_summary = findings_summary(
    "In-loop reflection",
    "Where do cadence checkpoints fire, and does the agent change direction after them?",
    [
        ("sessions", f"{summary['sessions']:,} with {summary['tool_calls']:,} tool calls"),
        ("checkpoints fired", f"{summary['checkpoints_fired']:,}"),
        ("would fire", ", ".join(f"cadence {c}: {n:,}" for c, n in summary["would_fire"].items())),
        ("new file within the next calls", new_file or "no call is followed by another"),
        ("escalations", f"{summary['escalations']:,}"),
    ],
)
write_summary(report_summary, out)
summary_block.update(Markdown(report_summary.markdown()))
summary
