"""The summary every report opens with (pure: built from results.v1 documents)."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pytest

from agent_reflection.experiments.report import (
    Summary,
    experiment_summary,
    gate_summary,
    number_text,
    read_summary,
    would_change,
    write_summary,
)
from agent_reflection.experiments.verdict import decide
from agent_reflection.stats.interval import Interval


def doc(
    verdict: str, value: float | None, low: float | None, high: float | None, **extra: Any
) -> dict[str, Any]:
    return {
        "experiment": "p1",
        "title": "P1 — confidence calibration",
        "verdict": verdict,
        "exploratory": False,
        "n": 1800,
        "metric": {
            "name": "AUC",
            "value": value,
            "ci_low": low,
            "ci_high": high,
            "ci_method": "delong",
            "confidence_level": 0.95,
        },
        "thresholds": {"null_auc": 0.5, "smallest_useful_auc": 0.55, "min_per_class": 522},
        "kill_condition": "rule",
        "notes": [],
        **extra,
    }


def test_the_number_carries_its_interval_method_and_level() -> None:
    assert number_text(doc("continue", 0.697, 0.674, 0.722)["metric"]) == (
        "AUC = 0.697 (95% delong CI 0.674–0.722)"
    )
    assert number_text({"name": "AUC", "value": 0.6}) == "AUC = 0.600"
    assert number_text({"name": "AUC", "value": None}).startswith("AUC undefined")


@pytest.mark.parametrize(
    ("estimate", "low", "high"),
    [(0.697, 0.674, 0.722), (0.52, 0.48, 0.54), (0.56, 0.49, 0.63), (0.53, 0.51, 0.56)],
)
def test_what_would_change_the_verdict_names_the_bound_that_decides(
    estimate: float, low: float, high: float
) -> None:
    verdict = decide(Interval(estimate, low, high), null_value=0.5, smallest_useful=0.55).verdict
    text = would_change(doc(verdict, estimate, low, high))
    if verdict == "continue":
        assert text.startswith(f"inconclusive if the lower bound (now {low:.3f}) were at or ")
        assert f"the upper bound (now {high:.3f}) fell below 0.55" in text
    elif verdict == "kill":
        assert (
            text == f"not a kill if the upper bound (now {high:.3f}) reached the smallest "
            "useful AUC 0.55"
        )
    else:
        assert verdict == "inconclusive"
        assert f"(now {high:.3f})" in text and f"(now {low:.3f})" in text


def test_too_little_data_asks_for_the_preregistered_minimum() -> None:
    text = would_change(doc("insufficient-data", None, None, None))
    assert (
        text == "more data: too few rows for an interval (pre-registered minimum: "
        "min_per_class = 522)"
    )


def test_too_little_data_with_an_interval_names_it_and_the_minimum() -> None:
    # P1 on 29 loop-labelled sessions: an interval exists but the sample is under the minimum
    text = would_change(doc("insufficient-data", 0.808, 0.608, 0.96))
    assert text == (
        "more data: below the minimum sample the interval (now 0.608–0.960) decides nothing "
        "(pre-registered minimum: min_per_class = 522)"
    )


def test_experiment_summary_has_question_verdict_number_n_and_what_would_change_it() -> None:
    s = experiment_summary(doc("kill", 0.51, 0.47, 0.54, details={"reason": "few labels"}))
    assert s.title == "P1 — confidence calibration"
    assert "confidence" in s.question and s.question.endswith("?")
    facts = dict(s.facts)
    assert list(facts) == ["verdict", "number", "n", "would change the verdict", "why"]
    assert facts["verdict"] == "kill" and facts["n"] == "1,800" and facts["why"] == "few labels"
    assert s.lines()[0] == s.title and s.lines()[1].startswith("  question: ")
    assert "  verdict: kill" not in s.body_lines(without=("verdict",))
    md = s.markdown()
    assert md.startswith("## Summary: P1") and "- **n:** 1,800" in md
    assert "EXPLORATORY" not in md
    assert (
        "EXPLORATORY"
        in experiment_summary({**doc("kill", 0.51, 0.47, 0.54), "exploratory": True}).markdown()
    )


def test_gate_summary_lists_every_experiment_with_its_number() -> None:
    docs = {"p1": doc("continue", 0.697, 0.674, 0.722), "p3": doc("kill", 0.1, 0.05, 0.15)}
    s = gate_summary(docs, "Phase-0 gate: UNDECIDED")
    assert dict(s.facts)["decision"] == "Phase-0 gate: UNDECIDED"
    assert dict(s.facts)["P1"] == "continue; AUC = 0.697 (95% delong CI 0.674–0.722); n = 1,800"
    assert "P3" in dict(s.facts) and "P2" not in dict(s.facts)


def test_findings_summary_round_trips_through_its_file(tmp_path: Path) -> None:
    s = Summary("In-loop", "Where?", (("sessions", "3"), ("escalations", "0")))
    assert read_summary(tmp_path) is None
    write_summary(s, tmp_path)
    assert read_summary(tmp_path) == s


def test_a_malformed_summary_file_names_the_file_and_field(tmp_path: Path) -> None:
    (tmp_path / "report_summary.json").write_text('{"title": "t", "question": 3, "facts": []}')
    with pytest.raises(ValueError, match=r"report_summary.json: field 'question'"):
        read_summary(tmp_path)
    with pytest.raises(ValueError, match=r"x: facts\[0\]"):
        Summary.from_dict({"title": "t", "question": "q", "facts": [["a"]]}, "x")


@pytest.mark.slow(reason="the demo's data built, then `reflect run p2` (a notebook) twice")
def test_run_p2_prints_the_summary_its_report_and_the_index_open_with(tmp_path: Path) -> None:
    """The demo's data through the real CLI: terminal, notebook page and index agree."""
    import os
    import subprocess
    import sys

    from agent_reflection.experiments.results import read_results
    from agent_reflection.simulate.phase0 import build_demo

    data = build_demo(tmp_path / "demo")

    def run_p2(run_id: str, *extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                *(sys.executable, "-m", "agent_reflection", "run", "p2"),
                *("--db", str(data.db_path), "--out", str(tmp_path / "reports")),
                *("--run-id", run_id, *extra),
            ],
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "CI": "1"},
            check=False,
        )

    done = run_p2("r")
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = tmp_path / "reports" / "r"
    summary = experiment_summary(read_results(run_dir / "p2" / "results.json"))
    # the verdict line, then each reason the run is exploratory, then the summary's body
    lines = [x for x in done.stdout.splitlines() if not x.startswith("  EXPLORATORY because ")]
    assert lines[0].startswith("p2: ")
    assert lines[1 : 1 + len(summary.body_lines(without=("verdict",)))] == list(
        summary.body_lines(without=("verdict",))
    )
    number = dict(summary.facts)["number"]
    page = (run_dir / "p2" / "report.html").read_text("utf-8")
    assert page.index("Summary: P2") < page.index("Verdict and its notes")
    index = (run_dir / "index.html").read_text("utf-8")
    assert index.index("<h2>Summary</h2>") < index.index("<table>")
    assert number in index
    # the demo's P2 rests on borrowed labels: that is the FIRST line of every P2 summary
    lead = summary.lead
    assert lead.startswith("EXPLORATORY: verdict rests on gate labels BORROWED"), lead
    assert lines[1] == f"  {lead}" and lines[2].startswith("  question: ")
    assert "labels" not in dict(summary.facts)  # said once, first
    shown = html.escape(lead.split("'")[0])  # a renderer may write an apostrophe either way
    start = page.index("Summary: P2")
    assert start < page.index(shown, start) < page.index("Question.", start)
    p2_section = index[index.index("P2 git history: ") :]
    assert p2_section.index(shown) < p2_section.index("<ul class='facts'>")
    md = (run_dir / "summary.md").read_text("utf-8")
    p2_md = md[md.index("## P2 git history: ") :].splitlines()
    assert p2_md[2] == f"**{lead}**" and p2_md[4].startswith("- verdict: ")
    as_json = run_p2("r-json", "--json")
    assert as_json.returncode == 0, as_json.stderr[-3000:]
    p2 = json.loads(as_json.stdout)["experiments"]["p2"]
    assert next(iter(p2)) == "lead" and p2["lead"] == lead


def test_a_confirmed_or_non_p2_summary_has_no_lead() -> None:
    confirmed = doc(
        "continue",
        0.3,
        0.2,
        0.4,
        details={
            "verdict_rests_on": "Verdict rests on r's OWN gate labels: r 40 of 60 signals",
            "label_standing": {"confirmatory": True},
        },
    )
    s = experiment_summary(confirmed)
    assert s.lead == "" and s.facts[0] == ("labels", confirmed["details"]["verdict_rests_on"])
    assert s.body_lines()[0].startswith("  question: ")
    assert Summary.from_dict(json.loads(json.dumps(s.to_dict()))) == s
    borrowed = {**confirmed, "details": {**confirmed["details"], "verdict_rests_on": "EXPL"}}
    borrowed["details"]["label_standing"] = {"confirmatory": False}
    b = experiment_summary(borrowed)
    assert b.lead == "EXPL" and b.markdown().splitlines()[2] == "**EXPL**"
    assert (
        next(iter(b.to_dict())) == "lead"
        and Summary.from_dict(json.loads(json.dumps(b.to_dict()))) == b
    )
    with pytest.raises(ValueError, match="field 'lead'"):
        Summary.from_dict({"title": "t", "question": "q", "facts": [], "lead": 3})
