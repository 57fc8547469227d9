"""P2's signal hygiene (issue 32), each registered rule on real commits of the ../shared flask
and sqlite-utils histories: bots, dependency bumps and releases are no repair
(load/git/kinds.py, the one home of those rules); a fix of a fix in the window is a failure of
the first fix, a chain counted once; reverts get the window fixes have."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from agent_reflection.experiments.p2.analysis import run_p2
from agent_reflection.experiments.p2.inputs import load_history
from agent_reflection.experiments.p2.signals import kind_reason
from agent_reflection.experiments.registration import Preregistration, load_preregistration
from agent_reflection.load.git.agents import identity_agent, match_agent
from agent_reflection.load.git.kinds import DEFAULT_RULES, classify_commit
from agent_reflection.store.db import connect
from test_p2 import by_sha, szz_fix

REPO_ROOT = Path(__file__).resolve().parents[1]

#: real commits of the shared histories and the kind the registered rules give them
FLASK_KINDS = {
    # dependabot's own commit
    "4fe0aebab79a092615f5f86a24b91bac07fb2ef2": ("bot", "bot-identity"),
    # the same bump squash-merged by a maintainer: a human author, a bump subject
    "a791997041b94b8a5effebc296cb427fde8e0ee5": ("dependency-bump", "bump-message"),
    # "[pre-commit.ci] pre-commit autoupdate (#5541)", merged by a maintainer
    "8a6cdf1e2a5efa81c30f6166602064ceefb0a35b": ("bot", "bot-message"),
    # "[pre-commit.ci] auto fixes from pre-commit.com hooks": fix-like, a bot's
    "8fdab74cc80c39f45aa65da5dd029c8d262756c3": ("bot", "bot-identity"),
    # "release version 3.1.3 (#5924)"
    "f00ad424ee3b050d382cc5b4aabb18afbb5e4ae7": ("release", "release-message"),
    # "Fix blueprint nested url_prefix": a person's fix
    "99afbb277d25d3b052e00b9a8da216054d51d62a": (None, None),
}
SQLITE_UTILS_KINDS = {
    # Claude (an agent's account, not a bot): "Release notes and version bump for 4.1.1"
    "a99c970dc05826e4e53b70fad76bffda1f240cd4": ("release", "release-message"),
    # Claude: "Add test: transform does not cascade-delete referencing records"
    "89b37248717e2e8c5d45d5be0bc2058694372b16": (None, None),
}


@pytest.fixture(scope="module")
def prereg() -> Preregistration:
    return load_preregistration(REPO_ROOT / "preregistration.toml")


def test_the_hygiene_rules_are_registered(prereg: Preregistration) -> None:
    p = prereg.p2
    assert p.exclude_bots and p.exclude_dependency_bumps and p.exclude_releases
    assert p.kind_rules == DEFAULT_RULES
    assert p.fix_of_fix == "failure-of-first-fix" and p.revert_window


def git_fields(clone: Path, sha: str) -> dict[str, Any]:
    out = subprocess.run(
        [
            "git",
            "-C",
            str(clone),
            "show",
            "--name-only",
            "--format=%an <%ae>%x00%cn <%ce>%x00%s%x00%b%x00",
            sha,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    author, committer, subject, body, files = out.split("\x00", 4)
    return {
        "author": author,
        "committer": committer,
        "subject": subject,
        "body": body,
        "paths": [f for f in files.split("\n") if f.strip()],
        "agent_identity": identity_agent(author, committer) is not None,
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    ("bundle", "kinds"), [("flask", FLASK_KINDS), ("sqlite-utils", SQLITE_UTILS_KINDS)]
)
def test_kinds_of_real_commits(
    shared_dir: Path, tmp_path: Path, bundle: str, kinds: dict[str, Any]
) -> None:
    clone = tmp_path / bundle
    subprocess.run(
        [
            "git",
            "clone",
            "-q",
            "--no-checkout",
            str(shared_dir / "data" / "git" / f"{bundle}.bundle"),
            str(clone),
        ],
        check=True,
        capture_output=True,
    )
    for sha, (kind, rule) in kinds.items():
        got = classify_commit(DEFAULT_RULES, **git_fields(clone, sha))
        assert (got.kind, got.rule) == (kind, rule), (sha, got)
    if bundle == "sqlite-utils":  # Claude's commits are an agent's, never a bot's
        fields = git_fields(clone, "89b37248717e2e8c5d45d5be0bc2058694372b16")
        assert fields["agent_identity"]
        assert match_agent(fields["subject"], fields["body"], fields["author"], fields["committer"])


@pytest.mark.slow
def test_p2_reads_the_kinds_of_the_real_flask_commits_and_counts_fixes_of_fixes(
    flask_szz_con: Any, prereg: Preregistration
) -> None:
    history = load_history(flask_szz_con, prereg.p2)
    for sha, (kind, rule) in FLASK_KINDS.items():
        found = kind_reason(history, prereg.p2, history.commits[("flask", sha)])
        assert (None if found is None else found[0]) == (None if kind is None else f"{kind}:{rule}")
    result = run_p2(flask_szz_con, prereg)
    signals = by_sha(result)
    # "Fix blueprint renaming" fixes lines of the fix 141fde1d the same day: a failure of it
    chained = signals["3257b7574e7f010686a617197e0fb4596986f7f7"]
    assert chained["category"] == "fix-after-feature" and chained["bucket"] is not None
    assert chained["category_rule"] == "szz-fix-of-fix-in-window"
    assert chained["introducing_sha"] == "141fde1d8ec8663b4be98777750d2f58c6fe44ad"
    # 001100bc fixes d094d5b6, itself a fix of 2506c0b9: one chain, counted once
    first = signals["d094d5b6fc86a26680a8c496f719c4d711fcd766"]
    again = signals["001100bc0b3a700540024c410a985c7f9e09f565"]
    assert first["category_rule"] == "szz-fix-of-fix-in-window" and first["bucket"] is not None
    assert again["category"] == "duplicate" and again["category_rule"] == "fix-chain"
    assert again["bucket"] is None
    # the rule before (excluded): neither is a signal
    before = run_p2(flask_szz_con, replace(prereg, p2=replace(prereg.p2, fix_of_fix="excluded")))
    old = by_sha(before)
    assert "3257b7574e7f010686a617197e0fb4596986f7f7" not in old
    assert "001100bc0b3a700540024c410a985c7f9e09f565" not in old
    assert result.n > before.n


@pytest.mark.slow
def test_reverts_get_the_window_fixes_have_on_real_flask_reverts(
    flask_szz_con: Any, prereg: Preregistration
) -> None:
    reverts = [
        s for s in run_p2(flask_szz_con, prereg).details["signals"] if s["category"] == "revert"
    ]
    assert reverts and all(s["gap_days"] <= prereg.p2.window_days for s in reverts)
    # flask's counted reverts all came within a day of their target (0.004 to 0.391 days): with
    # a zero-day window each is after it, so listed (out-of-window), not counted
    short = replace(prereg, p2=replace(prereg.p2, window_days=0))
    late = [s for s in run_p2(flask_szz_con, short).details["signals"] if s["kind"] == "revert"]
    out = [s for s in late if s["category"] == "out-of-window"]
    assert {s["fixing_sha"] for s in reverts} <= {s["fixing_sha"] for s in out}
    assert all(s["gap_days"] > 0 and s["bucket"] is None for s in out)
    assert all(s["category_rule"] == "revert-after-window" for s in out)
    # the rule before (revert_window = false): the same reverts are counted at any age
    no_window = replace(short, p2=replace(short.p2, revert_window=False))
    kept = by_sha(run_p2(flask_szz_con, no_window))
    assert all(kept[s["fixing_sha"]]["category"] == "revert" for s in out)


def test_p2_leaves_bots_bumps_and_releases_out_of_its_signals(prereg: Preregistration) -> None:
    con = connect(":memory:")
    szz_fix(con, 10, fix_subject="fix(deps): update requests to 2.32")
    szz_fix(con, 20, fix_subject="v1.2.3 Fixes #12")
    szz_fix(con, 30, fix_subject="fix: wrong totals")
    szz_fix(con, 40, fix_subject="fix: wrong totals in the footer")
    bot = by_sha(run_p2(con, prereg, labels=[]))
    con.execute(
        "UPDATE commits SET author_name = 'renovate[bot]', author_email = 'bot@renovateapp.com' "
        "WHERE sha = ?",
        [next(s for s in bot if s.startswith("0000029"))],
    )
    signals = by_sha(run_p2(con, prereg, labels=[]))
    rules = {s[:7]: (v["category"], v["category_rule"]) for s, v in signals.items()}
    assert rules["000000b"] == ("not-a-fix", "dependency-bump:deps-scope")
    assert rules["0000015"] == ("not-a-fix", "release:release-message")
    assert rules["0000029"] == ("not-a-fix", "bot:bot-identity")
    assert rules["000001f"] == ("fix-after-feature", "szz-feature-in-window")
    # registered off: counted again
    off = replace(
        prereg,
        p2=replace(
            prereg.p2, exclude_bots=False, exclude_dependency_bumps=False, exclude_releases=False
        ),
    )
    assert all(
        s["category"] == "fix-after-feature" for s in by_sha(run_p2(con, off, labels=[])).values()
    )


def test_lockfiles_bundler_configs_and_docs_are_no_review_surface_by_themselves(
    prereg: Preregistration,
) -> None:
    """Issue 32: 178 of 186 human-review signals of a held-out history were there only because
    the blamed commit touched package.json, a bundler config or a lockfile; a migration guide
    in docs/ scored 0.9. Such files no longer make the introducing change a review surface;
    code still does."""
    con = connect(":memory:")
    cases = {
        10: ("package.json", "src/report.py"),
        20: ("webpack.config.js", "src/report.py"),
        30: ("docs/migrations/v2.md", "src/report.py"),
        40: ("src/auth/login.py", "package.json"),
    }
    for n, files in cases.items():
        szz_fix(con, n, feat_files=files, fix_files=("src/report.py",))
    buckets = {s[:7]: v["bucket"] for s, v in by_sha(run_p2(con, prereg, labels=[])).items()}
    assert [buckets[f"{n + 1:07x}"] for n in cases] == [
        "only-self-reflection",
        "only-self-reflection",
        "only-self-reflection",
        "human-review",  # auth code: a review surface whatever else it touches
    ]
    before = replace(prereg, p2=replace(prereg.p2, review_surface_ignore_paths=()))
    old = {s[:7]: v["bucket"] for s, v in by_sha(run_p2(con, before, labels=[])).items()}
    assert {old[f"{n + 1:07x}"] for n in cases} == {"human-review"}
