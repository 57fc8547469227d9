"""P2's gate-corrected share (double sampling): the estimator on hand-computed tables, pooling,
the bootstrap's determinism and coverage, the choice of labels (own, shipped, transported),
the files, the pre-registration keys, and P2's verdict on it."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from agent_reflection.experiments.p2.analysis import run_p2
from agent_reflection.experiments.p2.buckets import BUCKETS
from agent_reflection.experiments.p2.gates import (
    ALL_LABELLED,
    GATE_CLASSES,
    NOT_A_FAILURE,
    ONLY_SELF,
    OWN_ROW,
    POOLED,
    CountedSignal,
    GateLabelSet,
    GateObservation,
    choose_labels,
    gate_correction,
    gate_of,
    matrix_rows,
    read_bucket_files,
    read_gate_label_set,
    shipped_gates,
)
from agent_reflection.experiments.p2.precision import InvalidLabels, label_files, read_labels
from agent_reflection.experiments.p2.raters import Adjudication, GateLabel, read_second_rater
from agent_reflection.experiments.registration import (
    InvalidPreregistration,
    apply_overrides,
    load_preregistration,
)
from agent_reflection.store.db import connect
from test_p2 import many_fixes, szz_fix

REPO_ROOT = Path(__file__).resolve().parents[1]
CI, REVIEW = "ci", "human-review"


def sha(n: int) -> str:
    return f"{n:040x}"


def observations(bucket: str, gates: dict[str, int], start: int = 0) -> list[GateObservation]:
    out = []
    for gate, count in gates.items():
        for _ in range(count):
            out.append(GateObservation("r", sha(start + len(out)), bucket, gate))
    return out


def correct(counts, labelled, *, min_labelled=1, counted=True, seed=1, resamples=2000):  # type: ignore[no-untyped-def]
    return gate_correction(
        counts,
        labelled,
        min_labelled=min_labelled,
        labelled_are_counted=counted,
        resamples=resamples,
        seed=seed,
        confidence_level=0.95,
    )


# --- the estimator ---------------------------------------------------------------------------


def test_every_signal_labelled_gives_the_plain_share_of_the_labels() -> None:
    labelled = [
        *observations(CI, {CI: 16, REVIEW: 5, NOT_A_FAILURE: 9}),
        *observations(REVIEW, {CI: 1, ONLY_SELF: 1, NOT_A_FAILURE: 2}, start=100),
        *observations(ONLY_SELF, {CI: 14, REVIEW: 15, ONLY_SELF: 18, NOT_A_FAILURE: 11}, 200),
    ]
    # min_labelled 10 does not pool human-review's 4: all of its signals are labelled
    c = correct({CI: 30, REVIEW: 4, ONLY_SELF: 58}, labelled, min_labelled=10)
    assert c is not None and c.share is not None and c.share_without_review is not None
    assert {r.bucket: r.used for r in c.rows} == dict.fromkeys(BUCKETS, ALL_LABELLED)
    assert c.corrected == pytest.approx(
        {CI: 31, REVIEW: 20, ONLY_SELF: 19, "unclear": 0, NOT_A_FAILURE: 22}
    )
    assert c.failures == pytest.approx(70)
    assert c.share.value == pytest.approx(19 / 70)
    assert c.share_without_review.value == pytest.approx(39 / 70)
    assert c.share.ci_low < 19 / 70 < c.share.ci_high


def test_unlabelled_signals_take_their_buckets_gate_distribution() -> None:
    # bucket ci: 20 signals, 10 labelled (5 ci, 5 only-self); bucket only-self: 10 signals,
    # all labelled (2 only-self, 6 ci, 2 no failure)
    labelled = [
        *observations(CI, {CI: 5, ONLY_SELF: 5}),
        *observations(ONLY_SELF, {ONLY_SELF: 2, CI: 6, NOT_A_FAILURE: 2}, start=100),
    ]
    c = correct({CI: 20, REVIEW: 0, ONLY_SELF: 10}, labelled, min_labelled=10)
    assert c is not None and c.share is not None
    # only-self: 20 * 5/10 + 10 * 2/10 = 12; failures: 20 * 10/10 + 10 * 8/10 = 28
    assert c.corrected[ONLY_SELF] == pytest.approx(12)
    assert c.corrected[CI] == pytest.approx(16)
    assert c.failures == pytest.approx(28)
    assert c.share.value == pytest.approx(12 / 28)
    rows = {r.bucket: r for r in c.rows}
    assert (rows[CI].used, rows[ONLY_SELF].used) == (OWN_ROW, ALL_LABELLED)
    assert rows[CI].probabilities[ONLY_SELF] == pytest.approx(0.5)
    # the plain share of the 20 labels would be 7/18: the correction weights by bucket size
    assert c.share.value != pytest.approx(7 / 18)


def test_a_thin_bucket_with_unlabelled_signals_takes_the_pooled_row() -> None:
    labelled = [
        *observations(CI, {CI: 10}),
        *observations(ONLY_SELF, {ONLY_SELF: 8, NOT_A_FAILURE: 2}, start=100),
        *observations(REVIEW, {ONLY_SELF: 2}, start=200),  # 2 of 6 labelled
    ]
    counts = {CI: 10, REVIEW: 6, ONLY_SELF: 10}
    rows = matrix_rows(counts, labelled, min_labelled=5, labelled_are_counted=True)
    assert rows is not None
    review = {r.bucket: r for r in rows}[REVIEW]
    assert review.used == POOLED and review.labelled == 2
    assert review.gates[ONLY_SELF] == 2
    # pooled over the 22 labelled: 10 ci, 10 only-self, 2 no failure
    assert review.probabilities[ONLY_SELF] == pytest.approx(10 / 22)
    assert review.probabilities[CI] == pytest.approx(10 / 22)
    # with a lower bar it keeps its own row
    own = matrix_rows(counts, labelled, min_labelled=2, labelled_are_counted=True)
    assert own is not None and {r.bucket: r for r in own}[REVIEW].used == OWN_ROW
    # transported labels are never "all labelled": a thin row is pooled even if it has n
    ext = matrix_rows(
        {CI: 10, REVIEW: 2, ONLY_SELF: 10}, labelled, min_labelled=5, labelled_are_counted=False
    )
    assert ext is not None and {r.bucket: r for r in ext}[REVIEW].used == POOLED


def test_nothing_labelled_gives_no_correction_and_no_failures_no_share() -> None:
    assert correct({CI: 3, REVIEW: 0, ONLY_SELF: 2}, []) is None
    c = correct({CI: 3, REVIEW: 0, ONLY_SELF: 0}, observations(CI, {NOT_A_FAILURE: 3}))
    assert c is not None and c.failures == 0 and c.share is None


def test_the_bootstrap_is_deterministic_under_its_seed() -> None:
    labelled = [
        *observations(CI, {CI: 6, ONLY_SELF: 4}),
        *observations(ONLY_SELF, {ONLY_SELF: 5, CI: 3, NOT_A_FAILURE: 2}, start=100),
    ]
    counts = {CI: 25, REVIEW: 0, ONLY_SELF: 30}
    a, b, other = (correct(counts, labelled, seed=s) for s in (7, 7, 8))
    assert a is not None and b is not None and other is not None
    assert a.share == b.share and a.resamples_used == 2000
    assert other.share is not None and a.share is not None
    assert other.share.value == a.share.value and other.share.ci_low != a.share.ci_low
    # more labelled signals at the same proportions narrow the interval
    wide = correct(counts, labelled, counted=False)
    narrow = correct(
        counts,
        [
            *observations(CI, {CI: 60, ONLY_SELF: 40}),
            *observations(ONLY_SELF, {ONLY_SELF: 50, CI: 30, NOT_A_FAILURE: 20}, start=1000),
        ],
        counted=False,
    )
    assert wide is not None and narrow is not None
    assert wide.share is not None and narrow.share is not None
    assert narrow.share.value == pytest.approx(wide.share.value)
    assert narrow.share.ci_high - narrow.share.ci_low < wide.share.ci_high - wide.share.ci_low


def test_a_gate_outside_the_classes_is_refused() -> None:
    with pytest.raises(ValueError, match="gate 'lint'"):
        correct({CI: 1, REVIEW: 0, ONLY_SELF: 0}, [GateObservation("r", sha(1), CI, "lint")])


# --- coverage by simulation ------------------------------------------------------------------

#: P(gate | bucket) shaped like the real labels' (rows ci, human-review, only-self)
TRUE_MATRIX = np.array(
    [[16, 5, 0, 0, 9], [1, 0, 1, 0, 2], [14, 15, 18, 0, 11]], dtype=float
) / np.array([[30], [4], [58]])


def true_share(pi: np.ndarray) -> float:
    c = pi @ TRUE_MATRIX
    return float(c[GATE_CLASSES.index(ONLY_SELF)] / c[: GATE_CLASSES.index(NOT_A_FAILURE)].sum())


def draw(rng: np.random.Generator, pi: np.ndarray, n: int) -> list[tuple[str, str]]:
    buckets = rng.choice(len(BUCKETS), size=n, p=pi)
    return [
        (BUCKETS[b], GATE_CLASSES[rng.choice(len(GATE_CLASSES), p=TRUE_MATRIX[b])]) for b in buckets
    ]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("design", "pi", "n", "fraction"),
    [
        ("every signal labelled", (0.33, 0.05, 0.62), 92, 1.0),
        ("half labelled", (0.35, 0.15, 0.50), 150, 0.5),
        ("transported from 92 labelled", (0.33, 0.05, 0.62), 150, 0.0),
    ],
)
def test_the_interval_covers_the_true_share_about_95_percent_of_the_time(
    design: str, pi: tuple[float, float, float], n: int, fraction: float
) -> None:
    rng = np.random.default_rng(20261123)
    weights = np.array(pi)
    truth = true_share(weights)
    reps, hits = 400, 0
    for rep in range(reps):
        signals = draw(rng, weights, n)
        counts = {b: sum(1 for s in signals if s[0] == b) for b in BUCKETS}
        if fraction > 0:
            labelled = [
                GateObservation("r", sha(i), b, g)
                for i, (b, g) in enumerate(signals)
                if rng.random() < fraction
            ]
        else:  # another repository's labelled signals from the same population
            other = draw(rng, weights, 92)
            labelled = [GateObservation("x", sha(i), b, g) for i, (b, g) in enumerate(other)]
        c = correct(
            counts, labelled, min_labelled=10, counted=fraction > 0, seed=rep, resamples=500
        )
        assert c is not None and c.share is not None
        hits += c.share.ci_low <= truth <= c.share.ci_high
    # 400 replications: the coverage's own standard error is about 0.011
    assert 0.90 <= hits / reps <= 0.99, (design, hits / reps)


# --- which labels ----------------------------------------------------------------------------


def label_set(own=None, shipped=None, buckets=None) -> GateLabelSet:  # type: ignore[no-untyped-def]
    return GateLabelSet(own or {}, shipped or {}, buckets or {}, {})


def test_gate_of_and_the_adjudicated_shipped_gates() -> None:
    assert gate_of(False, None) == NOT_A_FAILURE
    assert gate_of(True, None) == "unclear"
    assert gate_of(True, CI) == CI
    second = [
        GateLabel("r", sha(1), True, "yes", ONLY_SELF, "x"),
        GateLabel("r", sha(2), False, "yes", None, "x"),  # adjudicated a failure, gate given
        GateLabel("r", sha(3), True, "yes", CI, "x"),  # adjudicated no failure
        GateLabel("r", sha(4), False, "yes", None, "x"),  # adjudicated a failure, no gate
    ]
    adjudications = [
        Adjudication(sha(2), True, False, True, REVIEW, "read it"),
        Adjudication(sha(3), False, True, False, None, "read it"),
        Adjudication(sha(4), True, False, True, None, "read it"),
    ]
    assert shipped_gates(second, adjudications) == {
        sha(1): ONLY_SELF,
        sha(2): REVIEW,
        sha(3): NOT_A_FAILURE,
        sha(4): "unclear",
    }


def counted(n: int, bucket: str = ONLY_SELF, repo: str = "team") -> list[CountedSignal]:
    return [CountedSignal(repo, sha(i), bucket) for i in range(n)]


def test_own_labels_of_the_judged_signals_win_over_shipped_ones() -> None:
    signals = counted(12)
    own = {sha(i): CI for i in range(6)}
    shipped = {sha(i): ONLY_SELF for i in range(12)}
    choice = choose_labels(signals, label_set(own, shipped), 10)
    assert choice is not None and choice.labels == "own+shipped"
    assert choice.labelled_are_counted and choice.judged_labelled == 12
    assert [o.gate for o in choice.observations] == [CI] * 6 + [ONLY_SELF] * 6
    only_own = choose_labels(signals, label_set({sha(i): CI for i in range(14)}), 10)
    assert only_own is not None and only_own.labels == "own"
    assert "nothing is estimated" in only_own.note
    # labels of commits that are not counted signals are ignored, and the note counts them
    assert "2 of the team's gate labels name no counted signal" in only_own.note


def test_unlabelled_judged_signals_get_the_transported_matrix_and_its_assumption() -> None:
    shipped = {sha(100 + i): ONLY_SELF if i % 2 else CI for i in range(20)}
    buckets = {s: ("flask", ONLY_SELF) for s in shipped}
    choice = choose_labels(counted(30), label_set(shipped=shipped, buckets=buckets), 10)
    assert choice is not None and choice.labels == "transported"
    assert not choice.labelled_are_counted and choice.judged_labelled == 0
    assert len(choice.observations) == 20 and {o.repo for o in choice.observations} == {"flask"}
    assert "TRANSPORTED from the shipped labels of flask" in choice.note
    assert "assumes that P2's buckets mean the same on team" in choice.note
    # a few own labels (fewer than the bar) do not replace it, and the note says so
    few = choose_labels(counted(30), label_set({sha(0): CI}, shipped, buckets), 10)
    assert few is not None and few.labels == "transported"
    assert few.note.startswith("only 1 counted signal(s) carry a gate label")
    # no label anywhere: no correction
    assert choose_labels(counted(30), label_set(), 10) is None


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (["r", "abc", CI], "line 2: fixing_sha must be 40 hex digits"),
        (["r", sha(1), "lint"], "line 2: bucket must be one of"),
    ],
)
def test_a_bad_bucket_row_names_file_line_and_field(
    tmp_path: Path, row: list[str], message: str
) -> None:
    path = write_csv(tmp_path / "b.csv", ["repo", "fixing_sha", "bucket"], [row])
    with pytest.raises(InvalidLabels, match=message) as err:
        read_bucket_files([path], BUCKETS)
    assert str(path) in str(err.value)
    with pytest.raises(InvalidLabels, match="missing column"):
        read_bucket_files([write_csv(tmp_path / "c.csv", ["repo", "sha"], [])], BUCKETS)


# --- the shipped files (no ../shared needed) -------------------------------------------------


def shipped_set() -> GateLabelSet:
    p = load_preregistration(REPO_ROOT / "preregistration.toml").p2
    rater = read_second_rater(REPO_ROOT, p.second_rater_labels_paths, p.adjudication_paths)
    return read_gate_label_set(
        REPO_ROOT, p.gate_labels_paths, rater, p.gate_label_buckets_paths, BUCKETS
    )


def test_the_shipped_gate_labels_and_their_buckets() -> None:
    labels = shipped_set()
    assert labels.own == {} and len(labels.shipped) == 92
    # every labelled signal P2 still counts has its bucket; the four that the 2026-11-28
    # cosmetic amendment and the six that the 2026-11-29 fix-wording amendment took out of the
    # count have none (the folder's README names them)
    assert set(labels.shipped_buckets) < set(labels.shipped)
    assert {sha[:8] for sha in set(labels.shipped) - set(labels.shipped_buckets)} == {
        "092e1368",
        "15758d02",
        "2f5a4f8d",
        "8dfbfa80",
        "51a89bf3",
        "8bd8b014",
        "4a9e34a5",
        "4cb311b9",
        "8fa3ed13",
        "0e797033",
    }
    assert labels.sources["shipped_buckets"] == [
        "tests/data/p2_second_rater/p2_buckets/buckets.csv"
    ]
    gates = list(labels.shipped.values())
    # the consensus: 70 failures, 19 of them only-self-reflection (README of the folder)
    assert sum(g != NOT_A_FAILURE for g in gates) == 70 and gates.count(ONLY_SELF) == 19
    buckets = [b for _, b in labels.shipped_buckets.values()]
    assert (buckets.count(CI), buckets.count(REVIEW), buckets.count(ONLY_SELF)) == (27, 2, 53)


def test_the_transported_matrix_on_the_shipped_files() -> None:
    labels = shipped_set()
    choice = choose_labels(counted(40), labels, 10)
    assert choice is not None and choice.labels == "transported"
    p = load_preregistration(REPO_ROOT / "preregistration.toml").p2
    counts = {CI: 10, REVIEW: 10, ONLY_SELF: 20}
    c = correct(counts, choice.observations, min_labelled=10, counted=False)
    assert c is not None and c.share is not None
    rows = {r.bucket: r for r in c.rows}
    # human-review has 2 labelled signals (< 10): the pooled row of all 82 with a bucket
    assert rows[REVIEW].used == POOLED and rows[REVIEW].probabilities[ONLY_SELF] == pytest.approx(
        17 / 82
    )
    # ci 0/27 and only-self 17/53 only-self; failures 21/27, 45/53 and 67/82
    only = 10 * 0 + 10 * 17 / 82 + 20 * 17 / 53
    failures = 10 * 21 / 27 + 10 * 67 / 82 + 20 * 45 / 53
    assert c.share.value == pytest.approx(only / failures)
    assert p.gate_min_labelled == 10


# --- the pre-registration --------------------------------------------------------------------


def test_the_gate_keys_are_registered_and_checked() -> None:
    prereg = load_preregistration(REPO_ROOT / "preregistration.toml")
    p = prereg.p2
    assert p.share_statistic == "gate-corrected"
    assert p.gate_bootstrap_resamples >= 1000 and p.gate_bootstrap_seed > 0
    for override, message in (
        ({"p2.share_statistic": "median"}, "share_statistic must be one of"),
        ({"p2.gate_min_labelled": 0}, "gate_min_labelled must be >= 1"),
        ({"p2.gate_bootstrap_resamples": 10}, "gate_bootstrap_resamples must be >= 100"),
        ({"p2.gate_labels_paths": ["tests/data/p2_second_rater"]}, "the team's own"),
        ({"p2.gate_labels_paths": ["/abs/labels.csv"]}, "non-empty paths relative"),
    ):
        with pytest.raises(InvalidPreregistration, match=message):
            apply_overrides(prereg, override)
    with pytest.raises(InvalidPreregistration, match="gate_label_buckets_paths needs"):
        apply_overrides(prereg, {"p2.adjudication_paths": [], "p2.second_rater_labels_paths": []})


# --- P2's verdict on it ----------------------------------------------------------------------


def fix_sha(n: int) -> str:
    return f"{n + 1:07x}{'c' * 33}"  # test_p2's fixing commit of feature n


def test_p2_decides_on_the_gate_corrected_share_and_keeps_the_others_beside_it() -> None:
    prereg = load_preregistration(REPO_ROOT / "preregistration.toml")
    con = connect(":memory:")
    ns = many_fixes(con, 30, risky_every=3)  # 10 human-review, 20 only-self-reflection
    # the team labels all 30: of the 20 only-self ones, 4 are only-self, 12 ci, 4 no failure;
    # the 10 human-review ones are human-review
    own: dict[str, str] = {}
    for i, n in enumerate(ns):
        if i % 3 == 0:
            own[fix_sha(n)] = REVIEW
        else:
            own[fix_sha(n)] = (ONLY_SELF, CI, CI, CI, NOT_A_FAILURE)[len(own) % 5]
    result = run_p2(con, prereg, labels=[], gate_labels=label_set(own))
    d = result.details
    gates = d["gate_correction"]
    assert gates["labels"] == "own" and gates["judged_labelled"] == 30
    failures = sum(g != NOT_A_FAILURE for g in own.values())
    only = sum(g == ONLY_SELF for g in own.values())
    assert result.metric.interval.value == pytest.approx(only / failures)
    assert result.metric.ci_method == "bootstrap"
    assert d["shares"]["verdict_statistic"] == "gate-corrected"
    # the raw share (20/30) is kept beside it, labelled
    assert d["shares"]["raw"]["value"] == pytest.approx(20 / 30, abs=1e-4)
    assert d["shares"]["raw"]["what"].startswith("raw")
    assert d["shares"]["gate-corrected, if no reviewer caught any"]["value"] == pytest.approx(
        (only + 10) / failures, abs=1e-4
    )
    assert gates["corrected"][ONLY_SELF] == pytest.approx(only)
    assert result.verdict == "continue"
    assert any("gate correction: gate labels (own) of 30 of the 30" in n for n in result.notes)
    assert "percentile bootstrap interval of the gate-corrected" in result.kill_condition


def two_repos(con, gates_a: list[str], gates_b: list[str]) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """A fix after a feature per gate in repositories a and b, each fix labelled that gate."""
    own = {}
    for repo, gates, start in (("a", gates_a, 10), ("b", gates_b, 5000)):
        for i, gate in enumerate(gates):
            n = start + 10 * i
            szz_fix(con, n, repo=repo)
            own[fix_sha(n)] = gate
    return own


def test_p2_gives_each_repositorys_share_and_says_when_they_agree() -> None:
    prereg = load_preregistration(REPO_ROOT / "preregistration.toml")
    con = connect(":memory:")
    pattern = [ONLY_SELF, CI, CI, REVIEW, CI] * 5  # 5 of 25 only-self-reflection in each
    result = run_p2(con, prereg, labels=[], gate_labels=label_set(two_repos(con, pattern, pattern)))
    assert result.verdict == "continue"
    rows = {r["repo"]: r for r in result.details["by_repo"]}
    for repo in ("a", "b"):
        assert rows[repo]["signals"] == 25 and rows[repo]["gate_labels"] == "own"
        assert rows[repo]["gate_corrected"] == pytest.approx(0.2)
        assert rows[repo]["ci_low"] < 0.2 < rows[repo]["ci_high"]
        assert rows[repo]["verdict_alone"] == "continue"
    note = next(n for n in result.notes if n.startswith("per repository"))
    assert "a 0.200 (" in note and "b 0.200 (" in note
    assert note.endswith("every repository with enough signals gives the pooled verdict (continue)")


def test_p2_says_when_the_pooled_share_mixes_repositories_that_disagree() -> None:
    prereg = load_preregistration(REPO_ROOT / "preregistration.toml")
    con = connect(":memory:")
    # a: 40 failures, none only-self-reflection (alone: kill); b: 30, 18 only-self (continue);
    # pooled 18/70 = 0.26: continue, carried by b alone
    own = two_repos(con, [CI] * 40, [ONLY_SELF, ONLY_SELF, ONLY_SELF, CI, REVIEW] * 6)
    result = run_p2(con, prereg, labels=[], gate_labels=label_set(own))
    assert result.verdict == "continue"
    assert result.metric.interval.value == pytest.approx(18 / 70)
    alone = {r["repo"]: r["verdict_alone"] for r in result.details["by_repo"]}
    assert alone == {"a": "kill", "b": "continue"}
    note = next(n for n in result.notes if n.startswith("per repository"))
    assert note.endswith(
        "the repositories do NOT agree: the pooled verdict mixes strata that differ"
    )


def test_without_gate_labels_no_repository_share_is_claimed() -> None:
    prereg = load_preregistration(REPO_ROOT / "preregistration.toml")
    con = connect(":memory:")
    two_repos(con, [CI] * 3, [CI] * 3)
    result = run_p2(con, prereg, labels=[], gate_labels=None)
    assert all("verdict_alone" not in r for r in result.details["by_repo"])
    assert not any(n.startswith("per repository") for n in result.notes)


def test_p2_on_an_unlabelled_repo_transports_the_shipped_matrix_and_says_so() -> None:
    prereg = load_preregistration(REPO_ROOT / "preregistration.toml")
    con = connect(":memory:")
    many_fixes(con, 30, risky_every=3)
    result = run_p2(con, prereg, labels=[], gate_labels=shipped_set())
    gates = result.details["gate_correction"]
    assert gates["labels"] == "transported" and gates["transport"] is True
    assert "assumes that P2's buckets mean the same on r" in gates["note"]
    assert any("TRANSPORTED" in n for n in result.notes)
    # human-review (2 shipped labels) is pooled; only-self uses its own 53
    rows = {r["bucket"]: r for r in gates["matrix"]}
    assert rows[REVIEW]["row"] == POOLED and rows[ONLY_SELF]["row"] == OWN_ROW
    only = 10 * 17 / 82 + 20 * 17 / 53
    failures = 10 * 67 / 82 + 20 * 45 / 53
    assert result.metric.interval.value == pytest.approx(only / failures)


def shipped_observations(keep: Callable[[str, str], bool]) -> list[GateObservation]:
    labels = shipped_set()
    return [
        GateObservation(repo, sha, bucket, labels.shipped[sha])
        for sha, (repo, bucket) in labels.shipped_buckets.items()
        if keep(repo, sha)
    ]


def test_on_the_real_labels_a_sample_and_transport_land_near_the_full_share() -> None:
    """Double sampling as a team would use it, on the real labels: label only the 35 held-out
    signals (a seeded sample), or only one repository and transport its matrix to the other.
    Each estimate's interval must cover the share all the labels give."""
    p = load_preregistration(REPO_ROOT / "preregistration.toml").p2
    held = {lab.fixing_sha for lab in read_labels(label_files(REPO_ROOT, p.holdout_labels_paths))}
    everything = shipped_observations(lambda repo, sha: True)

    def counts(repo: str | None) -> dict[str, int]:
        return {
            b: sum(1 for o in everything if o.bucket == b and repo in (None, o.repo))
            for b in BUCKETS
        }

    def share(obs: list[GateObservation], repo: str | None, counted: bool):  # type: ignore[no-untyped-def]
        c = gate_correction(
            counts(repo),
            obs,
            min_labelled=p.gate_min_labelled,
            labelled_are_counted=counted,
            resamples=p.gate_bootstrap_resamples,
            seed=p.gate_bootstrap_seed,
            confidence_level=0.95,
        )
        assert c is not None and c.share is not None
        return c.share

    full = share(everything, None, True)
    assert full.value == pytest.approx(17 / 67)
    sample = share([o for o in everything if o.fixing_sha in held], None, True)
    assert len(held) == 35 and sample.ci_low < full.value < sample.ci_high
    assert sample.ci_high - sample.ci_low > full.ci_high - full.ci_low  # fewer labels, wider
    for source, target in (("sqlite-utils", "flask"), ("flask", "sqlite-utils")):
        own = share([o for o in everything if o.repo == target], target, True)
        moved = share([o for o in everything if o.repo == source], target, False)
        assert moved.ci_low < own.value < moved.ci_high, (source, target, own, moved)
