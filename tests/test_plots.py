"""What the figures draw: ROC area = AUC on tied scores, empty charts, integer counts, P2's bars."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from sklearn.metrics import roc_auc_score, roc_curve

from agent_reflection.experiments import plots
from agent_reflection.experiments.p1.analysis import analyse_p1
from agent_reflection.experiments.p2.analysis import run_p2
from agent_reflection.experiments.p2.buckets import BUCKETS
from agent_reflection.experiments.p3.analysis import run_p3
from agent_reflection.experiments.registration import load_preregistration
from agent_reflection.stats.roc import roc_curve_points
from agent_reflection.stats.wilson import wilson_ci
from agent_reflection.store.db import connect


def p1_doc(scores: Any, labels: Any) -> dict[str, Any]:
    """The parts of a P1 results document that the ROC figure reads."""
    auc = float(roc_auc_score(labels, scores))
    roc = roc_curve_points(scores, labels)
    interval = {"ci_low": auc - 0.05, "ci_high": auc + 0.05}
    return {
        "exploratory": False,
        "metric": {"name": "roc_auc", "value": auc, "confidence_level": 0.95, **interval},
        "details": {
            "roc": {"fpr": list(roc.fpr), "tpr": list(roc.tpr)},
            "high_subset": {"auc": auc, **interval},  # the curve's own DeLong block
        },
    }


def drawn(fig: Figure, label_start: str) -> np.ndarray[Any, Any]:
    """The vertices of the polyline matplotlib draws for the line whose label starts so."""
    [line] = [ln for ln in fig.axes[0].get_lines() if ln.get_label().startswith(label_start)]
    return np.asarray(line.get_path().vertices)


def area(vertices: np.ndarray[Any, Any]) -> float:
    return float(np.trapezoid(vertices[:, 1], vertices[:, 0]))


@pytest.mark.parametrize("seed", range(5))
def test_the_drawn_roc_area_is_the_auc_on_tied_scores(seed: int) -> None:
    rng = np.random.default_rng(seed)
    y = rng.random(300) < 0.4
    s = np.round(rng.random(300) * 0.4 + 0.3 * y, 1)  # few distinct scores: many ties
    doc = p1_doc(s, y)
    line = drawn(plots.roc_figure(doc), "AUC")
    assert area(line) == pytest.approx(doc["metric"]["value"], abs=1e-12)
    fpr, tpr, _ = roc_curve(y, s, drop_intermediate=False)
    np.testing.assert_allclose(line, np.column_stack([fpr, tpr]))  # as scikit-learn draws it


def test_a_staircase_would_lose_area_over_ties() -> None:
    """The check above can fail: a step plot of the same points is not the AUC."""
    s = np.array([0.9, 0.9, 0.8, 0.8, 0.8, 0.8, 0.5, 0.5])
    y = np.array([1, 0, 1, 1, 0, 0, 1, 0], dtype=bool)
    doc = p1_doc(s, y)
    ax = Figure().subplots()
    [step] = ax.step(doc["details"]["roc"]["fpr"], doc["details"]["roc"]["tpr"], where="post")
    assert area(np.asarray(step.get_path().vertices)) < doc["metric"]["value"] - 0.1
    assert area(drawn(plots.roc_figure(doc), "AUC")) == pytest.approx(0.5, abs=1e-12)


@pytest.mark.parametrize(
    ("scores", "labels"),
    [
        ([0.8] * 6, [1, 1, 1, 0, 0, 0]),  # one tie group: the diagonal, AUC 0.5
        ([0.9, 0.9, 0.8, 0.8, 0.8, 0.8, 0.1], [1, 1, 1, 1, 0, 0, 0]),
        ([1, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8], [1, 1, 0, 1, 0, 1, 0]),
    ],
)
def test_the_roc_never_dips_under_chance_with_one_tie_group(
    scores: list[float], labels: list[int]
) -> None:
    doc = p1_doc(scores, labels)
    assert doc["metric"]["value"] >= 0.5
    line = drawn(plots.roc_figure(doc), "AUC")
    assert (line[:, 1] >= line[:, 0] - 1e-12).all()
    assert area(line) == pytest.approx(doc["metric"]["value"], abs=1e-12)


def test_named_curves_are_drawn_beside_the_pooled_one() -> None:
    rng = np.random.default_rng(9)
    strata: dict[str, plots.Curve] = {}
    for name in ("model-a", "model-b"):
        y = rng.random(120) < 0.5
        s = np.round(rng.random(120) + 0.3 * y, 1)
        roc = roc_curve_points(s, y)
        strata[name] = (roc.fpr, roc.tpr, float(roc_auc_score(y, s)))
    y = rng.random(200) < 0.5
    fig = plots.roc_figure(p1_doc(rng.random(200) + y, y), strata)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels[0] == "chance (AUC 0.5)" and labels[1].startswith("pooled (all strata): AUC ")
    for name, (_, _, auc) in strata.items():
        assert f"{name}: AUC {auc:.3f}" in labels
        assert area(drawn(fig, f"{name}:")) == pytest.approx(auc, abs=1e-12)
    # only the strata, when the pooled curve is undefined
    fig = plots.roc_figure({"metric": {}, "details": {"roc": None}}, strata)
    assert len(fig.axes[0].get_lines()) == 3


def test_the_legend_names_the_drawn_curve_when_the_verdict_uses_another_statistic() -> None:
    """When a stratified AUC decides P1, the pooled curve keeps its own AUC in the legend,
    labelled pooled, and the verdict's statistic is named above the axes with what it is."""
    rng = np.random.default_rng(11)
    y = rng.random(400) < 0.5
    doc = p1_doc(np.round(rng.random(400) + 0.2 * y, 1), y)
    pooled = doc["metric"]["value"]
    doc["metric"] = {
        "name": "stratified_roc_auc",
        "value": 0.9,
        "ci_low": 0.85,
        "ci_high": 0.95,
        "confidence_level": 0.95,
    }
    fig = plots.roc_figure(doc)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert legend[1] == (
        f"pooled (all strata): AUC {pooled:.3f}, 95% CI {pooled - 0.05:.3f}–{pooled + 0.05:.3f}"
    )
    assert area(drawn(fig, "pooled")) == pytest.approx(pooled, abs=1e-12)
    title = fig.axes[0].get_title()
    assert title.startswith("verdict: stratified AUC 0.900, 95% CI 0.850–0.950")
    assert "pair-weighted mean of the per-stratum" in title and "not the pooled" in title


def test_reliability_bins_carry_their_wilson_intervals() -> None:
    """A bin of one row is drawn with the interval one row gives, not as a sure bar."""
    rng = np.random.default_rng(4)
    conf = np.r_[0.05, 0.8 + 0.2 * rng.random(400)]  # one row in the lowest bin
    y = np.r_[True, rng.random(400) < 0.5]
    doc = analyse_p1(
        pd.DataFrame({"confidence": conf, "correct": y}),
        load_preregistration(),
    ).to_dict()
    bins = doc["details"]["reliability"]["bins"]
    lonely = bins[0]
    assert lonely["count"] == 1 and lonely["accuracy"] == 1.0
    expected = wilson_ci(1, 1, 0.95)
    assert (lonely["ci_low"], lonely["ci_high"]) == (expected.ci_low, expected.ci_high)
    assert lonely["ci_low"] < 0.25  # one row says almost nothing
    fig = plots.reliability_figure(doc)
    ax = fig.axes[0]
    # one error bar per non-empty bin, each spanning its Wilson interval
    filled = [b for b in bins if b["count"]]
    segments = [c for c in ax.collections if len(c.get_segments()) == 1]
    spans = sorted(
        (float(seg[0][0][1]), float(seg[0][1][1])) for seg in (c.get_segments() for c in segments)
    )
    assert spans == sorted((b["ci_low"], b["ci_high"]) for b in filled)
    assert "95% Wilson interval" in [t.get_text() for t in ax.get_legend().get_texts()]
    assert f"n={lonely['count']:,}" in [t.get_text() for t in ax.texts]


def texts(ax: Axes) -> list[str]:
    return [t.get_text() for t in ax.texts]


def assert_blank(fig: Figure, words: str) -> None:
    [ax] = fig.axes
    assert any(words in t for t in texts(ax)), texts(ax)
    assert list(ax.get_xticks()) == [] and list(ax.get_yticks()) == []
    assert not ax.patches and not ax.get_lines()  # no bars or lines around nothing


def test_empty_charts_say_so_on_blank_axes() -> None:
    con = connect(":memory:")
    prereg = load_preregistration()
    p2, p3 = run_p2(con, prereg).to_dict(), run_p3(con, prereg).to_dict()
    assert_blank(plots.buckets_figure(p2), "no signals")
    assert_blank(plots.time_to_signal_figure(p3), "no signals")
    assert_blank(plots.by_kind_figure(p3), "no signals")
    assert_blank(plots.roc_figure({"metric": {}, "details": {"roc": None}}), "one class")
    assert_blank(plots.reliability_figure({"details": {"reliability": None}}), "no data")


def p2_doc(by_repo: dict[str, tuple[int, int, int]]) -> dict[str, Any]:
    rows = [
        {"repo": r, "signals": sum(c), **dict(zip(BUCKETS, c, strict=True))}
        for r, c in by_repo.items()
    ]
    pooled = {b: sum(r[b] for r in rows) for b in BUCKETS}
    return {"exploratory": False, "details": {"by_repo": rows, "pooled": pooled}}


def bar_labels(fig: Figure) -> list[str]:
    return [t.get_text() for t in fig.axes[0].get_xticklabels()]


def test_p2_pools_only_several_repositories_and_keeps_the_legend_off_the_bars() -> None:
    one = plots.buckets_figure(p2_doc({"pallets/flask": (69, 9, 62), "empty/repo": (0, 0, 0)}))
    assert bar_labels(one) == ["pallets/flask"]
    two = plots.buckets_figure(p2_doc({"a/x": (1, 2, 0), "b/y": (0, 1, 2)}))
    assert bar_labels(two) == ["a/x", "b/y", "pooled"]
    heights = [p.get_height() for p in two.axes[0].patches]
    assert sum(heights) == 2 * 6  # each repository once, and the pool once
    for fig in (one, two):
        fig.canvas.draw()  # type: ignore[no-untyped-call]
        ax = fig.axes[0]
        legend = ax.get_legend().get_window_extent()
        assert legend.x0 > ax.get_window_extent().x1  # right of the axes, not over a bar
        assert all(float(t).is_integer() for t in ax.get_yticks())


def test_signals_on_the_last_day_of_the_window_are_drawn_inside_it() -> None:
    p3 = {
        "thresholds": {"window_days": 30},
        "details": {"time_to_signal_days": [0.0, 2.5, 30.0, 30.0]},
    }
    ax = plots.time_to_signal_figure(p3).axes[0]
    bars = [(p.get_x(), p.get_x() + p.get_width(), p.get_height()) for p in ax.patches]
    assert sum(h for _, _, h in bars) == 4  # every task drawn
    assert [(lo, hi, h) for lo, hi, h in bars if h] == [(0, 1, 1), (2, 3, 1), (29, 30, 2)]
    [window] = [ln for ln in ax.get_lines() if ln.get_label().startswith("window")]
    assert list(window.get_xdata()) == [30, 30]


def test_count_axes_have_integer_ticks() -> None:
    p3 = {
        "exploratory": True,
        "thresholds": {"window_days": 30},
        "details": {
            "time_to_signal_days": [1.0, 2.0, 2.0, 29.5],
            "by_kind": [{"kind": "reopened", "tasks": 1}, {"kind": "reverted", "tasks": 2}],
        },
    }
    for fig in (plots.time_to_signal_figure(p3), plots.by_kind_figure(p3)):
        fig.canvas.draw()  # type: ignore[no-untyped-call]
        ticks = fig.axes[0].get_yticks()
        assert len(ticks) >= 2 and all(float(t).is_integer() for t in ticks), ticks
        assert fig.texts[0].get_text().startswith("EXPLORATORY")
