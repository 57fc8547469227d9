"""Charts a reader can trust: every figure of the demo and of a real-data P1 run, checked.

Each figure is drawn (Agg) as the notebooks draw it and must have: something plotted (or the
explicit "nothing to show" text), a title, labelled axes, a legend that covers no plotted
point, and whole-number ticks on axes that count things.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import Collection
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from agent_reflection.experiments import plots
from agent_reflection.experiments.p1.analysis import run_p1
from agent_reflection.experiments.p2.analysis import run_p2
from agent_reflection.experiments.p3.analysis import run_p3
from agent_reflection.experiments.registration import load_preregistration
from agent_reflection.load.labels import load_labels
from agent_reflection.simulate.phase0 import build_demo
from agent_reflection.store.db import connect

#: Words in an axis label that mean the axis counts things (its ticks must be whole numbers).
COUNT_WORDS = ("signals", "tasks", "count", "rows", "findings", "tool call")


def figures_of(docs: Mapping[str, Mapping[str, Any]]) -> Iterator[tuple[str, Figure]]:
    """Every figure the P1-P3 notebooks draw from these results, named as they save it."""
    if "p1" in docs:
        doc = docs["p1"]
        yield "p1_roc", plots.roc_figure(doc)
        d = doc["details"]
        strata_auc = {r["stratum"]: r["auc"] for r in d.get("strata", [])}
        curves = {
            name: (roc["fpr"], roc["tpr"], strata_auc[name])
            for name, roc in (d.get("strata_roc") or {}).items()
            if strata_auc.get(name) is not None
        }
        if curves:
            yield "p1_roc_strata", plots.roc_figure(doc, curves)
        yield "p1_reliability", plots.reliability_figure(doc)
    if "p2" in docs:
        yield "p2_buckets", plots.buckets_figure(docs["p2"])
        yield "p2_gate_correction", plots.gate_correction_figure(docs["p2"])
        yield "p2_repo_shares", plots.repo_shares_figure(docs["p2"])
    if "p3" in docs:
        yield "p3_by_kind", plots.by_kind_figure(docs["p3"])
        yield "p3_time_to_signal", plots.time_to_signal_figure(docs["p3"])


def _empty_state(ax: Axes) -> bool:
    """The axes say in words that there is nothing to show (plots.nothing_to_show)."""
    return bool(ax.texts) and not ax.get_xticks().size and not ax.get_yticks().size


def _data_points(ax: Axes) -> np.ndarray[Any, Any]:
    """Display coordinates of everything plotted: line vertices, scatter points, bar tops."""
    points = [
        ax.transData.transform(np.asarray(line.get_xydata(), dtype=float))
        for line in ax.get_lines()
        if len(line.get_xydata())
    ]
    for coll in ax.collections:
        if isinstance(coll, Collection) and len(coll.get_offsets()):
            points.append(ax.transData.transform(np.asarray(coll.get_offsets(), dtype=float)))
    for patch in ax.patches:
        if isinstance(patch, Rectangle) and patch.get_height():
            x, y, w, h = patch.get_x(), patch.get_y(), patch.get_width(), patch.get_height()
            points.append(ax.transData.transform([(x + w / 2, y + h), (x, y + h), (x + w, y + h)]))
    return np.vstack(points) if points else np.empty((0, 2))


def check(name: str, fig: Figure) -> list[str]:
    """Every broken invariant of ``fig`` (empty when the chart can be trusted)."""
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    problems = []
    titled = bool(fig.get_suptitle())
    if not titled and not any(ax.get_title() for ax in fig.axes):
        problems.append(f"{name}: no title")
    for ax in fig.axes:
        if _empty_state(ax):
            continue
        if not (ax.get_lines() or ax.patches or ax.collections):
            problems.append(f"{name}: nothing plotted and no 'nothing to show' text")
        for axis, label in (("x", ax.get_xlabel()), ("y", ax.get_ylabel())):
            if not label.strip():
                problems.append(f"{name}: {axis} axis has no label")
            elif any(word in label for word in COUNT_WORDS):
                low, high = ax.get_xlim() if axis == "x" else ax.get_ylim()
                ticks = ax.get_xticks() if axis == "x" else ax.get_yticks()
                shown = [float(t) for t in ticks if min(low, high) <= t <= max(low, high)]
                if any(t != round(t) for t in shown):
                    problems.append(f"{name}: count axis {label!r} has ticks {shown}")
        legend = ax.get_legend()
        if legend is not None:
            box = legend.get_window_extent(renderer)
            covered = [p for p in _data_points(ax) if box.contains(*p)]
            if covered:
                problems.append(f"{name}: the legend covers {len(covered)} plotted point(s)")
    return problems


def test_the_checks_catch_an_untrustworthy_chart() -> None:
    fig = Figure(figsize=(4, 3))
    ax = fig.subplots()
    ax.plot([0, 1, 2, 3], [0, 1, 2, 3], label="a line")
    ax.scatter([2.5], [0.5], label="a point")
    ax.legend(loc="lower right")
    ax.set_ylabel("tasks")
    ax.set_ylim(0, 3)
    ax.set_yticks([0, 1.5, 3])
    problems = check("bad", fig)
    assert "bad: no title" in problems
    assert "bad: x axis has no label" in problems
    assert "bad: count axis 'tasks' has ticks [0.0, 1.5, 3.0]" in problems
    assert any("legend covers" in p for p in problems), problems


def test_an_explicit_empty_state_passes() -> None:
    fig = Figure()
    ax = fig.subplots()
    plots.nothing_to_show(ax, "no signals")
    fig.suptitle("P2 failure signals by bucket")
    assert check("empty", fig) == []


@pytest.fixture(scope="module")
def demo_docs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    data = build_demo(tmp_path_factory.mktemp("demo"))
    prereg = load_preregistration()
    con = connect(data.db_path, read_only=True)
    try:
        return {
            "p1": run_p1(con, prereg).to_dict(),
            "p2": run_p2(con, prereg).to_dict(),
            "p3": run_p3(con, prereg).to_dict(),
        }
    finally:
        con.close()


@pytest.mark.slow
def test_every_demo_figure_can_be_trusted(demo_docs: dict[str, dict[str, Any]]) -> None:
    figures = dict(figures_of(demo_docs))
    assert set(figures) >= {
        "p1_roc",
        "p1_reliability",
        "p2_buckets",
        "p2_gate_correction",
        "p3_by_kind",
        "p3_time_to_signal",
    }
    problems = [p for name, fig in figures.items() for p in check(name, fig)]
    assert not problems, "\n".join(problems)


@pytest.mark.shared
@pytest.mark.slow
def test_every_figure_of_p1_on_the_hle_labels_can_be_trusted(
    shared_dir: Path, tmp_path: Path
) -> None:
    path = shared_dir / "data/calibration/hle-verbalized-confidence.jsonl.gz"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    con = connect(tmp_path / "hle.duckdb")
    try:
        load_labels(con, path)
        doc = run_p1(con, load_preregistration()).to_dict()
    finally:
        con.close()
    figures = dict(figures_of({"p1": doc}))
    assert set(figures) == {"p1_roc", "p1_roc_strata", "p1_reliability"}  # several models
    problems = [p for name, fig in figures.items() for p in check(name, fig)]
    assert not problems, "\n".join(problems)
