"""Self-reports by default (issue 33, item 1): the CLAUDE.md block, the ask mode one flag away.

``reflect hook install`` writes a marked block into the project's CLAUDE.md telling the agent
to write its self-report where the Stop hook reads it; ``reflect hook uninstall`` takes it out
and leaves the rest of the file byte for byte. Measured through the real hooks: the commands
the installer registered, run by a shell with the event JSON on stdin as Claude Code runs them,
with the simulator playing an agent that follows the block (or ignores it, or writes the wrong
shape). An unusable self-report is kept in the sidecar's provenance and counted by the loader.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from agent_reflection.hooks.instructions import (
    BEGIN,
    END,
    EXAMPLE,
    render_block,
    with_block,
    without_block,
)
from agent_reflection.load.sidecars.loader import load_sidecars
from agent_reflection.reflection.checks import check_self_report
from agent_reflection.simulate.installed import count_degraded, simulate_installed_session
from agent_reflection.store.db import connect
from conftest import run_reflect
from hook_harness import hook_env

VENV_BIN = Path(sys.executable).parent


def reflect(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    return run_reflect(*args, cwd=cwd, env=session_env(home), timeout=120)


def session_env(home: Path) -> dict[str, str]:
    """What a Claude Code session's hooks see: our scripts on PATH, a private HOME."""
    env = hook_env(home, XDG_STATE_HOME=str(home / "state"), XDG_CACHE_HOME=str(home / "cache"))
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env['PATH']}"
    return env


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


# --- the block, pure ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "original",
    ["", "# Project\n", "# Project", "# Project\n\n", "line one\r\nline two\r\n", "x\n" * 3],
)
def test_block_comes_out_byte_for_byte(original: str) -> None:
    block = render_block(".reflection/input.json")
    added = with_block(original, block)
    assert added.count(BEGIN) == 1 and added.endswith(END + "\n")
    assert with_block(added, block) == added  # idempotent
    assert without_block(added) == original


def test_block_is_refreshed_in_place_and_text_after_it_stays() -> None:
    old = with_block("# P\n", render_block("old/input.json")) + "\n## Later notes\n"
    new = with_block(old, render_block(".reflection/input.json"))
    assert "old/input.json" not in new and new.count(BEGIN) == 1
    assert new.endswith("\n## Later notes\n")
    assert without_block(new) == "# P\n\n## Later notes\n"


def test_the_blocks_example_is_a_self_report_the_hook_accepts() -> None:
    check_self_report(EXAMPLE)
    block = render_block(".reflection/input.json")
    shown = json.loads(block.split("```json\n")[1].split("\n```")[0])
    assert shown == EXAMPLE
    for field in ("confidence", "most_likely_wrong", "known_not_in_diff", "surface"):
        assert f"`{field}`" in block


# --- install / uninstall, real CLI on a real repository -----------------------------------------


def test_install_adds_the_block_and_uninstall_restores_claude_md(
    git_repo: Path, home: Path
) -> None:
    original = b"# shop-api\n\nUse `make test` before committing.\n\xe2\x9c\x93 no trailing nl"
    (git_repo / "CLAUDE.md").write_bytes(original)
    done = reflect("hook", "install", cwd=git_repo, home=home)
    assert done.returncode == 0, done.stderr
    assert "self-report block" in done.stdout and "CLAUDE.md" in done.stdout
    text = (git_repo / "CLAUDE.md").read_text("utf-8")
    assert text.startswith(original.decode()) and BEGIN in text and ".reflection/input.json" in text
    again = reflect("hook", "install", cwd=git_repo, home=home)
    assert "already there" in again.stdout
    assert (git_repo / "CLAUDE.md").read_text("utf-8") == text
    settings = json.loads((git_repo / ".claude" / "settings.json").read_text())
    stop = settings["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert "--ask" not in stop  # the block is the default; ask mode is a flag away
    gone = reflect("hook", "uninstall", cwd=git_repo, home=home)
    assert gone.returncode == 0, gone.stderr
    assert (git_repo / "CLAUDE.md").read_bytes() == original


def test_a_claude_md_install_created_is_removed_by_uninstall(git_repo: Path, home: Path) -> None:
    assert reflect("hook", "install", cwd=git_repo, home=home).returncode == 0
    assert (git_repo / "CLAUDE.md").is_file()
    assert reflect("hook", "uninstall", cwd=git_repo, home=home).returncode == 0
    assert not (git_repo / "CLAUDE.md").exists()


def test_ask_mode_is_one_flag_away_and_removes_the_block(git_repo: Path, home: Path) -> None:
    assert reflect("hook", "install", cwd=git_repo, home=home).returncode == 0
    done = reflect("hook", "install", "--self-report", "ask", cwd=git_repo, home=home)
    assert done.returncode == 0, done.stderr
    assert "Ask mode" in done.stdout
    assert not (git_repo / "CLAUDE.md").exists()
    settings = json.loads((git_repo / ".claude" / "settings.json").read_text())
    assert settings["hooks"]["Stop"][0]["hooks"][0]["command"].endswith("--ask")


def test_user_scope_refuses_a_block_in_every_project(tmp_path: Path, home: Path) -> None:
    done = reflect(
        "hook", "install", "--user", "--self-report", "claude-md", cwd=tmp_path, home=home
    )
    assert done.returncode == 2 and "--self-report ask" in done.stderr


def test_local_scope_writes_claude_local_md(git_repo: Path, home: Path) -> None:
    assert reflect("hook", "install", "--local", cwd=git_repo, home=home).returncode == 0
    assert BEGIN in (git_repo / "CLAUDE.local.md").read_text("utf-8")
    assert not (git_repo / "CLAUDE.md").exists()
    assert reflect("hook", "uninstall", "--local", cwd=git_repo, home=home).returncode == 0
    assert not (git_repo / "CLAUDE.local.md").exists()


# --- measured through the real hooks -----------------------------------------------------------


def _sessions(repo: Path, home: Path, behaviour: str, n: int) -> list[Path]:
    env = session_env(home)
    rng = random.Random(33)
    found: list[Path] = []
    for i in range(n):
        session = simulate_installed_session(
            repo,
            f"s-{behaviour}-{i}",
            edits={f"src/module_{i}.py": f"VALUE = {i}\n"},
            env=env,
            behaviour=behaviour,
            rng=rng,
        )
        assert len(session.sidecars) == 1, session.runs
        found.extend(session.sidecars)
    return found


def test_sidecars_are_non_degraded_when_the_agent_follows_the_block(
    git_repo: Path, home: Path
) -> None:
    assert reflect("hook", "install", cwd=git_repo, home=home).returncode == 0
    followed = _sessions(git_repo, home, "follows", 5)
    assert count_degraded(followed) == (0, 5)
    records = [json.loads(p.read_text()) for p in followed]
    assert all(isinstance(r["confidence"], float) for r in records)
    assert all("self_report_problem" not in r["provenance"] for r in records)
    assert all(r["git"]["head_start"] for r in records)  # SessionStart ran too


def test_without_the_block_every_sidecar_is_degraded(git_repo: Path, home: Path) -> None:
    done = reflect("hook", "install", "--self-report", "none", cwd=git_repo, home=home)
    assert "Nothing asks the agent" in done.stdout
    ignored = _sessions(git_repo, home, "follows", 2)  # nothing to follow
    assert count_degraded(ignored) == (2, 2)
    problem = json.loads(ignored[0].read_text())["provenance"]["self_report_problem"]
    assert problem.startswith("no self-report at")


def test_ask_mode_sessions_are_non_degraded_on_the_second_attempt(
    git_repo: Path, home: Path
) -> None:
    assert (
        reflect("hook", "install", "--self-report", "ask", cwd=git_repo, home=home).returncode == 0
    )
    asked = _sessions(git_repo, home, "follows", 2)
    records = [json.loads(p.read_text()) for p in asked]
    assert count_degraded(asked) == (0, 2)
    # the second session is asked too: the first one's file predates it
    assert [r["provenance"]["reflection_attempt"] for r in records] == [2, 2]


def test_a_wrong_shape_is_kept_in_provenance_and_counted_by_the_loader(
    git_repo: Path, home: Path, tmp_path: Path
) -> None:
    assert reflect("hook", "install", cwd=git_repo, home=home).returncode == 0
    bad = _sessions(git_repo, home, "wrong-shape", 1)
    record = json.loads(bad[0].read_text())
    assert record["provenance"]["degraded"] is True
    assert "wrong shape at /confidence" in record["provenance"]["self_report_problem"]
    assert record["provenance"]["self_report_text"] == '{"confidence": "very high"}\n'
    (git_repo / ".reflection" / "input.json").unlink()
    good = _sessions(git_repo, home, "follows", 2)
    with connect(tmp_path / "r.duckdb") as con:
        summary = load_sidecars(con, [str(p) for p in (*bad, *good)], workers=1)
        stored = con.execute(
            "SELECT self_report_problem, self_report_text FROM reflections "
            "WHERE self_report_text IS NOT NULL"
        ).fetchall()
    assert summary.detail["self_reports"] == {"used": 2, "unusable": 1, "none": 0}
    assert any("could not use" in w for w in summary.detail["warnings"])
    assert len(stored) == 1 and "wrong shape" in stored[0][0]


def test_loading_only_sidecars_without_self_reports_says_what_to_do(
    git_repo: Path, home: Path, tmp_path: Path
) -> None:
    reflect("hook", "install", "--self-report", "none", cwd=git_repo, home=home)
    paths = _sessions(git_repo, home, "ignores", 2)
    args = ["load", "sidecars", *map(str, paths), "--db", str(tmp_path / "r.duckdb")]
    done = subprocess.run(
        [sys.executable, "-m", "agent_reflection", *args],
        capture_output=True,
        text=True,
        env=session_env(home),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "none of the 2 sidecar(s) loaded holds a self-report" in done.stderr
    assert "reflect hook install" in done.stderr


def test_an_earlier_sessions_self_report_is_not_reused(git_repo: Path, home: Path) -> None:
    """The file is not consumed: a session whose agent writes none must not carry the previous
    session's answers (the file predates its SessionStart)."""
    assert reflect("hook", "install", cwd=git_repo, home=home).returncode == 0
    first = _sessions(git_repo, home, "follows", 1)
    later = _sessions(git_repo, home, "ignores", 1)
    assert count_degraded(first) == (0, 1)
    record = json.loads(later[0].read_text())
    assert record["confidence"] is None and record["provenance"]["degraded"] is True
    assert "predates this session" in record["provenance"]["self_report_problem"]


def test_hook_status_says_what_asks_for_the_self_report(git_repo: Path, home: Path) -> None:
    assert (
        reflect("hook", "install", "--self-report", "both", cwd=git_repo, home=home).returncode == 0
    )
    shown = reflect("hook", "status", cwd=git_repo, home=home).stdout
    assert f"self-report: asked by the block in {git_repo / 'CLAUDE.md'} and ask mode" in shown
    assert f"workspace {git_repo} (found by {git_repo / '.agent-reflection.toml'})" in shown
    assert str(git_repo / ".reflection" / "reflection.duckdb") in shown
    reflect("hook", "install", "--self-report", "none", cwd=git_repo, home=home)
    shown = reflect("hook", "status", cwd=git_repo, home=home).stdout
    assert "self-report: nothing asks the agent for one" in shown


def test_an_unusable_self_report_is_kept_redacted() -> None:
    """The text of a report the hook could not use is kept for the team, but never a secret in
    it: redacted whole, then cut to the kept length."""
    from _secrets import planted
    from agent_reflection.hooks.capture import _kept_problem

    secrets = planted(random.Random(7))
    text = json.dumps({"confidence": "high", "notes": " ".join(p.text for p in secrets)})
    kept = _kept_problem("wrong shape at /confidence", text)
    assert kept["self_report_problem"] == "wrong shape at /confidence"
    assert [p.kind for p in secrets if p.secret in kept["self_report_text"]] == []
    assert kept["self_report_text"].startswith('{"confidence": "high"')
