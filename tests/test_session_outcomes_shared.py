"""Session outcomes on a real public history: sqlite-utils (../shared/), one note per
agent-assisted commit (its Co-Authored-By: Claude / "Generated with Claude Code" trailer), each
naming a session of its own, loaded with SZZ."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent_reflection.experiments.registration import load_preregistration
from agent_reflection.load.git.history import load_git_history
from agent_reflection.load.git.szz import load_fix_inducing
from agent_reflection.load.sessions import load_git_sessions, session_outcomes
from agent_reflection.store.db import connect
from session_repo import add_note, session_sidecar

AGENT_TRAILER = "co-authored-by: claude|generated with claude code"
#: 87cf1c5 "Replace SQL prefix matching with a first-token scanner" (agent-assisted, 2026-07-05)
#: was fixed 1.4 days later by adc10df 'Fix for db.query("; COMMIT") bypasses the first-token
#: scanner' (db.py lines it wrote, plus regression tests): read by hand.
SCANNER, SCANNER_FIX = "87cf1c5", "adc10df"
#: 69a1c0d "Fixes for Ruff>=0.16.0 (#814)": a lint sweep over many agent-written lines.
RUFF_SWEEP = "69a1c0d"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.slow
def test_agent_commits_of_sqlite_utils_get_outcomes(shared_dir: Path, tmp_path: Path) -> None:
    bundle = shared_dir / "data" / "git" / "sqlite-utils.bundle"
    if not bundle.is_file():
        pytest.skip(f"{bundle} not present")
    repo = tmp_path / "sqlite-utils"
    subprocess.run(["git", "clone", "-q", str(bundle), str(repo)], capture_output=True, check=False)
    shas = sorted(
        set(git(repo, "log", "--all", "--format=%H", "-i", "-E", f"--grep={AGENT_TRAILER}").split())
    )
    assert len(shas) == 88  # as the data's README says
    for sha in shas:
        when = datetime.fromisoformat(git(repo, "show", "-s", "--format=%cI", sha).strip())
        stamp = when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        files = [f for f in git(repo, "show", "--format=", "--name-only", sha).split("\n") if f]
        add_note(
            repo,
            sha,
            session_sidecar(f"agent-{sha[:12]}", "sqlite-utils", stamp, files_changed=files),
        )
    prereg = load_preregistration()
    con = connect(tmp_path / "real.duckdb")
    load_git_history(con, repo)
    load_fix_inducing(con, repo)
    result = load_git_sessions(con, repo, prereg)
    assert result.notes is not None and (result.notes.read, result.notes.loaded) == (88, 88)
    assert result.sessions.detail["links"] == {"note": 88}
    counts = result.sessions.detail["outcomes"]
    assert sum(counts.values()) == 88
    rows = {r["session_id"]: r for r in session_outcomes(con, prereg).to_pylist()}
    scanner = next(r for s, r in rows.items() if s.startswith(f"agent-{SCANNER}"))
    assert (scanner["outcome"], scanner["rule"]) == ("wrong", "szz-fix")
    assert scanner["evidence_sha"].startswith(SCANNER_FIX)
    # the lint sweep is no evidence ...
    assert not any((r["evidence_sha"] or "").startswith(RUFF_SWEEP) for r in rows.values())
    # ... unless the registration says every fix counts: then it marks many sessions wrong
    every_fix = replace(prereg, p1=replace(prereg.p1, loop_ignore_cosmetic_fixes=False))
    loose = session_outcomes(con, every_fix).to_pylist()
    by_sweep = [r for r in loose if (r["evidence_sha"] or "").startswith(RUFF_SWEEP)]
    assert len(by_sweep) > counts.get("wrong", 0)
