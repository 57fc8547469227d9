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
# holds p1/, p2/, p3/ each with results.json
results_dir = "reports/adhoc"
output_dir = "reports/adhoc"

# %%
from pathlib import Path

import pandas as pd
from IPython.display import Markdown, display

from agent_reflection.experiments.gate import phase0_gate
from agent_reflection.experiments.results import read_results

docs = {
    name: read_results(Path(results_dir) / name / "results.json")
    for name in ("p1", "p2", "p3")
    if (Path(results_dir) / name / "results.json").is_file()
}
gate = phase0_gate(docs)
if gate.exploratory:
    display(Markdown("## ⚠ EXPLORATORY — not a pre-registered result"))
bullets = "\n".join(f"- {r}" for r in gate.reasons + gate.caveats)
display(Markdown(f"## {gate.headline}\n\n{bullets}"))

# %%
pd.DataFrame(
    [
        {
            "experiment": k,
            "verdict": d["verdict"],
            "exploratory": d["exploratory"],
            "metric": d["metric"]["name"],
            "value": d["metric"]["value"],
            "ci": (d["metric"]["ci_low"], d["metric"]["ci_high"]),
            "n": d["n"],
            "pre-registration sha256": d["preregistration"]["sha256"][:12],
        }
        for k, d in docs.items()
    ]
)

# %%
import json

Path(output_dir).mkdir(parents=True, exist_ok=True)
(Path(output_dir) / "gate.json").write_text(json.dumps(gate.to_dict(), indent=2) + "\n")
print(gate.headline)
