"""The cadence decision and prompt: peer tables A1, A2 and A4 (atomcode), plus our choices."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_reflection.errors import ReflectionError
from agent_reflection.in_loop.cadence import (
    CHECKPOINT_FLAG,
    DEFAULT_CADENCE,
    NegativeToolCount,
    clip_task,
    reflection_prompt,
    should_inject_reflection,
)

# Peer table A1: (current, last, cadence) -> expected delta or None.
A1 = [
    pytest.param(50, 0, 0, None, id="A1.1-disabled"),
    pytest.param(1, 0, 0, None, id="A1.2-disabled"),
    pytest.param(9, 0, 10, None, id="A1.3-below-cadence"),
    pytest.param(10, 0, 10, 10, id="A1.4-at-threshold"),
    pytest.param(13, 0, 10, 13, id="A1.5-overshoot-reports-delta"),
    pytest.param(19, 10, 10, None, id="A1.6-honours-marker"),
    pytest.param(20, 10, 10, 10, id="A1.7-next-checkpoint"),
    pytest.param(5, 10, 10, None, id="A1.8-marker-ahead-saturates"),
]


@pytest.mark.peer
@pytest.mark.parametrize(("current", "last", "cadence", "expected"), A1)
def test_should_inject_peer_a1(current: int, last: int, cadence: int, expected: int | None) -> None:
    assert should_inject_reflection(current, last, cadence) == expected


@pytest.mark.parametrize(
    ("current", "last", "cadence", "name"),
    [(-1, 0, 7, "current"), (5, -3, 7, "last"), (5, 0, -1, "cadence")],
)
def test_negative_input_is_rejected_naming_the_argument(
    current: int, last: int, cadence: int, name: str
) -> None:
    with pytest.raises(NegativeToolCount, match=name) as info:
        should_inject_reflection(current, last, cadence)
    assert isinstance(info.value, ReflectionError)
    assert isinstance(info.value, ValueError)
    assert info.value.name == name


@pytest.mark.parametrize("bad", [True, 1.5, "3", None])
def test_non_int_input_is_a_type_error(bad: object) -> None:
    with pytest.raises(TypeError):
        should_inject_reflection(bad, 0, 7)  # type: ignore[arg-type]


def test_marker_ahead_by_much_still_never_fires() -> None:
    assert all(should_inject_reflection(c, 1000, 1) is None for c in range(0, 1000))


# Peer table A2: properties of reflection_prompt(delta, task).


@pytest.mark.peer
def test_p1_language_neutral_three_questions() -> None:
    msg = reflection_prompt(12, "")
    low = msg.lower()
    assert "12" in msg
    assert any(k in low for k in ("original goal", "original task", "restate"))
    assert any(k in low for k in ("rule out", "ruled out", "prove", "proved", "proven", "learned"))
    assert "next" in low and "concrete" in low
    for banned in ("error", "blocked", "cargo", "grep", "npm"):
        assert banned not in low, banned


@pytest.mark.peer
def test_p2_flagged_as_system_meta() -> None:
    msg = reflection_prompt(5, "")
    assert "not a user message" in msg.lower() or "System meta" in msg


@pytest.mark.peer
def test_p3_not_the_old_verbose_wording() -> None:
    low = reflection_prompt(5, "").lower()
    assert "answer in plain text" not in low
    assert "answer these" not in low


@pytest.mark.peer
def test_p4_task_verbatim_under_header() -> None:
    task = "fix the auth token refresh loop"
    msg = reflection_prompt(7, task)
    assert "ORIGINAL TASK" in msg
    assert task in msg
    assert msg.index("ORIGINAL TASK") < msg.index(task)


@pytest.mark.peer
def test_p5_task_branch_checks_plan_and_never_says_restate() -> None:
    low = reflection_prompt(3, "refactor the cache layer").lower()
    assert "current plan" in low and "match" in low
    assert "restate" not in low


@pytest.mark.peer
def test_p6_long_task_truncated() -> None:
    msg = reflection_prompt(4, "x" * 500)
    assert "x" * 297 + "..." in msg
    assert "x" * 298 not in msg
    assert "x" * 400 not in msg


@pytest.mark.peer
def test_p7_no_task_header_without_task() -> None:
    assert "ORIGINAL TASK" not in reflection_prompt(5, "")


@pytest.mark.peer
@pytest.mark.parametrize("task", ["", "look for dead code"])
def test_p8_next_concrete_step_never_how_close(task: str) -> None:
    low = reflection_prompt(5, task).lower()
    assert "next concrete step" in low
    assert "how close" not in low


@pytest.mark.parametrize(
    ("task", "expected"),
    [
        pytest.param("a" * 300, "a" * 300, id="300-unchanged"),
        pytest.param("a" * 301, "a" * 297 + "...", id="301-cut"),
        pytest.param("漢" * 300, "漢" * 300, id="300-cjk-unchanged"),
        pytest.param("漢" * 301, "漢" * 297 + "...", id="301-cjk-cut-by-chars"),
        pytest.param("", "", id="empty"),
    ],
)
def test_truncation_boundary_counts_characters(task: str, expected: str) -> None:
    assert clip_task(task) == expected
    if task:
        assert expected in reflection_prompt(3, task)


def test_whitespace_only_task_counts_as_unknown() -> None:
    msg = reflection_prompt(5, "   \n")
    assert "ORIGINAL TASK" not in msg
    assert "restate" in msg.lower()


def test_prompt_opens_with_the_flag_loaders_detect() -> None:
    for task in ("", "ship it"):
        assert reflection_prompt(9, task).splitlines()[0] == CHECKPOINT_FLAG


def test_delta_appears_in_question_two() -> None:
    msg = reflection_prompt(13, "")
    assert re.search(r"^2\. .*\b13\b", msg, re.M)


# Peer table A4: a simulated turn loop (inject, then set last = current; a new task resets both).


def simulate(cadence: int, turns: list[int | str]) -> list[tuple[int, int]]:
    count = last = 0
    out: list[tuple[int, int]] = []
    k = 0
    for turn in turns:
        if turn == "new task":
            count = last = 0
            continue
        assert isinstance(turn, int)
        k += 1
        count += turn
        delta = should_inject_reflection(count, last, cadence)
        if delta is not None:
            out.append((k, delta))
            last = count
    return out


@pytest.mark.peer
@pytest.mark.parametrize(
    ("cadence", "turns", "expected"),
    [
        pytest.param(10, [4] * 6, [(3, 12), (6, 12)], id="A4.1"),
        pytest.param(3, [1] * 4, [(3, 3)], id="A4.2"),
        pytest.param(0, [50], [], id="A4.3"),
        pytest.param(7, [2, 2, 2, 2, "new task", 2, 2, 2, 2], [(4, 8), (8, 8)], id="A4.4"),
    ],
)
def test_turn_loop_peer_a4(
    cadence: int, turns: list[int | str], expected: list[tuple[int, int]]
) -> None:
    assert simulate(cadence, turns) == expected


def test_a4_without_marker_reset_would_fire_early() -> None:
    """Why the marker resets with the count: a stale marker suppresses the next checkpoint."""
    count, last = 0, 8  # count reset for the new task, marker (wrongly) kept
    fired = []
    for _ in range(4):
        count += 2
        if should_inject_reflection(count, last, 7) is not None:
            fired.append(count)
            last = count
    assert fired == []  # and the reset version fires at 8 (A4.4)


@given(
    cadence=st.integers(min_value=1, max_value=20),
    batches=st.lists(st.integers(min_value=1, max_value=30), max_size=40),
)
def test_turn_loop_invariants(cadence: int, batches: list[int]) -> None:
    """Every checkpoint reports >= cadence calls; the deltas add up to the calls covered;
    with one call per turn, checkpoints fire exactly every cadence calls."""
    count = last = 0
    deltas = []
    for batch in batches:
        count += batch
        delta = should_inject_reflection(count, last, cadence)
        if delta is not None:
            assert delta >= cadence and delta == count - last
            deltas.append(delta)
            last = count
        else:
            assert count - last < cadence
    assert sum(deltas) == last
    assert len(simulate(cadence, [1] * sum(batches))) == sum(batches) // cadence


def test_default_cadence_is_seven() -> None:
    assert DEFAULT_CADENCE == 7
