"""P2 on this project's own history: a validation set the rules were never read against.

``tests/data/p2_own_history/`` labels every signal P2 counts in this repository's history up to
:data:`LABELLED_AT`, judged after the rules were frozen there. The test loads that history (from
the checkout's own ``.git``), runs P2 with the pre-registration in the working tree and checks
that P2 still counts exactly the labelled signals, so a rule change that moves one shows up, and
that the set's precision is what the labels say.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agent_reflection.experiments.p2 import run_p2
from agent_reflection.experiments.p2_precision import SignalView, precision_row, read_labels
from agent_reflection.experiments.preregistration import load_preregistration
from agent_reflection.load.git.history import load_git_history
from agent_reflection.load.git.szz import load_fix_inducing
from agent_reflection.store import db

REPO_ROOT = Path(__file__).resolve().parents[1]
LABELS = REPO_ROOT / "tests" / "data" / "p2_own_history" / "agent-reflection.csv"
#: The commit the signals were drawn at: main when the labels were written.
LABELLED_AT = "526f1b3c473a602ec44b9baff769a4ee7ea62b16"

pytestmark = pytest.mark.slow  # loads and blames this repository's history (about 9 s)


def _history_present() -> str | None:
    """Why the labelled history cannot be read here, or None when it can."""
    if not (REPO_ROOT / ".git").exists():
        return f"{REPO_ROOT} is not a git checkout: this project's own history is not here"
    found = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "cat-file", "-e", f"{LABELLED_AT}^{{commit}}"],
        capture_output=True,
        check=False,
    )
    if found.returncode != 0:
        return f"commit {LABELLED_AT[:10]} is not in this checkout (a shallow clone?)"
    return None


@pytest.fixture(scope="module")
def own_signals(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, object]]:
    reason = _history_present()
    if reason is not None:
        pytest.skip(reason)
    con = db.connect(tmp_path_factory.mktemp("own") / "own.duckdb")
    load_git_history(con, REPO_ROOT, rev=LABELLED_AT, name="agent-reflection")
    load_fix_inducing(con, REPO_ROOT, name="agent-reflection")
    prereg = load_preregistration(REPO_ROOT / "preregistration.toml")
    signals: list[dict[str, object]] = run_p2(con, prereg, labels=[]).details["signals"]
    con.close()
    return signals


def test_p2_counts_exactly_the_labelled_signals_of_the_own_history(
    own_signals: list[dict[str, object]],
) -> None:
    labels = read_labels([LABELS])
    counted = {str(s["fixing_sha"]) for s in own_signals if s["bucket"] is not None}
    assert counted == {lab.fixing_sha for lab in labels}


def test_precision_on_the_own_history_is_what_the_labels_say(
    own_signals: list[dict[str, object]],
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
        for s in own_signals
        if s["bucket"] is not None
    ]
    row = precision_row("own history", views, labels, 0.95)
    yes = sum(1 for lab in labels.values() if lab.is_failure)
    assert (row.labelled, row.failures) == (len(labels), yes)
    assert row.precision is not None
    print(
        f"own history: precision {row.failures}/{row.labelled} = {row.precision.value:.2f} "
        f"({row.precision.ci_low:.2f}-{row.precision.ci_high:.2f}); P2's introducing commit "
        f"agrees on {row.introducer_agrees} of {row.failures} failures"
    )
