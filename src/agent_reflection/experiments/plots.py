"""Matplotlib figures of results.v1 documents (the notebooks and the report use these).

Every figure of an exploratory run carries "EXPLORATORY" in its title.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from matplotlib.figure import Figure

from agent_reflection.experiments.preregistration import BUCKETS


def _title(fig: Figure, text: str, doc: Mapping[str, Any]) -> None:
    if doc.get("exploratory"):
        text = f"EXPLORATORY — {text}"
    fig.suptitle(text, color="crimson" if doc.get("exploratory") else "black")


def roc_figure(doc: Mapping[str, Any]) -> Figure:
    fig = Figure(figsize=(5, 5))
    ax = fig.subplots()
    roc = doc["details"].get("roc")
    ax.plot([0, 1], [0, 1], ls="--", color="grey", label="chance")
    if roc:
        m = doc["metric"]
        ax.step(roc["fpr"], roc["tpr"], where="post",
                label=f"AUC {m['value']:.3f} [{m['ci_low']:.3f}, {m['ci_high']:.3f}]")  # fmt: skip
    else:
        ax.text(0.5, 0.5, "ROC undefined (one class only)", ha="center")
    ax.set(xlabel="false-positive rate", ylabel="true-positive rate", xlim=(0, 1), ylim=(0, 1))
    ax.legend(loc="lower right")
    _title(fig, "P1 ROC on the self-rated-high subset", doc)
    return fig


def reliability_figure(doc: Mapping[str, Any]) -> Figure:
    fig = Figure(figsize=(6, 5))
    ax = fig.subplots()
    rel = doc["details"].get("reliability")
    ax.plot([0, 1], [0, 1], ls="--", color="grey", label="perfect calibration")
    if rel:
        for b in rel["bins"]:
            if b["count"]:
                mid = (b["low"] + b["high"]) / 2
                ax.bar(mid, b["accuracy"], width=b["high"] - b["low"], alpha=0.6,
                       edgecolor="black", color="tab:blue")  # fmt: skip
                ax.annotate(f"n={b['count']}", (mid, b["accuracy"]), ha="center",
                            va="bottom", fontsize=7)  # fmt: skip
        ax.set_title(f"ECE {rel['ece']:.3f} over {rel['n']} rows", fontsize=9)
    ax.set(xlabel="stated confidence", ylabel="observed accuracy", xlim=(0, 1), ylim=(0, 1.08))
    ax.legend(loc="upper left")
    _title(fig, "P1 reliability diagram (counts per bin)", doc)
    return fig


def buckets_figure(doc: Mapping[str, Any]) -> Figure:
    fig = Figure(figsize=(7, 4))
    ax = fig.subplots()
    rows = [r for r in doc["details"]["by_repo"] if r["signals"]]
    labels = [*(r["repo"] for r in rows), "pooled"]
    pooled = doc["details"]["pooled"]
    bottom = [0.0] * len(labels)
    for bucket in BUCKETS:
        values = [float(r[bucket]) for r in rows] + [float(pooled[bucket])]
        ax.bar(labels, values, bottom=bottom, label=bucket)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set(ylabel="failure signals")
    ax.legend()
    _title(fig, "P2 failure signals by bucket", doc)
    return fig


def time_to_signal_figure(doc: Mapping[str, Any]) -> Figure:
    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    days = doc["details"]["time_to_signal_days"]
    window = doc["thresholds"]["window_days"]
    if days:
        ax.hist(days, bins=range(0, int(window) + 2), edgecolor="black")
    else:
        ax.text(0.5, 0.5, "no task got a signal in the window", ha="center",
                transform=ax.transAxes)  # fmt: skip
    ax.axvline(window, color="crimson", ls="--", label=f"window ({window} days)")
    ax.set(xlabel="days from completion to first signal", ylabel="tasks")
    ax.legend()
    _title(fig, "P3 time to first signal", doc)
    return fig


def by_kind_figure(doc: Mapping[str, Any]) -> Figure:
    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    kinds = doc["details"]["by_kind"]
    ax.bar([k["kind"] for k in kinds], [k["tasks"] for k in kinds])
    ax.set(ylabel="tasks with this signal in the window")
    _title(fig, "P3 signals by kind", doc)
    return fig
