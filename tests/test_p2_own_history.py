"""P2 on this project's own history: a validation set the rules were never read against.

``tests/data/p2_own_history/`` labels every signal P2 counts in this repository's history up to
:data:`LABELLED_AT`, judged after the rules were frozen there. The test loads that history (from
the checkout's own ``.git``) and runs P2 with the pre-registration in the working tree. Under
the fix words' ``word`` reading (the rules the labels were drawn with) P2 still counts exactly
the labelled signals, so a rule change that moves one shows up; under the registered reading
(``verb``, since the amendment of 2026-11-29, written after these labels were read) it counts
the subset :data:`VERB_COUNTED`; and each set's precision is what the labels say.
"""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from agent_reflection.experiments.p2.analysis import run_p2
from agent_reflection.experiments.p2.precision import SignalView, precision_row, read_labels
from agent_reflection.experiments.registration import load_preregistration
from agent_reflection.load.git.history import load_git_history
from agent_reflection.load.git.szz import load_fix_inducing
from agent_reflection.store import db

REPO_ROOT = Path(__file__).resolve().parents[1]
LABELS = REPO_ROOT / "tests" / "data" / "p2_own_history" / "agent-reflection.csv"
#: The commit the signals were drawn at: main when the labels were written.
LABELLED_AT = "526f1b3c473a602ec44b9baff769a4ee7ea62b16"
#: What the verb reading still counts of the 16 (the README's table): the revert and three fixes
#: whose subjects use a fix word as a verb ("report: fixed commits listed", "after the rules
#: were fixed", "(fixed cost, ...").
VERB_COUNTED = {"300af9ce", "02623d3d", "d937681b", "44acb731"}
#: The fixes of fixes counted under the word reading since issue 32 (not labelled: new)
FIX_OF_FIX_WORD = {"2e6cf72a", "dfc2c661"}
#: The commit that last changed the verb reading (the amendment's own commit): commits after it
#: are out of sample for it, labelled up to :data:`OUT_OF_SAMPLE_TO` (the README's procedure).
AMENDED_AT = "b0e7be4dae9bea55dcc7ca7e07843ec90e9c109a"
OUT_OF_SAMPLE_TO = "779f6aa8bf6aceb5a044f7552c43c63f9809b84d"
AFTER_LABELS = LABELS.with_name("after-fix-wording.csv")

pytestmark = pytest.mark.slow  # loads and blames this repository's history (about 9 s)


def _history_present(rev: str = LABELLED_AT) -> str | None:
    """Why the history to ``rev`` cannot be read here, or None when it can."""
    if not (REPO_ROOT / ".git").exists():
        return f"{REPO_ROOT} is not a git checkout: this project's own history is not here"
    found = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "cat-file", "-e", f"{rev}^{{commit}}"],
        capture_output=True,
        check=False,
    )
    if found.returncode != 0:
        return f"commit {rev[:10]} is not in this checkout (a shallow clone?)"
    return None


@pytest.fixture(scope="module")
def own_signals(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, object]]]:
    """P2's signals under each reading of the fix words (the registered file otherwise)."""
    reason = _history_present()
    if reason is not None:
        pytest.skip(reason)
    con = db.connect(tmp_path_factory.mktemp("own") / "own.duckdb")
    load_git_history(con, REPO_ROOT, rev=LABELLED_AT, name="agent-reflection")
    load_fix_inducing(con, REPO_ROOT, name="agent-reflection")
    prereg = load_preregistration(REPO_ROOT / "preregistration.toml")
    assert prereg.p2.fix_wording == "verb"
    signals = {
        wording: run_p2(
            con, replace(prereg, p2=replace(prereg.p2, fix_wording=wording)), labels=[]
        ).details["signals"]
        for wording in ("word", "verb")
    }
    con.close()
    return signals


def counted(signals: list[dict[str, object]]) -> set[str]:
    return {str(s["fixing_sha"]) for s in signals if s["bucket"] is not None}


def test_p2_counts_exactly_the_labelled_signals_of_the_own_history(
    own_signals: dict[str, list[dict[str, object]]],
) -> None:
    labels = read_labels([LABELS])
    word = counted(own_signals["word"])
    # fixes of fixes count since issue 32 (fix_of_fix = failure-of-first-fix): under the word
    # reading two of this history's are, drawn after these labels; they are new, not labelled
    new = word - {lab.fixing_sha for lab in labels}
    assert {sha[:8] for sha in new} == FIX_OF_FIX_WORD
    rules = {str(s["fixing_sha"]): s["category_rule"] for s in own_signals["word"]}
    assert {rules[sha] for sha in new} == {"szz-fix-of-fix-in-window"}
    assert word - new == {lab.fixing_sha for lab in labels}
    # under the verb reading one of them is counted too: dfc2c661's subject says "time to fix",
    # a fix word acting as a verb
    verb = {sha[:8] for sha in counted(own_signals["verb"])}
    assert verb - VERB_COUNTED == {"dfc2c661"} and verb >= VERB_COUNTED


@pytest.mark.parametrize(("wording", "expected"), [("word", (16, 5)), ("verb", (4, 2))])
def test_precision_on_the_own_history_is_what_the_labels_say(
    own_signals: dict[str, list[dict[str, object]]], wording: str, expected: tuple[int, int]
) -> None:
    labels = {lab.fixing_sha: lab for lab in read_labels([LABELS])}
    views = [
        SignalView(
            str(s["repo"]),
            str(s["fixing_sha"]),
            str(s["category"]),
            None if s["bucket"] is None else str(s["bucket"]),
            None if s["introducing_sha"] is None else str(s["introducing_sha"]),
        )
        for s in own_signals[wording]
        if s["bucket"] is not None and s["fixing_sha"] in labels
    ]
    row = precision_row("own history", views, labels, 0.95)
    yes = sum(1 for v in views if labels[v.fixing_sha].is_failure)
    assert (row.labelled, row.failures) == (len(views), yes) == expected
    assert row.precision is not None
    print(
        f"own history, {wording}: precision {row.failures}/{row.labelled} = "
        f"{row.precision.value:.2f} "
        f"({row.precision.ci_low:.2f}-{row.precision.ci_high:.2f}); P2's introducing commit "
        f"agrees on {row.introducer_agrees} of {row.failures} failures"
    )


def test_p2_counts_only_labelled_signals_after_the_amendment(tmp_path: Path) -> None:
    """Out of sample for the verb reading: every signal P2 counts in commits after
    :data:`AMENDED_AT` (to :data:`OUT_OF_SAMPLE_TO`) is labelled in ``after-fix-wording.csv``
    (none so far: that file does not exist until one is counted)."""
    reason = _history_present(OUT_OF_SAMPLE_TO)
    if reason is not None:
        pytest.skip(reason)
    after = set(
        subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-list", f"{AMENDED_AT}..{OUT_OF_SAMPLE_TO}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
    )
    assert after  # the window holds commits
    con = db.connect(tmp_path / "after.duckdb")
    load_git_history(con, REPO_ROOT, rev=OUT_OF_SAMPLE_TO, name="agent-reflection")
    load_fix_inducing(con, REPO_ROOT, name="agent-reflection")
    prereg = load_preregistration(REPO_ROOT / "preregistration.toml")
    signals = run_p2(con, prereg, labels=[]).details["signals"]
    con.close()
    labelled = (
        {lab.fixing_sha for lab in read_labels([AFTER_LABELS])} if AFTER_LABELS.exists() else set()
    )
    assert counted(signals) & after == labelled
    # the amendment's own commit is counted (it quotes "fixes #2033"), outside the window
    assert AMENDED_AT in counted(signals)
