"""Matplotlib figures of results.v1 documents (the notebooks and the report use these).

Every figure of an exploratory run carries "EXPLORATORY" in its title. A chart with nothing to
show says so in words on blank axes, rather than drawing axes around nothing; axes that count
things have integer ticks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from agent_reflection.experiments.p2.buckets import BUCKETS

#: A named ROC curve: (false-positive rates, true-positive rates, AUC).
Curve = tuple[Sequence[float], Sequence[float], float]


def _titled(fig: Figure, text: str, doc: Mapping[str, Any]) -> Figure:
    """``fig`` with its title (crimson and marked EXPLORATORY for an exploratory run)."""
    if doc.get("exploratory"):
        text = f"EXPLORATORY — {text}"
    fig.suptitle(text, color="crimson" if doc.get("exploratory") else "black")
    return fig


def nothing_to_show(ax: Axes, text: str) -> None:
    """Blank axes with ``text`` in the middle: no ticks, no invented scale."""
    ax.text(
        0.5,
        0.5,
        text,
        ha="center",
        va="center",
        fontsize=12,
        color="dimgrey",
        transform=ax.transAxes,
    )
    ax.set_xticks([])
    ax.set_yticks([])


def integer_counts(ax: Axes, axis: str = "y") -> None:
    """Ticks at whole numbers only on ``axis`` (an axis that counts things)."""
    (ax.yaxis if axis == "y" else ax.xaxis).set_major_locator(MaxNLocator(integer=True))


def roc_figure(doc: Mapping[str, Any], strata: Mapping[str, Curve] | None = None) -> Figure:
    """P1's ROC curve on the self-rated-high subset, and one curve per entry of ``strata``.

    Curves are drawn as straight segments between the points of successive thresholds (as
    scikit-learn draws them): tied scores move a curve diagonally, and the area under what is
    drawn is the AUC in the legend.
    """
    fig = Figure(figsize=(5.5, 5.5))
    ax = fig.subplots()
    roc = doc["details"].get("roc")
    if not roc and not strata:
        nothing_to_show(ax, "no ROC curve: the subset has only one class")
        return _titled(fig, "P1 ROC on the self-rated-high subset", doc)
    ax.plot([0, 1], [0, 1], ls="--", color="grey", lw=1, label="chance (AUC 0.5)")
    metric = doc.get("metric") or {}
    level = f"{metric['confidence_level']:.0%} " if metric.get("confidence_level") else ""
    if roc:
        # the pooled curve's own AUC and interval (the high subset's DeLong block), so the
        # legend names the area drawn; from the metric only for documents without that block
        block = doc["details"].get("high_subset") or metric
        auc = block.get("auc", block.get("value"))
        value = "undefined" if auc is None else f"{auc:.3f}"
        stratified = metric.get("name", "roc_auc") != "roc_auc"
        name = "pooled (all strata)" if stratified or strata else "AUC"
        label = f"{name}: AUC {value}{_interval(block, level)}"
        ax.plot(roc["fpr"], roc["tpr"], color="black", lw=2, label=label)
    if metric.get("name", "roc_auc") != "roc_auc" and metric.get("value") is not None:
        # the verdict's statistic is not this curve's AUC (e.g. a stratified AUC): say which,
        # and what it is, so the legend's pooled AUC is not read as the verdict's number
        statistic = f"{metric['value']:.3f}{_interval(metric, level)}"
        ax.set_title(
            f"verdict: stratified AUC {statistic},\nthe pair-weighted mean of the per-stratum "
            "curves' AUCs (not the pooled curve's)",
            fontsize=8.5,
        )
    for name, (fpr, tpr, auc) in (strata or {}).items():
        ax.plot(fpr, tpr, lw=1.2, alpha=0.85, label=f"{name}: AUC {auc:.3f}")
    ax.set(xlabel="false-positive rate", ylabel="true-positive rate", xlim=(0, 1), ylim=(0, 1))
    ax.set_aspect("equal")
    if strata:  # a curve per stratum: the legend under the axes, where it covers no curve,
        # and the figure keeps the width of the others (the report shows them side by side)
        legend_height = 0.17 * (len(strata) + 2) + 0.7  # inches: entries, axis label
        height = 5.5 + legend_height
        fig.set_size_inches(5.5, height)
        fig.subplots_adjust(bottom=legend_height / height, top=1 - 0.75 / height)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), borderaxespad=0, fontsize=8)
    else:
        ax.legend(loc="lower right", fontsize=8)
    return _titled(
        fig, f"P1 ROC{' per stratum' if strata else ''} on the self-rated-high subset", doc
    )


def _interval(block: Mapping[str, Any], level: str) -> str:
    if block.get("ci_low") is None:
        return ""
    return f", {level}CI {block['ci_low']:.3f}–{block['ci_high']:.3f}"


def reliability_figure(doc: Mapping[str, Any]) -> Figure:
    """Observed accuracy per confidence bin with its Wilson interval and row count: a bin of one
    row shows an interval spanning most of the axis, not a bar as sure as a bin of a thousand."""
    fig = Figure(figsize=(6, 5))
    ax = fig.subplots()
    rel = doc["details"].get("reliability")
    title = "P1 reliability diagram (accuracy per bin, with intervals)"
    if not rel:
        nothing_to_show(ax, "no data")
        return _titled(fig, title, doc)
    ax.plot([0, 1], [0, 1], ls="--", color="grey", label="perfect calibration")
    level = rel.get("confidence_level")
    shown_interval = False
    for b in rel["bins"]:
        if not b["count"]:
            continue
        mid = (b["low"] + b["high"]) / 2
        ax.bar(
            mid,
            b["accuracy"],
            width=b["high"] - b["low"],
            alpha=0.45,
            edgecolor="black",
            color="tab:blue",
        )
        top = b["accuracy"]
        if b.get("ci_low") is not None:
            ax.errorbar(
                [mid],
                [b["accuracy"]],
                yerr=[[b["accuracy"] - b["ci_low"]], [b["ci_high"] - b["accuracy"]]],
                fmt="o",
                color="black",
                markersize=3,
                capsize=3,
                label=None if shown_interval else f"{level:.0%} Wilson interval" if level else None,
            )
            shown_interval = True
            top = b["ci_high"]
        ax.annotate(f"n={b['count']:,}", (mid, top), ha="center", va="bottom", fontsize=7)
    ax.set_title(f"ECE {rel['ece']:.3f} over {rel['n']:,} rows", fontsize=9)
    ax.set(xlabel="stated confidence", ylabel="observed accuracy", xlim=(0, 1), ylim=(0, 1.1))
    ax.legend(loc="upper left", fontsize=8)
    return _titled(fig, title, doc)


def buckets_figure(doc: Mapping[str, Any]) -> Figure:
    """Stacked failure signals per repository; a "pooled" bar only when there are several."""
    fig = Figure(figsize=(7.5, 4))
    ax = fig.subplots()
    rows = [r for r in doc["details"]["by_repo"] if r["signals"]]
    if len(rows) > 1:
        rows.append({"repo": "pooled", **doc["details"]["pooled"]})
    if not rows:
        nothing_to_show(ax, "no signals")
        return _titled(fig, "P2 failure signals by bucket", doc)
    labels = [r["repo"] for r in rows]
    # room for three bars at least: one bar alone would fill the axes' width
    pad = max(0.0, (3 - len(labels)) / 2)
    ax.set_xlim(-0.5 - pad, len(labels) - 0.5 + pad)
    bottom = [0.0] * len(labels)
    for bucket in BUCKETS:
        values = [float(r[bucket]) for r in rows]
        ax.bar(labels, values, bottom=bottom, label=bucket, width=0.6)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set(xlabel="repository", ylabel="failure signals")
    integer_counts(ax)
    # outside the axes: inside, it covers the top of the tallest bar
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0)
    fig.subplots_adjust(right=0.72)
    return _titled(fig, "P2 failure signals by bucket", doc)


def gate_correction_figure(doc: Mapping[str, Any]) -> Figure:
    """P2: each gate's share by P2's buckets as they are (raw, of the counted signals) beside
    its gate-corrected share (of the corrected failures), with their intervals, and the
    smallest useful only-self-reflection share."""
    fig = Figure(figsize=(7.5, 4.6))
    ax = fig.subplots()
    gates = doc["details"].get("gate_correction")
    title = "P2 share per gate: P2's buckets vs gate-corrected"
    if not gates:
        nothing_to_show(ax, "no gate labels: no gate correction")
        return _titled(fig, title, doc)
    rows = [r for r in gates["by_gate"] if r["gate"] in BUCKETS or r["corrected"] > 0]
    xs = range(len(rows))
    width = 0.38
    for offset, key, label, colour in (
        (-width / 2, "raw_bucket", "P2's bucket (raw share of counted signals)", "#9aa5b1"),
        (width / 2, "gate_corrected", f"gate-corrected ({gates['labels']} labels)", "#1f6feb"),
    ):
        shares = [r[key] for r in rows]
        values = [s["value"] if s else 0.0 for s in shares]
        errors = [
            [s["value"] - s["ci_low"] if s else 0.0 for s in shares],
            [s["ci_high"] - s["value"] if s else 0.0 for s in shares],
        ]
        positions = [x + offset for x in xs]
        ax.bar(positions, values, width=width, label=label, color=colour)
        ax.errorbar(positions, values, yerr=errors, fmt="none", ecolor="black", capsize=4)
        for x, v, s in zip(positions, values, shares, strict=True):
            if s and v >= 0.1:
                ax.text(x, v / 2, f"{v:.2f}", ha="center", va="center", color="white")
            elif s:  # too short a bar to write in: above its interval
                ax.text(x, s["ci_high"] + 0.02, f"{v:.2f}", ha="center", va="bottom")
    smallest = doc.get("thresholds", {}).get("smallest_useful_share")
    if smallest is not None:
        ax.axhline(smallest, color="crimson", linestyle="--", linewidth=1)
        ax.text(
            len(rows) - 0.5,
            smallest,
            " smallest useful\n only-self share",
            color="crimson",
            va="center",
            fontsize=8,
        )
    ax.set_xticks(list(xs), [r["gate"] for r in rows])
    ax.set(xlabel="gate", ylabel="share (95% interval)", ylim=(0, 1))
    # below the axes: inside, it covers the tallest bars
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncols=2, fontsize=8)
    fig.subplots_adjust(bottom=0.28, right=0.84)
    return _titled(fig, title, doc)


def repo_shares_figure(doc: Mapping[str, Any]) -> Figure:
    """P2: each repository's gate-corrected only-self-reflection share alone, with its interval
    and the verdict its signals alone give, above the pooled share that decides; the smallest
    useful share as a line. The strata behind the pooled number, at a glance."""
    title = "P2 only-self-reflection share per repository (gate-corrected)"
    rows = [r for r in doc["details"]["by_repo"] if r.get("gate_corrected") is not None]
    metric = doc.get("metric") or {}
    fig = Figure(figsize=(7.5, 1.6 + 0.45 * (len(rows) + 1)))
    ax = fig.subplots()
    if not rows:
        nothing_to_show(ax, "no repository share (no gate labels, or no failures)")
        return _titled(fig, title, doc)
    points = [
        (r["repo"], r["gate_corrected"], r["ci_low"], r["ci_high"], r["verdict_alone"], "#1f6feb")
        for r in rows
    ]
    if metric.get("value") is not None:
        points.append(
            (
                "pooled (decides)",
                metric["value"],
                metric["ci_low"],
                metric["ci_high"],
                doc.get("verdict", ""),
                "black",
            )
        )
    ys = list(range(len(points)))[::-1]  # the first repository on top, pooled at the bottom
    for y, (_, value, low, high, verdict, colour) in zip(ys, points, strict=True):
        ax.errorbar(
            [value], [y], xerr=[[value - low], [high - value]], fmt="o", color=colour, capsize=4
        )
        ax.text(
            1.02,
            y,
            f"{value:.2f} {verdict}",
            va="center",
            fontsize=8,
            transform=ax.get_yaxis_transform(),
        )
    smallest = doc.get("thresholds", {}).get("smallest_useful_share")
    if smallest is not None:
        ax.axvline(smallest, color="crimson", linestyle="--", linewidth=1)
        ax.text(smallest, len(points) - 0.4, " smallest useful", color="crimson", fontsize=8)
    ax.set_yticks(ys, [p[0] for p in points])
    ax.set(
        xlabel="only-self-reflection share (95% interval)",
        ylabel="repository",
        xlim=(0, 1),
        ylim=(-0.6, len(points) - 0.2),
    )
    fig.subplots_adjust(left=0.22, right=0.8, bottom=0.3 if len(points) < 3 else 0.18)
    return _titled(fig, title, doc)


def time_to_signal_figure(doc: Mapping[str, Any]) -> Figure:
    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    days = doc["details"]["time_to_signal_days"]
    window = doc["thresholds"]["window_days"]
    if not days:
        nothing_to_show(ax, f"no signals: no task got one within {window} days")
        return _titled(fig, "P3 time to first signal", doc)
    # one-day bins that end at the window: a signal on its last day (counted) falls in the
    # last bin, left of the line, not in a bin beyond it; nothing is left out of the range
    top = max(float(window), *days)
    ax.hist(days, bins=max(1, math.ceil(top)), range=(0, top), edgecolor="black")
    ax.axvline(window, color="crimson", ls="--", label=f"window ({window} days)")
    ax.set(xlabel="days from completion to first signal", ylabel="tasks")
    integer_counts(ax)
    ax.legend()
    return _titled(fig, "P3 time to first signal", doc)


def by_kind_figure(doc: Mapping[str, Any]) -> Figure:
    """P3: completed tasks with each kind of signal within the window."""
    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    kinds = doc["details"]["by_kind"]
    if not any(k["tasks"] for k in kinds):
        nothing_to_show(ax, "no signals of any kind")
        return _titled(fig, "P3 signals by kind", doc)
    # horizontal bars: the kinds' long names ("regression-link", "cross-reference") ran into
    # each other under vertical ones; listed top down in the results' order
    ax.barh([k["kind"] for k in kinds], [k["tasks"] for k in kinds])
    ax.invert_yaxis()
    ax.set(ylabel="signal kind", xlabel="tasks with this signal in the window")
    integer_counts(ax, "x")
    return _titled(fig, "P3 signals by kind", doc)
