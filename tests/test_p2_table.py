"""The P2 report shows every signal (issue 32): a collapsible HTML table of every counted signal
with its bucket, rule, gate label and rater and its full subject, the same rows as a CSV whose
cells a spreadsheet cannot run, and the borrowed-label warning first in the summary."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from agent_reflection.experiments.p2.analysis import run_p2
from agent_reflection.experiments.p2.gates import GateLabelSet
from agent_reflection.experiments.p2.sheet import FORMULA_STARTS, safe_cell
from agent_reflection.experiments.p2.table import COLUMNS, signal_rows, signals_csv, signals_html
from agent_reflection.experiments.registration import load_preregistration
from agent_reflection.experiments.report import experiment_summary
from agent_reflection.store.db import connect
from test_p2 import sha, szz_fix

REPO_ROOT = Path(__file__).resolve().parents[1]
LONG = "fix: " + "the totals of the quarterly report were rounded twice when " * 3
FORMULA = "=cmd|' /C calc'!A0"  # a repository name a spreadsheet would run


def test_every_signal_is_in_the_table_and_the_csv_with_its_gate_label() -> None:
    prereg = load_preregistration(REPO_ROOT / "preregistration.toml")
    con = connect(":memory:")
    for i in range(25):
        subject = LONG if i == 0 else f"fix: wrong totals {i}"
        szz_fix(con, 10 + 10 * i, fix_subject=subject, repo=FORMULA if i == 1 else "r")
    labelled = {sha(11): "ci", sha(21): "only-self-reflection"}
    ratings = {k: {"ana": v, "ben": v} for k, v in labelled.items()}
    result = run_p2(
        con, prereg, labels=[], gate_labels=GateLabelSet(labelled, {}, {}, {}, own_ratings=ratings)
    )
    doc = result.to_dict()
    rows = signal_rows(doc["details"])
    counted = [r for r in rows if r["bucket"] is not None]
    assert len(counted) == result.n == 25
    page = signals_html(rows)
    assert page.count("<tr>") == len(rows) + 2  # a header row per table
    assert "25 counted signal(s)" in page and "<details open>" in page
    assert LONG.strip().replace("&", "&amp;") in page  # the full subject, not cut
    assert "=cmd|&#x27; /C calc" in page  # escaped, never markup
    # commits shown short with the full id as the tooltip; a wide table scrolls, never cut
    full = sha(11)
    assert f"<code title='{full}'>{full[:12]}</code>" in page
    assert page.count("overflow-x:auto") == 2
    by_fix = {r["fixing_sha"]: r for r in rows}
    assert (by_fix[sha(11)]["gate_label"], by_fix[sha(11)]["gate_rater"]) == ("ci", "ana+ben")
    assert by_fix[sha(31)]["gate_label"] is None and by_fix[sha(31)]["rule"]
    parsed = list(csv.DictReader(io.StringIO(signals_csv(rows))))
    assert [list(r) for r in parsed[:1]] == [list(COLUMNS)] and len(parsed) == len(rows)
    assert {r["fixing_sha"]: r["repo"] for r in parsed}[sha(21)] == "'" + FORMULA
    assert {r["fixing_sha"]: r["subject"] for r in parsed}[sha(11)] == LONG
    # the summary opens with on whose labels the verdict rests (here: too few of its own)
    opening = experiment_summary(doc)
    assert opening.lead.startswith("EXPLORATORY: verdict rests on")
    assert opening.body_lines()[0] == f"  {opening.lead}"


def test_safe_cell_neutralises_every_formula_start() -> None:
    for start in FORMULA_STARTS:
        assert safe_cell(f"{start}cmd") == f"'{start}cmd"
    assert safe_cell("fix: a") == "fix: a" and safe_cell("") == ""
