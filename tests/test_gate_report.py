"""The Phase-0 gate and the run report (pure functions, no kernel)."""

from __future__ import annotations

from typing import Any

import pytest

from agent_reflection.experiments.report import index_html, summary_markdown
from agent_reflection.experiments.verdict import CAVEAT_P3, phase0_gate


def doc(name: str, verdict: str, exploratory: bool = False) -> dict[str, Any]:
    return {
        "experiment": name,
        "verdict": verdict,
        "exploratory": exploratory,
        "n": 10,
        "metric": {"name": "m", "value": 0.5, "ci_low": 0.4, "ci_high": 0.6},
        "kill_condition": "rule",
        "notes": ["a note"],
        "preregistration": {"sha256": "ab" * 32},
    }


@pytest.mark.parametrize(
    ("p1", "p2", "p3", "decision", "caveat"),
    [
        ("continue", "continue", "continue", "allowed", False),
        ("continue", "continue", "kill", "allowed", True),
        ("kill", "continue", "continue", "blocked", False),
        ("continue", "kill", "kill", "blocked", True),
        ("insufficient-data", "continue", "continue", "undecided", False),
        ("continue", None, "continue", "undecided", False),
    ],
)
def test_gate(p1, p2, p3, decision, caveat) -> None:  # type: ignore[no-untyped-def]
    docs = {k: doc(k, v) for k, v in (("p1", p1), ("p2", p2), ("p3", p3)) if v}
    gate = phase0_gate(docs)
    assert gate.decision == decision and gate.allowed == (decision == "allowed")
    assert (CAVEAT_P3 in gate.caveats) == caveat
    assert not gate.exploratory


def test_a_gate_missing_an_experiment_says_it_needs_all_three() -> None:
    # `reflect run p1` alone: the gate was not asked, and the headline says how to ask it
    alone = phase0_gate({"p1": doc("p1", "insufficient-data")})
    assert alone.decision == "undecided"
    assert alone.headline == (
        "Phase-0 gate: not decided (needs p1, p2 and p3 in one run: reflect run all)"
    )
    every = {k: doc(k, "insufficient-data") for k in ("p1", "p2", "p3")}
    assert phase0_gate(every).headline == "Phase-0 gate: UNDECIDED"  # asked, and undecided
    # a P1 kill blocks the loop whatever else ran
    assert phase0_gate({"p1": doc("p1", "kill")}).headline == "Phase-0 gate: closed loop BLOCKED"


def test_exploratory_input_marks_gate_and_every_page() -> None:
    docs = {
        "p1": doc("p1", "continue", True),
        "p2": doc("p2", "continue"),
        "p3": doc("p3", "continue"),
    }
    gate = phase0_gate(docs)
    assert gate.exploratory and "EXPLORATORY" in gate.headline
    md = summary_markdown("run-1", docs, gate)
    page = index_html("run-1", docs, gate, {"p1": ["p1/p1_roc.png"]})
    assert md.count("EXPLORATORY") >= 2 and page.count("EXPLORATORY") >= 3
    assert "<img src='p1/p1_roc.png'" in page and "ab" * 32 in page


def test_a_qualified_p1_verdict_is_named_on_every_page_and_leaves_the_gate_alone() -> None:
    p1 = doc("p1", "continue")
    p1["qualifications"] = [
        {
            "kind": "anti-informative",
            "column": "model",
            "stratum": "m-x",
            "message": "anti-informative: model m-x ...",
        }
    ]
    docs = {"p1": p1, "p2": doc("p2", "continue"), "p3": doc("p3", "continue")}
    gate = phase0_gate(docs)
    assert gate.decision == "allowed"  # the verdict is continue; the qualification adds
    sentence = "continue, except model m-x, which is anti-informative"
    assert sentence in summary_markdown("run-1", docs, gate)
    assert sentence in index_html("run-1", docs, gate, {})


@pytest.mark.slow  # nbconvert's exporter compiles its templates: seconds
def test_a_report_page_shows_results_without_code_and_names_the_notebook(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """nbconvert's no-input export of an executed notebook: markdown and outputs stay, code
    and prompts go, and the last paragraph names the notebook beside it (which keeps them)."""
    import nbformat

    from agent_reflection.execute.execute import write_report_html

    nb = nbformat.v4.new_notebook()
    code = nbformat.v4.new_code_cell("the_code_itself = 6 * 7\nprint(the_code_itself)")
    code.execution_count = 1
    code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="an output 42\n")]
    nb.cells = [nbformat.v4.new_markdown_cell("# A title\n\nSome prose."), code]
    executed = tmp_path / "p9_thing.ipynb"
    nbformat.write(nb, executed)
    page = write_report_html(executed, tmp_path / "report.html").read_text("utf-8")
    assert "A title" in page and "Some prose." in page and "an output 42" in page
    assert "the_code_itself" not in page and "In&nbsp;[1]" not in page
    assert '<a href="p9_thing.ipynb"><code>p9_thing.ipynb</code></a>' in page
    assert "the_code_itself" in executed.read_text("utf-8")  # the notebook keeps the code


def test_the_index_and_summary_open_with_the_verdicts_and_link_each_notebook() -> None:
    docs = {k: doc(k, "continue") for k in ("p1", "p2", "p3")}
    gate = phase0_gate(docs)
    notebooks = {"p1": "p1/p1_calibration.ipynb"}
    md = summary_markdown("run-1", docs, gate, notebooks)
    page = index_html("run-1", docs, gate, {}, notebooks)
    assert "[notebook (code)](p1/p1_calibration.ipynb)" in md
    assert "<a href='p1/p1_calibration.ipynb'>notebook (code)</a>" in page
    assert page.count("notebook (code)") == 1  # only the notebooks given are linked
    for text in (md, page):
        # summary, then each experiment, then the pre-registration
        assert text.index("Summary") < text.index("P1 calibration: continue")
        assert text.index("P3 detectability: continue") < text.index("Pre-registration")
