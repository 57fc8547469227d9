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
# # Phase-0 summary and gate
#
# The closed calibration / skill-synthesis loop may be built **only if neither P1 nor P2 is
# killed** (and both reached a verdict). A P3 kill does not block it but adds a caveat: outcome
# signals are rare, so the loop could only produce caveat notes. Any exploratory input makes
# the whole summary exploratory.

# %% tags=["parameters"]
# holds p1/, p2/, p3/ each with results.json ("" = adhoc/ under the workspace's reports folder)
results_dir = ""
# "" = adhoc/ under the workspace's reports folder
output_dir = ""

# %%
import json
from pathlib import Path

from IPython.display import Markdown, display

from agent_reflection.experiments import notebook as nb
from agent_reflection.experiments.report import (
    exploratory_reasons,
    gate_summary,
    registration_lines,
)
from agent_reflection.experiments.verdict import phase0_gate

results_dir = nb.output_folder(results_dir, "adhoc")
output_dir = nb.output_folder(output_dir, "adhoc")
# the runner has validated each results.json against results.v1
docs = {
    name: json.loads((Path(results_dir) / name / "results.json").read_text("utf-8"))
    for name in ("p1", "p2", "p3")
    if (Path(results_dir) / name / "results.json").is_file()
}
gate = phase0_gate(docs)
# the page opens with the summary the run index and `reflect run all` show
display(Markdown(gate_summary(docs, gate.headline).markdown()))
if gate.exploratory:
    why = "\n".join(f"- {r}" for r in exploratory_reasons(docs))
    display(Markdown(f"## ⚠ EXPLORATORY — not a pre-registered result\n\n{why}"))
display(Markdown("\n".join(f"- {line}" for line in registration_lines(docs))))
bullets = "\n".join(f"- {r}" for r in gate.reasons + gate.caveats)
display(Markdown(f"## {gate.headline}\n\n{bullets}"))

# %% [markdown]
# ## The three verdicts

# %%
rows = [
    "| experiment | verdict | metric | value | CI | n | exploratory | pre-registration |",
    "|---|---|---|---|---|---|---|---|",
]
for key, d in docs.items():
    m = d["metric"]
    value = "undefined" if m["value"] is None else f"{m['value']:.3f}"
    ci = "" if m.get("ci_low") is None else f"{m['ci_low']:.3f}–{m['ci_high']:.3f}"
    rows.append(
        f"| {key} | **{d['verdict']}** | {m['name']} | {value} | {ci} | {d['n']} | "
        f"{'yes' if d['exploratory'] else 'no'} | {d['preregistration']['sha256'][:12]} |"
    )
display(Markdown("\n".join(rows)))

# %%
Path(output_dir).mkdir(parents=True, exist_ok=True)
(Path(output_dir) / "gate.json").write_text(json.dumps(gate.to_dict(), indent=2) + "\n")
print(gate.headline)
