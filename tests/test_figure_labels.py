"""Every demo figure's tick labels can be read: no two labels of an axis overlap."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from tests.test_figures import figures_of

from agent_reflection.experiments.p1.analysis import run_p1
from agent_reflection.experiments.p2.analysis import run_p2
from agent_reflection.experiments.p3.analysis import run_p3
from agent_reflection.experiments.registration import load_preregistration
from agent_reflection.simulate.phase0 import build_demo
from agent_reflection.store.db import connect


def overlapping_tick_labels(fig: Any) -> list[str]:
    """Pairs of neighbouring tick labels whose drawn boxes intersect, per axes and axis."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    found = []
    for ax in fig.axes:
        for axis, labels in (("x", ax.get_xticklabels()), ("y", ax.get_yticklabels())):
            shown = [t for t in labels if t.get_visible() and t.get_text()]
            boxes = [t.get_window_extent(renderer) for t in shown]
            for (a, box_a), (b, box_b) in zip(
                zip(shown, boxes, strict=True),
                list(zip(shown, boxes, strict=True))[1:],
                strict=False,
            ):
                if box_a.overlaps(box_b):
                    found.append(
                        f"{ax.get_title() or fig.texts}: {axis} {a.get_text()!r} / {b.get_text()!r}"
                    )
    return found


@pytest.mark.slow
def test_no_tick_labels_overlap_in_the_demo_figures(tmp_path: Path) -> None:
    data = build_demo(tmp_path / "demo")
    prereg = load_preregistration()
    con = connect(data.db_path, read_only=True)
    try:
        docs = {
            "p1": run_p1(con, prereg).to_dict(),
            "p2": run_p2(con, prereg).to_dict(),
            "p3": run_p3(con, prereg).to_dict(),
        }
    finally:
        con.close()
    problems = {name: overlapping_tick_labels(fig) for name, fig in figures_of(docs)}
    # p3_by_kind's long kind names ran together under vertical bars (now horizontal ones)
    assert "p3_by_kind" in problems
    assert not any(problems.values()), problems
