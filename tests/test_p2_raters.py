"""P2's second rater: Cohen's kappa, the label and adjudication files, consensus, bucket
precision, and the comparison on the real labels (label files alone; the bundles for P2's run).
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

import pytest
from sklearn.metrics import cohen_kappa_score

from agent_reflection.experiments.p2.gates import read_bucket_files
from agent_reflection.experiments.p2.precision import (
    InvalidLabels,
    Label,
    SignalView,
    label_files,
    read_labels,
)
from agent_reflection.experiments.p2.raters import (
    GATE_COLUMNS,
    Adjudication,
    GateLabel,
    bucket_precision,
    cohens_kappa,
    compare_raters,
    consensus_labels,
    read_adjudications,
    read_gate_labels,
    read_second_rater,
)
from agent_reflection.experiments.registration import (
    InvalidPreregistration,
    apply_overrides,
    load_preregistration,
)
from agent_reflection.load.git.signals import derive_signals

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA = REPO_ROOT / "tests" / "data"
BUCKETS = ("ci", "human-review", "only-self-reflection")


def sha(n: int) -> str:
    return f"{n:040x}"


def pairs_from(table: dict[tuple[str, str], int]) -> list[tuple[str, str]]:
    return [cell for cell, count in table.items() for _ in range(count)]


# --- Cohen's kappa on small tables -----------------------------------------------------------


def test_kappa_matches_the_textbook_example_and_sklearn() -> None:
    # Fleiss, Levin & Paik, Statistical Methods for Rates and Proportions (2003), 18.1: two
    # raters, three diagnoses, 100 subjects: kappa 0.676 with standard error 0.088
    table = {
        ("psychotic", "psychotic"): 75,
        ("psychotic", "neurotic"): 1,
        ("psychotic", "organic"): 4,
        ("neurotic", "psychotic"): 5,
        ("neurotic", "neurotic"): 4,
        ("neurotic", "organic"): 1,
        ("organic", "organic"): 10,
    }
    pairs = pairs_from(table)
    kappa = cohens_kappa(pairs, 0.95)
    assert kappa is not None
    assert (kappa.n, kappa.observed, round(kappa.expected, 4)) == (100, 0.89, 0.66)
    assert kappa.value == pytest.approx(0.676, abs=5e-4)
    assert kappa.value == pytest.approx(cohen_kappa_score(*zip(*pairs, strict=True)))
    se = (kappa.ci_high - kappa.value) / 1.959964
    assert se == pytest.approx(0.088, abs=5e-4)
    assert kappa.value - kappa.ci_low == pytest.approx(kappa.ci_high - kappa.value)


def test_kappa_perfect_chance_and_undefined() -> None:
    perfect = cohens_kappa(pairs_from({("yes", "yes"): 30, ("no", "no"): 10}))
    assert perfect is not None
    assert (perfect.value, perfect.ci_low, perfect.ci_high) == (1.0, 1.0, 1.0)
    # each rater says yes half the time, independently: agreement is what chance gives
    chance = cohens_kappa(
        pairs_from({("yes", "yes"): 25, ("yes", "no"): 25, ("no", "yes"): 25, ("no", "no"): 25})
    )
    assert chance is not None
    assert chance.value == pytest.approx(0.0)
    assert chance.ci_low < 0 < chance.ci_high
    # systematic disagreement is below chance
    opposite = cohens_kappa(pairs_from({("yes", "no"): 20, ("no", "yes"): 20}))
    assert opposite is not None and opposite.value == pytest.approx(-1.0)
    assert cohens_kappa([]) is None
    # both raters always say yes: chance agreement is 1, kappa undefined
    assert cohens_kappa(pairs_from({("yes", "yes"): 5})) is None


def test_kappa_interval_narrows_with_more_items() -> None:
    small = cohens_kappa(pairs_from({("y", "y"): 9, ("y", "n"): 1, ("n", "y"): 1, ("n", "n"): 9}))
    large = cohens_kappa(
        pairs_from({("y", "y"): 90, ("y", "n"): 10, ("n", "y"): 10, ("n", "n"): 90})
    )
    assert small is not None and large is not None
    assert small.value == pytest.approx(large.value)
    assert large.ci_high - large.ci_low < small.ci_high - small.ci_low


# --- the files -------------------------------------------------------------------------------


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (["r", sha(1), "yes", "yes", "", "x"], "line 2: gate_label is empty for a failure"),
        (["r", sha(1), "no", "yes", "ci", "x"], "gate_label must be empty when is_failure = no"),
        (["r", sha(1), "yes", "yes", "review", "x"], "gate_label must be one of"),
        (["r", sha(1), "maybe", "yes", "ci", "x"], "is_failure must be yes or no"),
        (["r", sha(1), "yes", "sort of", "ci", "x"], "introducing_ok must be one of"),
        (["r", "abc", "yes", "yes", "ci", "x"], "fixing_sha must be 40 hex digits"),
        (["", sha(1), "yes", "yes", "ci", "x"], "repo is empty"),
    ],
)
def test_a_bad_gate_label_names_file_line_and_field(
    tmp_path: Path, row: list[str], message: str
) -> None:
    path = write_csv(tmp_path / "r.csv", list(GATE_COLUMNS), [row])
    with pytest.raises(InvalidLabels, match=message) as info:
        read_gate_labels([path])
    assert str(path) in str(info.value)


def test_a_gate_file_without_a_column_is_refused(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "r.csv", ["repo", "fixing_sha", "is_failure"], [])
    with pytest.raises(InvalidLabels, match="missing column"):
        read_gate_labels([path])


def adjudication_file(tmp_path: Path, rows: list[list[str]]) -> Path:
    header = [
        "fixing_sha",
        "first_is_failure",
        "second_is_failure",
        "consensus_is_failure",
        "consensus_gate",
        "adjudication",
    ]
    return write_csv(tmp_path / "adj.csv", header, rows)


def test_bad_adjudications_are_refused(tmp_path: Path) -> None:
    for row, message in [
        ([sha(1), "yes", "yes", "yes", "", "why"], "nothing to adjudicate"),
        ([sha(1), "yes", "no", "yes", "", ""], "adjudication .the reason. is empty"),
        ([sha(1), "yes", "no", "no", "ci", "why"], "consensus_gate given for a consensus non"),
    ]:
        path = adjudication_file(tmp_path, [row])
        with pytest.raises(InvalidLabels, match=message):
            read_adjudications([path])


def first_label(n: int, is_failure: bool) -> Label:
    return Label("r", sha(n), "fix", is_failure, "", (), f"first on {n}")


def second_label(n: int, is_failure: bool, gate: str | None = None) -> GateLabel:
    return GateLabel("r", sha(n), is_failure, "yes", gate, f"second on {n}")


def test_consensus_takes_agreement_then_adjudication_and_lists_the_rest() -> None:
    first = {sha(n): first_label(n, f) for n, f in [(1, True), (2, False), (3, True), (4, True)]}
    second = {
        sha(1): second_label(1, True, "ci"),
        sha(2): second_label(2, False),
        sha(3): second_label(3, False),
        sha(4): second_label(4, False),
        sha(5): second_label(5, True, "ci"),  # the first rater did not label it
    }
    adj = {sha(3): Adjudication(sha(3), True, False, True, "human-review", "third reading")}
    consensus, open_ = consensus_labels(first, second, adj)
    assert consensus == {sha(1): True, sha(2): False, sha(3): True}
    assert open_ == [sha(4)]
    # a label edited after its adjudication makes the adjudication stale: an error
    stale = {sha(3): Adjudication(sha(3), False, True, True, None, "old")}
    with pytest.raises(InvalidLabels, match="re-adjudicate"):
        consensus_labels(first, second, stale)


def test_bucket_precision_counts_failures_whose_gate_is_the_bucket() -> None:
    signals = [
        SignalView("r", sha(n), "fix-after-feature", bucket, None)
        for n, bucket in [(1, "ci"), (2, "ci"), (3, "ci"), (4, "only-self-reflection"), (5, "ci")]
    ]
    consensus = {sha(1): True, sha(2): True, sha(3): False, sha(4): True}  # 5 not judged
    gates: dict[str, str | None] = {
        sha(1): "ci",
        sha(2): "human-review",
        sha(3): None,
        sha(4): "only-self-reflection",
    }
    rows = {r.bucket: r for r in bucket_precision(signals, consensus, gates, BUCKETS, 0.95)}
    ci = rows["ci"]
    assert (ci.judged, ci.failures, ci.gate_agrees) == (3, 2, 1)
    assert ci.precision is not None and ci.precision.value == pytest.approx(1 / 3)
    assert ci.gate_agreement is not None and ci.gate_agreement.value == pytest.approx(0.5)
    assert dict(ci.gates) == {"ci": 1, "human-review": 1, "not a failure": 1}
    assert rows["human-review"].precision is None
    assert rows["only-self-reflection"].gate_agrees == 1


def test_compare_raters_on_a_small_table() -> None:
    counted = [
        SignalView("r", sha(n), "fix-after-feature", "only-self-reflection", None)
        for n in range(1, 11)
    ]
    first = [first_label(n, n <= 8) for n in range(1, 11)]
    second = [
        second_label(n, n <= 7 or n == 9, "only-self-reflection" if n <= 4 else "ci")
        if (n <= 7 or n == 9)
        else second_label(n, False)
        for n in range(1, 11)
    ]
    adj = [
        Adjudication(sha(8), True, False, True, "human-review", "a third reading"),
        Adjudication(sha(9), False, True, False, None, "a third reading"),
    ]
    doc = compare_raters(
        counted,
        first,
        second,
        adj,
        holdout=[sha(1), sha(2)],
        raw_counts={"ci": 0, "human-review": 0, "only-self-reflection": 10},
        min_labelled=5,
        confidence_level=0.95,
        sources={},
    )
    assert doc["compared"] == 10
    assert (doc["agreement"]["k"], doc["agreement"]["n"]) == (8, 10)
    assert doc["table"] == {
        "first yes, second yes": 7,
        "first yes, second no": 1,
        "first no, second yes": 1,
        "first no, second no": 1,
    }
    assert [d["fixing_sha"] for d in doc["disagreements"]] == [sha(8), sha(9)]
    assert doc["disagreements"][0]["first_rationale"] == "first on 8"
    by_rater = {r["group"]: r for r in doc["precision"]["counted"]}
    assert (by_rater["first"]["failures"], by_rater["second"]["failures"]) == (8, 8)
    assert by_rater["consensus"]["failures"] == 8  # 1-7 agreed, 8 adjudicated yes, 9 no
    held = {r["group"]: r for r in doc["precision"]["held-out"]}
    assert held["consensus"]["labelled"] == 2
    # gates of the 8 consensus failures: 1-4 only-self-reflection, 5-7 ci, 8 human-review
    assert doc["gates"] == {"ci": 3, "human-review": 1, "only-self-reflection": 4}
    osr = doc["buckets"][2]
    assert (osr["judged"], osr["failures"], osr["gate_agrees"]) == (10, 8, 4)
    assert doc["only_self_reflection_share_by_gate"]["value"] == 0.5
    assert doc["only_self_reflection_share_without_review"]["k"] == 5
    # every counted signal is in one bucket: the consensus-corrected share is 1
    assert doc["consensus_corrected_share"]["value"] == 1.0


# --- the real label files (no ../shared needed) ----------------------------------------------


def real_rater_files() -> tuple[list[Label], list[GateLabel], list[Adjudication], set[str]]:
    prereg = load_preregistration(REPO_ROOT / "preregistration.toml")
    p = prereg.p2
    first = list(read_labels(label_files(REPO_ROOT, p.labels_paths)))
    rater = read_second_rater(REPO_ROOT, p.second_rater_labels_paths, p.adjudication_paths)
    held = {lab.fixing_sha for lab in read_labels(label_files(REPO_ROOT, p.holdout_labels_paths))}
    assert rater.sources["second"] == [
        "tests/data/p2_second_rater/flask.csv",
        "tests/data/p2_second_rater/sqlite-utils.csv",
    ]
    assert rater.sources["adjudication"] == [
        "tests/data/p2_second_rater/adjudication/consensus.csv"
    ]
    return first, list(rater.labels), list(rater.adjudications), held


def test_the_second_rater_files_label_the_92_counted_signals() -> None:
    first, second, _, held = real_rater_files()
    assert len(second) == 92 == len({g.fixing_sha for g in second})
    assert {g.repo for g in second} == {"flask", "sqlite-utils"}
    # the second rater's files also read as plain labels (the columns precision needs)
    plain = read_labels(sorted((DATA / "p2_second_rater").glob("*.csv")))
    assert [lab.is_failure for lab in plain] == [g.is_failure for g in second]
    assert all(g.rationale for g in second)
    # every signal the second rater judged is labelled by the first rater too
    first_shas = {lab.fixing_sha for lab in first}
    assert {g.fixing_sha for g in second} <= first_shas
    assert held <= {g.fixing_sha for g in second} and len(held) == 35
    # the README's table, counted from the files
    for repo, signals, failures in (("flask", 63, 45), ("sqlite-utils", 29, 25)):
        rows = [g for g in second if g.repo == repo]
        assert (len(rows), sum(g.is_failure for g in rows)) == (signals, failures)
    gates = [g.gate for g in second if g.is_failure]
    assert (gates.count("ci"), gates.count("human-review")) == (32, 20)
    assert gates.count("only-self-reflection") == 18


def test_agreement_kappa_and_consensus_on_the_real_labels() -> None:
    first, second, adjudications, held = real_rater_files()
    first_map = {lab.fixing_sha: lab for lab in first}
    pairs = [(first_map[g.fixing_sha].is_failure, g.is_failure) for g in second]
    assert sum(a == b for a, b in pairs) == 87
    kappa = cohens_kappa(pairs)
    assert kappa is not None and 0.80 < kappa.value < 0.88 and kappa.ci_low > 0.6
    # every disagreement has its third reading, and nothing else is adjudicated
    consensus, open_ = consensus_labels(
        first_map, {g.fixing_sha: g for g in second}, {a.fixing_sha: a for a in adjudications}
    )
    assert open_ == [] and len(consensus) == 92
    disagreements = {
        g.fixing_sha for g in second if first_map[g.fixing_sha].is_failure != g.is_failure
    }
    assert {a.fixing_sha for a in adjudications} == disagreements
    assert sum(consensus.values()) == 70
    assert sum(consensus[s] for s in held) == 28


def test_the_second_rater_keys_are_checked() -> None:
    prereg = load_preregistration(REPO_ROOT / "preregistration.toml")
    with pytest.raises(InvalidPreregistration, match="must not be in labels_paths"):
        apply_overrides(prereg, {"p2.second_rater_labels_paths": ["tests/data/p2_holdout"]})
    with pytest.raises(InvalidPreregistration, match="adjudication_paths needs"):
        apply_overrides(
            prereg, {"p2.second_rater_labels_paths": [], "p2.adjudication_paths": ["x"]}
        )
    with pytest.raises(InvalidPreregistration, match="non-empty paths relative"):
        apply_overrides(prereg, {"p2.adjudication_paths": ["/abs/consensus.csv"]})


# --- P2 on the real histories ----------------------------------------------------------------


#: P2's precision-corrected share on flask + sqlite-utils (measured, issue 32 rules)
PRECISION_CORRECTED = 0.6452


@pytest.mark.slow(reason="flask and sqlite-utils loaded with SZZ (once a process), then P2")
@pytest.mark.shared
def test_p2_reports_both_raters_on_flask_and_sqlite_utils(
    szz_database: Callable[[tuple[str, ...], Path], Path], tmp_path: Path
) -> None:
    from agent_reflection.experiments.p2.analysis import run_p2
    from agent_reflection.store.db import connect

    con = connect(szz_database(("flask", "sqlite-utils"), tmp_path))
    result = run_p2(con, load_preregistration(REPO_ROOT / "preregistration.toml"))
    counted = {s["fixing_sha"]: s for s in result.details["signals"] if s["bucket"] is not None}
    raters = result.details["precision"]["raters"]
    # the second rater labelled all 92 signals P2 counted when the labels were written. Since then
    # three are cosmetic (the 2026-11-28 amendment: typo words on a text-only diff, "ty" as a
    # lint word) and seven are not fix-like under the verb reading of the fix words (2026-11-29:
    # "Small fixes in ...", "Doc updates and typo fixes", "... bug fix, closes #284");
    # one signal is new: 37217e85 "Fix issue with wrapper logic", whose introducing commit
    # ("Add wrapper for testing fixing functionality") is a feature once it is no longer a fix
    _, second, _, _ = real_rater_files()
    cosmetic = {
        s["fixing_sha"][:8]: s["category_rule"]
        for s in result.details["signals"]
        if s["fixing_sha"] in {g.fixing_sha for g in second} and s["bucket"] is None
    }
    assert cosmetic == {
        "092e1368": "cosmetic-typo-text",
        "15758d02": "cosmetic-typo-text",
        "8dfbfa80": "cosmetic-lint",
    }
    messages = dict(
        (
            (sha, (subject, body))
            for sha, subject, body in con.execute(
                "SELECT sha, subject, body FROM commits"
            ).fetchall()
        )
    )
    verb = {g.fixing_sha: derive_signals(*messages[g.fixing_sha], "verb") for g in second}
    not_verb = {sha for sha, got in verb.items() if not (got.is_revert or got.is_fix_like)}
    assert len(not_verb) == 7
    new = "37217e85b80c389208cd3396c2cdc4b89bd46bcf"
    # and since issue 32 the fixes of fixes count, unrated: each is one
    rated = {g.fixing_sha for g in second}
    fix_of_fix = {sha for sha, s in counted.items() if sha not in rated and sha != new}
    assert fix_of_fix and all(
        counted[sha]["category_rule"] == "szz-fix-of-fix-in-window" for sha in fix_of_fix
    )
    assert set(counted) - fix_of_fix == {
        g.fixing_sha for g in second if g.fixing_sha[:8] not in cosmetic
    } - not_verb | {new}
    assert raters["compared"] == 82 and raters["unadjudicated"] == []
    assert raters["agreement"]["k"] == 78
    share = raters["only_self_reflection_share_by_gate"]
    assert (share["k"], share["n"]) == (17, 67)
    assert raters["only_self_reflection_share_without_review"]["k"] == 36
    consensus = {r["group"]: r for r in raters["precision"]["counted"]}["consensus"]
    assert (consensus["failures"], consensus["labelled"]) == (67, 82)
    held = {r["group"]: r for r in raters["precision"]["held-out"]}["consensus"]
    assert (held["failures"], held["labelled"]) == (27, 30)
    buckets = {b["bucket"]: b for b in raters["buckets"]}
    assert {b: buckets[b]["judged"] for b in BUCKETS} == {
        "ci": 27,
        "human-review": 2,
        "only-self-reflection": 53,
    }
    # bucket precision, recomputed here from the files and P2's buckets
    gates = {g.fixing_sha: g.gate for g in second}
    gates["4cb311b9455375f6497e7ecb6c931e09b1917d60"] = "only-self-reflection"  # adjudicated
    for bucket in BUCKETS:
        agree = sum(
            1
            for sha, s in counted.items()
            if s["bucket"] == bucket
            and gates.get(sha) == bucket
            and sha != "1577e1386e737eca69dbb6cfe6b8bf979f7b2944"
        )
        assert buckets[bucket]["gate_agrees"] == agree
    assert any(n.startswith("second rater on 82 counted signals") for n in result.notes)
    # the strata behind the pooled share: each repository alone, corrected by the same labels,
    # gives the pooled verdict (no pooling artefact)
    alone = {r["repo"]: r for r in result.details["by_repo"]}
    assert {r: (alone[r]["signals"], alone[r]["verdict_alone"]) for r in alone} == {
        "flask": (67, "continue"),  # 58 and 25 before issue 32 counted fixes of fixes
        "sqlite-utils": (29, "continue"),
    }
    assert alone["flask"]["ci_low"] > 0 and alone["sqlite-utils"]["ci_low"] > 0
    assert any(
        n.startswith("per repository") and n.endswith("gives the pooled verdict (continue)")
        for n in result.notes
    )
    # the verdict statistic: gate-corrected by the 82 labelled signals (double sampling: the
    # unlabelled ones, the new one and since issue 32 the fixes of fixes, count as their
    # bucket's labelled signals say, as a share)
    gates = result.details["gate_correction"]
    assert (gates["labels"], gates["judged_labelled"], gates["transport"]) == ("shipped", 82, False)
    assert counted[new]["bucket"] == "only-self-reflection"
    matrix = {r["bucket"]: r for r in gates["matrix"]}
    assert (
        matrix["only-self-reflection"]["signals"],
        matrix["only-self-reflection"]["labelled"],
    ) == (63, 53)
    assert all(r["row"] != "pooled" for r in matrix.values())

    def p_of(bucket: str, gate: str) -> float:
        r = matrix[bucket]
        return r["gates"].get(gate, 0) / r["labelled"]

    only = sum(r["signals"] * p_of(b, "only-self-reflection") for b, r in matrix.items())
    failures = sum(r["signals"] * (1 - p_of(b, "not-a-failure")) for b, r in matrix.items())
    assert gates["corrected_failures"] == pytest.approx(failures, abs=1e-3)
    assert gates["corrected"]["only-self-reflection"] == pytest.approx(only, abs=1e-3)
    assert result.metric.interval.value == pytest.approx(only / failures, abs=1e-3)
    assert result.metric.interval.ci_low < only / failures < result.metric.interval.ci_high
    shares = result.details["shares"]
    assert shares["verdict_statistic"] == "gate-corrected"
    # the superseded statistics stay beside it: precision-corrected, raw 63/96 (0.64 and 54/83
    # before issue 32)
    assert shares["precision-corrected"]["value"] == pytest.approx(PRECISION_CORRECTED, abs=0.005)
    assert shares["raw"]["value"] == pytest.approx(63 / 96, abs=1e-4)
    assert result.n == 96
    assert result.verdict == "continue"
    # the shipped bucket file (the transported matrix) is P2's buckets of these signals today
    p = load_preregistration(REPO_ROOT / "preregistration.toml").p2
    shipped = read_bucket_files(label_files(REPO_ROOT, p.gate_label_buckets_paths), BUCKETS)
    # (but the new signals, which neither rater has judged)
    assert shipped == {
        sha: (s["repo"], s["bucket"])
        for sha, s in counted.items()
        if sha != new and sha not in fix_of_fix
    }


def test_compare_raters_when_the_second_rater_labels_none_of_the_signals() -> None:
    counted = [SignalView("r", sha(n), "revert", "ci", None) for n in range(3)]
    doc = compare_raters(
        counted,
        [first_label(n, True) for n in range(3)],
        [second_label(99, True, "ci")],
        [],
        holdout=[],
        raw_counts={"ci": 3, "human-review": 0, "only-self-reflection": 0},
        min_labelled=1,
        confidence_level=0.95,
        sources={},
    )
    assert doc["compared"] == 0 and doc["kappa"] is None
    assert doc["agreement"]["value"] is None and doc["disagreements"] == []
    assert doc["only_self_reflection_share_by_gate"]["n"] == 0
    assert doc["consensus_corrected_share"] is None
    assert all(b["judged"] == 0 and b["precision"] is None for b in doc["buckets"])
