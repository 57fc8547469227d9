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

# %% tags=["parameters"]
# "" = the workspace's database, found from the folder the kernel runs in upward
db_path = ""
# "" = adhoc/p2 under the workspace's reports folder
output_dir = ""
# "" = the repository's preregistration.toml
preregistration_path = ""
# e.g. {"p2.window_days": 14}; any change => EXPLORATORY
overrides = {}
# more CSV files of the team's own gate labels (the columns of [p2] gate_labels_paths),
# e.g. the demo's simulated truth; [] = only the registered ones
gate_labels = []

# %%
from IPython.display import Markdown, display

from agent_reflection.experiments import notebook as nb
from agent_reflection.experiments import plots
from agent_reflection.experiments.p2 import run_p2
from agent_reflection.experiments.p2.buckets import describe_rule

prereg = nb.prepare(preregistration_path, overrides)
con = nb.open_db(db_path)
output_dir = nb.output_folder(output_dir, "adhoc/p2")
result = run_p2(con, prereg, own_gate_labels=gate_labels)
doc = result.to_dict()
# the report opens with its summary: question, verdict, number, n, what would change it
nb.show_opening(doc, prereg, con)

# %% [markdown]
# ## Method
#
# **Failure signals** in git history: reverts (resolved to the reverted commit) and fixes (a
# `fix:` type, a closing keyword, or a fix word used as a verb: "Fix x", not "a fix") whose
# SZZ-introducing commit — the commit that last touched the code lines the fix changes — is a
# feature change at most `window_days` earlier. Each signal gets a **category**; reverts that
# were undone again (`cancelled`), reverts whose target is not in the data, fixes cherry-picked
# to another branch (`duplicate`), **cosmetic** fixes and reverts (typo, formatting, lint,
# no code line in the diff) and commits that are **not a fix** (a version bump, a new test)
# are listed but never counted. Each counted signal goes to a
# **bucket** by the pre-registered first-match rules:
# 1. **ci** — the fixing commit names a failing test/build/lint/type check, or changes only
#    CI/build configuration or only tests (inferred: no CI results are loaded);
# 2. **human-review** — the introducing change's risk floor says it needed review;
# 3. **only-self-reflection** — the rest.
#
# **Precision** is measured on the hand-labelled sets, and apart on the *held-out* set judged
# after the rules were frozen (the others were read while revising the rules, so their
# precision is optimistic). An amendment written after the held-out labels were read makes
# them in-sample too; the pre-registration's amendment reasons say which (the shipped set:
# since the cosmetic amendment of 2026-11-28).
#
# **The verdict statistic** is the *gate-corrected* only-self-reflection share (double
# sampling): P2's buckets are a fallible classifier of every signal, gate labels (which gate
# would realistically have caught the failure, or no failure) the true one on a labelled
# subset; per bucket the labelled signals estimate P(gate | bucket), and the corrected count of
# a gate is the sum over buckets of bucket size times that probability. The raw and the
# precision-corrected shares are shown beside it. Kill when its interval lies below the
# smallest useful share, continue when it is above 0 and the share reaches it, otherwise
# inconclusive (docs/experiments.md, "P2"). With `fix_wording_sensitivity` registered, the
# notes also give the verdict under the other reading of fix words ("word": any fix word;
# "verb": only where it acts as a verb): whether the verdict hangs on that reading.

# %% [markdown]
# ## Verdict and its notes
# Signals come from the `commits` and `commit_files` tables and, for repos loaded with
# `reflect load git --szz`, from `fix_inducing` / `fix_changes`.

# %%
display(Markdown(nb.verdict_markdown(result, con)))

# %% [markdown]
# ## The pre-registered rules, in order
# A counted signal goes to the bucket of the first rule with a condition that holds (each
# condition in the words P2 registers it with, `experiments/p2/buckets.py`), unless CI results
# decided it first.

# %%
display(Markdown("\n".join(f"{i}. {describe_rule(r)}" for i, r in enumerate(prereg.p2.rules, 1))))

# %% [markdown]
# ## Signals per category, and counted signals per bucket (raw and precision-corrected)
# Per repository: its counted signals per bucket and, beside them, its gate-corrected
# only-self-reflection share and the verdict its signals alone would give (`verdict_alone`):
# the strata behind the pooled share.

# %%
import pandas as pd

details = doc["details"]
display(pd.Series(details["by_category"], name="signals").to_frame())
display(pd.DataFrame(details["by_repo"]))
display(
    pd.DataFrame(
        {"raw": details["pooled"], "precision-corrected": details["pooled_corrected"] or {}}
    )
)
nb.figure(plots.buckets_figure(doc), output_dir, "p2_buckets")
nb.figure(plots.repo_shares_figure(doc), output_dir, "p2_repo_shares")

# %% [markdown]
# ## The only-self-reflection share, gate-corrected (the verdict) and as before
# Which gate labels corrected P2's buckets (the team's own, the shipped ones of the same
# signals, or a matrix *transported* from the shipped labels of other repositories), the
# matrix of labelled signals by P2's bucket (rows) and gate (columns) with the row each bucket
# used, and the three shares: gate-corrected (bootstrap interval), precision-corrected (P2's
# buckets trusted, counts times precision) and raw (P2's buckets as they are).

# %%
gates = details["gate_correction"]
if gates is None:
    print("no gate labels ([p2] gate_labels_paths, second_rater_labels_paths): no correction")
else:
    print(f"labels: {gates['labels']} — {gates['note']}")
    matrix = pd.DataFrame(
        [
            {
                "P2 bucket": r["bucket"],
                "signals": r["signals"],
                "labelled": r["labelled"],
                **r["gates"],
                "row used": r["row"],
            }
            for r in gates["matrix"]
        ]
    ).set_index("P2 bucket")
    display(matrix.loc[:, (matrix != 0).any(axis=0)])
    display(pd.Series(gates["corrected"], name="corrected count").to_frame().T)
shares = details["shares"]
share_rows = [
    {"share": name, **value, "decides": name == shares["verdict_statistic"]}
    for name, value in shares.items()
    if isinstance(value, dict)
]
if share_rows:
    display(pd.DataFrame(share_rows).set_index("share"))
else:
    print("no share could be computed (no counted signals)")
nb.figure(plots.gate_correction_figure(doc), output_dir, "p2_gate_correction")

# %% [markdown]
# ## Precision on the labelled validation set
# A signal is a true failure when its label says `is_failure = yes`; `introducer_agrees`
# counts true failures whose label names P2's introducing commit. The `not counted` row is the
# signals P2 does *not* count: failures there are real ones it throws away. The `held-out`
# rows use only the labels judged after the rules were frozen (`holdout_labels_paths`): the
# unbiased precision, beside the pooled one, until a rule is amended after reading them (the
# shipped held-out set is in-sample since the cosmetic amendment of 2026-11-28).

# %%
precision = details["precision"]
held = precision["holdout"]
print("labels:", ", ".join(precision["labels"]) or "none", "| measured:", precision["measured"])
print("held-out labels:", ", ".join(held["labels"]) or "none")
pd.DataFrame(
    [
        *precision["by_kind"],
        *precision["by_bucket"],
        precision["counted"],
        precision["not_counted"],
        *({**row, "group": f"held-out {row['group']}"} for row in held["by_kind"]),
        *({**row, "group": f"held-out {row['group']}"} for row in held["by_bucket"]),
        held["counted"],
    ]
)

# %% [markdown]
# ## Two raters: agreement, consensus precision and bucket precision
# `second_rater_labels_paths` names an independent rating of the counted signals (by someone
# who did not write the rules and did not see the first labels), with the gate that would have
# caught each failure; `adjudication_paths` decides their disagreements (the consensus).
# **Bucket precision**: of P2's signals in a bucket, the share that are consensus failures whose
# gate is that bucket; `gate_agreement` is the same share among the failures alone. The
# consensus-corrected share is P2's precision-corrected share with the consensus labels.

# %%
raters = precision.get("raters")
if raters is None:
    print("no second rater configured ([p2] second_rater_labels_paths)")
else:
    kappa = raters["kappa"] or {}
    print(
        f"compared {raters['compared']}: agreement {raters['agreement']['value']}, "
        f"Cohen's kappa {kappa.get('value')} ({kappa.get('ci_low')}-{kappa.get('ci_high')}); "
        f"not adjudicated: {len(raters['unadjudicated'])}"
    )
    display(
        pd.DataFrame(
            [
                {**row, "subset": subset}
                for subset, rows in raters["precision"].items()
                for row in rows
            ]
        )
    )
    display(
        pd.DataFrame(
            [
                {
                    "bucket": b["bucket"],
                    "judged": b["judged"],
                    "failures": b["failures"],
                    "gate agrees": b["gate_agrees"],
                    **{f"precision {k}": v for k, v in (b["precision"] or {}).items()},
                    **{f"given failure {k}": v for k, v in (b["gate_agreement"] or {}).items()},
                    **b["gates"],
                }
                for b in raters["buckets"]
            ]
        ).fillna(0)
    )
    by_gate = raters["only_self_reflection_share_by_gate"]
    corrected = raters["consensus_corrected_share"]
    if by_gate and by_gate.get("value") is not None:
        print(
            f"only-self-reflection share of the consensus failures, by the second rater's gate: "
            f"{by_gate['k']}/{by_gate['n']} = {by_gate['value']:.2f} "
            f"(95% CI {by_gate['ci_low']:.2f}-{by_gate['ci_high']:.2f})"
        )
    if corrected and corrected.get("value") is not None:
        print(
            "only-self-reflection share, P2's buckets corrected by the consensus precision: "
            f"{corrected['value']:.2f} "
            f"(95% CI {corrected['ci_low']:.2f}-{corrected['ci_high']:.2f})"
        )
    display(pd.DataFrame(raters["disagreements"]))

# %% [markdown]
# ## Every signal: bucket, the rule that put it there, gate label and rater
# Every counted signal (open) and every signal listed but not counted (closed), with full
# subjects and reasons; the same rows are in `p2_signals.csv` beside this report (cells that a
# spreadsheet would read as a formula start with an apostrophe).

# %%
from IPython.display import HTML

from agent_reflection.experiments.p2 import table

rows = table.signal_rows(details)
print(nb.write_text(table.signals_csv(rows), output_dir, "p2_signals.csv"))
display(HTML(table.signals_html(rows)))

# %% [markdown]
# ## Save

# %%
print(nb.write_results(result, output_dir))
