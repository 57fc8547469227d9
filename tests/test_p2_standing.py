"""Whose gate labels a P2 verdict rests on: a repository's own labels, drawn by the seeded
sampler, by two raters, at the registered minimum, confirm; borrowed (transported) labels or
too few make the run EXPLORATORY and the summary's first line says so; a transported share's
interval spans the share under each source repository's labels."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from agent_reflection.experiments.p2.analysis import run_p2
from agent_reflection.experiments.p2.buckets import BUCKETS, HUMAN_REVIEW, ONLY_SELF
from agent_reflection.experiments.p2.gates import (
    ADJUDICATED,
    GateLabelSet,
    read_gate_label_set,
)
from agent_reflection.experiments.p2.raters import GATE_COLUMNS, SecondRater
from agent_reflection.experiments.p2.sheet import SheetSignal, draw_sample
from agent_reflection.experiments.registration import load_preregistration
from agent_reflection.experiments.report import experiment_summary
from agent_reflection.experiments.results import ExperimentResult
from agent_reflection.store.db import connect
from test_p2 import many_fixes
from test_p2_gates import shipped_set

REPO_ROOT = Path(__file__).resolve().parents[1]
CI = "ci"


@pytest.fixture(scope="module")
def prereg():  # type: ignore[no-untyped-def]
    return load_preregistration(REPO_ROOT / "preregistration.toml")


@pytest.fixture()
def con():  # type: ignore[no-untyped-def]
    c = connect(":memory:")
    many_fixes(c, 60, risky_every=3)  # 20 human-review, 40 only-self-reflection
    return c


def drawn(con, prereg) -> list[SheetSignal]:  # type: ignore[no-untyped-def]
    """The signals `reflect p2 sheet` draws on this database with the registered seed."""
    result = run_p2(con, prereg, labels=[], gate_labels=None)
    signals = [SheetSignal.of(s) for s in result.details["signals"] if s["bucket"] is not None]
    p = prereg.p2
    return list(
        draw_sample(signals, per_bucket=p.gate_sample_per_bucket, seed=p.gate_sample_seed).signals
    )


def gate(s: SheetSignal, i: int) -> str:
    return HUMAN_REVIEW if s.bucket == HUMAN_REVIEW else (ONLY_SELF, CI, CI)[i % 3]


def two_raters(signals: list[SheetSignal]) -> GateLabelSet:
    ratings = {s.fixing_sha: {"ana": gate(s, i), "ben": gate(s, i)} for i, s in enumerate(signals)}
    own = {sha: r["ana"] for sha, r in ratings.items()}
    return GateLabelSet(own, {}, {}, {}, own_ratings=ratings)


def first_line(result: ExperimentResult) -> str:
    """On whose labels the verdict rests, as the summary says it: its first line (the lead)
    when that makes the verdict exploratory, else its first fact (after the question)."""
    opening = experiment_summary(result.to_dict())
    lines = [line.strip() for line in opening.body_lines()]
    if opening.lead:  # before the question
        assert lines[0] == opening.lead
        return opening.lead
    assert lines[1] == f"labels: {opening.facts[0][1]}"  # the first fact after the question
    return opening.facts[0][1]


def test_own_labels_of_the_sampled_signals_by_two_raters_confirm(con, prereg) -> None:  # type: ignore[no-untyped-def]
    sample = drawn(con, prereg)
    assert len(sample) == 40  # 20 of each bucket: the registered minimum
    result = run_p2(con, prereg, labels=[], gate_labels=two_raters(sample))
    standing = result.details["label_standing"]
    assert standing["confirmatory"] is True, standing
    assert not any("verdict rests on" in r for r in result.preregistration["exploratory_reasons"])
    assert result.notes[0].startswith("Verdict rests on r's OWN gate labels: r 40 of 60 signals")
    assert standing["kappa"]["value"] == pytest.approx(1.0) and standing["kappa"]["n"] == 40
    assert first_line(result) == result.notes[0]
    assert experiment_summary(result.to_dict()).facts[0][0] == "labels"


def test_one_rater_hand_picked_or_too_few_labels_are_exploratory(con, prereg) -> None:  # type: ignore[no-untyped-def]
    sample = drawn(con, prereg)
    one = two_raters(sample)
    one = GateLabelSet(
        one.own, {}, {}, {}, own_ratings={k: {"ana": v["ana"]} for k, v in one.own_ratings.items()}
    )
    result = run_p2(con, prereg, labels=[], gate_labels=one)
    assert result.exploratory and not result.details["label_standing"]["confirmatory"]
    assert result.notes[0].startswith("EXPLORATORY: verdict rests on 40 gate labels (the team's")
    assert "r: 0 qualifying labels, 40 needed" in result.notes[0]
    # 40 labels by two raters, but of signals the sampler did not draw (hand-picked)
    result0 = run_p2(con, prereg, labels=[], gate_labels=None)
    picked_shas = {s.fixing_sha for s in sample}
    others = [
        SheetSignal(s["repo"], s["fixing_sha"], "fix", "", None, None, None, s["bucket"])
        for s in result0.details["signals"]
        if s["bucket"] is not None and s["fixing_sha"] not in picked_shas
    ]
    picked = two_raters(others[:20] + sample[:20])
    result = run_p2(con, prereg, labels=[], gate_labels=picked)
    repo = result.details["label_standing"]["repos"][0]
    assert repo["labelled"] == 40 and repo["drawn_by_sampler"] == 20
    assert result.exploratory and "20 qualifying labels, 40 needed" in result.notes[0]
    # too few in one bucket
    fewer = [s for s in sample if s.bucket == ONLY_SELF] + [
        s for s in sample if s.bucket == HUMAN_REVIEW
    ][:5]
    result = run_p2(con, prereg, labels=[], gate_labels=two_raters(fewer))
    assert "human-review 5 of 10" in result.notes[0]


def test_borrowed_labels_are_exploratory_and_widen_the_interval(con, prereg) -> None:  # type: ignore[no-untyped-def]
    result = run_p2(con, prereg, labels=[], gate_labels=shipped_set())
    assert result.exploratory
    assert first_line(result).startswith(
        "EXPLORATORY: verdict rests on gate labels BORROWED from flask, sqlite-utils"
    )
    assert "not r's own" in first_line(result)
    gates = result.details["gate_correction"]
    widened = gates["transport_interval"]
    assert widened["method"] == "widest-of-sources"
    share, one = gates["share"], widened["one_matrix"]
    sources = [i for i in widened["by_source"].values() if i is not None]
    assert set(widened["by_source"]) == {"flask", "sqlite-utils"}
    assert share["value"] == one["value"]
    assert share["ci_low"] == min(one["ci_low"], *(i["ci_low"] for i in sources))
    assert share["ci_high"] == max(one["ci_high"], *(i["ci_high"] for i in sources))
    # the sources differ, so the interval holding them is wider than the one-matrix interval
    assert share["ci_high"] - share["ci_low"] > one["ci_high"] - one["ci_low"]
    assert result.metric.interval.ci_low == pytest.approx(share["ci_low"], abs=1e-4)


def test_no_labels_say_so_first(con, prereg) -> None:  # type: ignore[no-untyped-def]
    result = run_p2(con, prereg, labels=[], gate_labels=None)
    assert result.exploratory
    assert result.notes[0].startswith("EXPLORATORY: verdict rests on NO gate labels of r")


def write(path: Path, rows: list[dict[str, str]], rater: bool = False) -> Path:
    columns = [*GATE_COLUMNS, "knowable", *(["rater"] if rater else [])]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow(row)
    return path


def hexsha(n: int) -> str:
    return f"{n:07x}{'a' * 33}"  # distinct 10-character prefixes


def row(n: int, gate: str | None, **extra: str) -> dict[str, str]:
    return {
        "repo": "team",
        "fixing_sha": hexsha(n),
        "is_failure": "no" if gate is None else "yes",
        "introducing_ok": "yes",
        "gate_label": gate or "",
        "rationale": "read the diff",
        **extra,
    }


def test_two_raters_files_disagreements_and_adjudication(tmp_path: Path) -> None:
    write(tmp_path / "ana.csv", [row(1, CI), row(2, ONLY_SELF), row(3, None)])
    write(tmp_path / "ben.csv", [row(1, CI), row(2, CI), row(3, ONLY_SELF)])
    labels = read_gate_label_set(tmp_path, ["ana.csv", "ben.csv"], SecondRater(), [], BUCKETS)
    assert labels.own == {hexsha(1): CI}  # the agreement; 2 and 3 are open
    assert labels.own_open == (hexsha(2), hexsha(3))
    assert labels.own_ratings[hexsha(2)] == {"ana.csv": ONLY_SELF, "ben.csv": CI}
    adj = write(tmp_path / "adjudicated.csv", [row(2, ONLY_SELF, rater=ADJUDICATED)], rater=True)
    settled = read_gate_label_set(
        tmp_path, ["ana.csv", "ben.csv", adj.name], SecondRater(), [], BUCKETS
    )
    assert settled.own[hexsha(2)] == ONLY_SELF and settled.own_open == (hexsha(3),)
    # one file may hold both raters, by its rater column; a rater may not label a sha twice
    both = write(
        tmp_path / "both.csv", [row(4, CI, rater="ana"), row(4, CI, rater="ben")], rater=True
    )
    one_file = read_gate_label_set(tmp_path, [both.name], SecondRater(), [], BUCKETS)
    assert one_file.own_ratings[hexsha(4)] == {"ana": CI, "ben": CI}
    twice = write(tmp_path / "twice.csv", [row(4, CI, rater="ana")] * 2, rater=True)
    with pytest.raises(ValueError, match="labelled twice"):
        read_gate_label_set(tmp_path, [twice.name], SecondRater(), [], BUCKETS)


def test_the_only_self_share_as_labelled_and_restricted_to_knowable(con, prereg) -> None:  # type: ignore[no-untyped-def]
    sample = drawn(con, prereg)
    labels = two_raters(sample)
    only = [sha for sha, g in labels.own.items() if g == ONLY_SELF]
    failures = sum(1 for g in labels.own.values() if g != "not-a-failure")
    answers = {sha: ("yes", "no", "unclear")[i % 3] for i, sha in enumerate(only)}
    knowable = GateLabelSet(
        labels.own, {}, {}, {}, own_ratings=labels.own_ratings, own_knowable=answers
    )
    result = run_p2(con, prereg, labels=[], gate_labels=knowable)
    doc = result.details["knowable"]
    yes = sum(1 for a in answers.values() if a == "yes")
    assert doc["labelled_failures"] == failures and doc["only_self_reflection"] == len(only)
    assert doc["as_labelled"]["value"] == pytest.approx(len(only) / failures, abs=1e-4)
    assert doc["knowable_only"]["value"] == pytest.approx(yes / failures, abs=1e-4)
    assert doc["knowable_only"]["ci_high"] < doc["as_labelled"]["ci_high"]
    note = next(n for n in result.notes if n.startswith("only-self-reflection share of the team"))
    assert "restricted to what the author could have known" in note


def test_check_labels_reports_the_raters_agreement_and_what_to_adjudicate(tmp_path: Path) -> None:
    from agent_reflection.experiments.p2.sheet import check_labels

    a = write(tmp_path / "ana.csv", [row(1, CI), row(2, ONLY_SELF), row(3, None)])
    b = write(tmp_path / "ben.csv", [row(1, CI), row(2, CI), row(3, None)])
    text = check_labels([str(a), str(b)])
    assert "3 signal(s) labelled" in text
    assert f"raters {a} and {b}: 3 signal(s) rated by both, 2 agree on the gate" in text
    assert "1 disagreement(s) to adjudicate" in text and hexsha(2)[:10] in text
    bad = write(tmp_path / "bad.csv", [row(4, CI, knowable="maybe")], rater=False)
    with pytest.raises(ValueError, match="knowable must be one of"):
        check_labels([str(bad)])
