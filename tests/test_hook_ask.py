"""The optional ask mode (REFLECTION_ASK=1), against a fake Claude Code harness.

The harness re-fires the real hook after every block, as Claude Code does, up to its cap of 8
consecutive blocks. Whatever the agent does in between, the hook blocks at most once per stop
cycle and every cycle ends with exactly one sidecar.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from hook_harness import CLAUDE_BLOCK_CAP, hook_env, load, payload, run_hook, sidecars

Agent = Callable[[Path, str], None]


def complies(repo: Path, reason: str) -> None:
    """Writes the self-report where the block's reason says."""
    target = Path(reason.split(" to ", 1)[1].split(" answering", 1)[0])
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(
        json.dumps(
            {
                "confidence": 0.6,
                "most_likely_wrong": {"surface": "data", "description": "migration order"},
                "known_not_in_diff": "prod has an extra index",
            }
        )
    )


def ignores(repo: Path, reason: str) -> None:
    """Says nothing and stops again."""


def writes_garbage(repo: Path, reason: str) -> None:
    (repo / ".reflection").mkdir(exist_ok=True)
    (repo / ".reflection" / "input.json").write_text("I am confident!")


@dataclass(frozen=True)
class Cycle:
    fires: int
    blocks: int
    reasons: tuple[str, ...]


def stop_cycle(
    repo: Path, env: dict[str, str], agent: Agent, *, honours_flag: bool = True, session: str = "s"
) -> Cycle:
    """Claude Code's loop: fire Stop; on a block the agent continues and Stop fires again."""
    blocks = 0
    fires = 0
    reasons: list[str] = []
    active = False
    while True:
        fires += 1
        run = run_hook(payload(repo, session=session, stop_hook_active=active), env, repo)
        assert run.returncode == 0, run.stderr
        if not run.stdout:
            return Cycle(fires, blocks, tuple(reasons))
        out = json.loads(run.stdout)  # stdout, when present, is exactly one JSON document
        assert set(out) == {"decision", "reason"} and out["decision"] == "block"
        blocks += 1
        reasons.append(out["reason"])
        if blocks >= CLAUDE_BLOCK_CAP:
            return Cycle(fires, blocks, tuple(reasons))
        agent(repo, out["reason"])
        active = honours_flag  # a careless harness never sets stop_hook_active


@pytest.fixture
def ask_env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return hook_env(home, REFLECTION_MODE="solo", REFLECTION_ASK="1")


def out_dir(repo: Path) -> Path:
    return repo / ".reflection" / "sidecars"


@pytest.mark.parametrize("agent", [complies, ignores, writes_garbage])
@pytest.mark.parametrize("honours_flag", [True, False], ids=["claude-code", "careless-harness"])
def test_at_most_one_block_per_stop_cycle(
    git_repo: Path, ask_env: dict[str, str], agent: Agent, honours_flag: bool
) -> None:
    cycle = stop_cycle(git_repo, ask_env, agent, honours_flag=honours_flag)
    assert cycle.blocks == 1
    assert cycle.fires == 2
    [path] = sidecars(out_dir(git_repo))
    record = load(path)
    assert record["provenance"]["reflection_attempt"] == 2  # one ask
    if agent is complies:
        assert record["confidence"] == 0.6
        assert record["provenance"]["degraded"] is False
    else:
        assert record["confidence"] is None
        assert record["provenance"]["degraded"] is True
    assert not list(out_dir(git_repo).glob("*.ask")), "the pending ask is cleared"
    assert not list(out_dir(git_repo).glob("*.lock"))


def test_the_question_names_the_file_and_the_three_fields(
    git_repo: Path, ask_env: dict[str, str]
) -> None:
    cycle = stop_cycle(git_repo, ask_env, complies)
    [reason] = cycle.reasons
    assert str(git_repo / ".reflection" / "input.json") in reason
    for field in ("confidence", "most_likely_wrong", "known_not_in_diff"):
        assert field in reason


def test_no_ask_when_a_self_report_exists(git_repo: Path, ask_env: dict[str, str]) -> None:
    complies(git_repo, f"x to {git_repo / '.reflection' / 'input.json'} answering")
    cycle = stop_cycle(git_repo, ask_env, ignores)
    assert (cycle.blocks, cycle.fires) == (0, 1)
    [path] = sidecars(out_dir(git_repo))
    assert load(path)["provenance"]["reflection_attempt"] == 1


def test_many_turns_each_ask_once(git_repo: Path, ask_env: dict[str, str]) -> None:
    """Stop fires at the end of every turn; each turn is its own cycle with at most one ask."""
    cycles = [stop_cycle(git_repo, ask_env, ignores) for _ in range(3)]
    assert [c.blocks for c in cycles] == [1, 1, 1]
    assert len(sidecars(out_dir(git_repo))) == 3


def test_ask_off_by_default(git_repo: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    cycle = stop_cycle(git_repo, hook_env(home, REFLECTION_MODE="solo"), complies)
    assert (cycle.blocks, cycle.fires) == (0, 1)


def test_ask_never_blocks_when_it_cannot_record_the_ask(
    git_repo: Path, ask_env: dict[str, str]
) -> None:
    """A symlink at the ask marker: the marker cannot be created, so no block (no loop risk)."""
    out_dir(git_repo).mkdir(parents=True)
    (out_dir(git_repo) / "s.ask").symlink_to(git_repo / "nowhere")
    cycle = stop_cycle(git_repo, ask_env, ignores)
    assert cycle.blocks == 0
    # read_marker does not read through the link: treated as no pending ask, and it cannot
    # be created either, so the hook captures at once.
    [path] = sidecars(out_dir(git_repo))
    assert load(path)["provenance"]["reflection_attempt"] == 1


def test_ask_with_mode_off_does_nothing(git_repo: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    cycle = stop_cycle(git_repo, hook_env(home, REFLECTION_ASK="1"), complies)
    assert (cycle.blocks, cycle.fires) == (0, 1)
    assert not (git_repo / ".reflection").exists()
