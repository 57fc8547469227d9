"""The reflection cycle's replay clocks: every step of a short history, a bounded number of a
long one (``reflect run cycle`` on a month of run logs replays in as many passes as on hours)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise

from agent_reflection.cycle.replay import clocks

START = datetime(2025, 6, 1, tzinfo=UTC)
FIVE = timedelta(minutes=5)


def test_a_short_history_is_replayed_every_step_to_its_end() -> None:
    at = clocks(START, START + timedelta(hours=2), FIVE, max_clocks=200)
    assert len(at) == 25 and at[0] == START and at[-1] == START + timedelta(hours=2)
    assert {b - a for a, b in pairwise(at)} == {FIVE}


def test_a_long_history_widens_the_step_to_stay_within_the_bound() -> None:
    end = START + timedelta(days=30)
    at = clocks(START, end, FIVE, max_clocks=120)
    assert len(at) <= 120 and at[-1] == end
    steps = {b - a for a, b in pairwise(at[:-1])}  # the last step ends at `end`
    assert len(steps) == 1 and steps.pop() == timedelta(minutes=364)  # 30 days / 119, whole min
    # without a bound, every five minutes: 8,641 passes
    assert len(clocks(START, end, FIVE)) == 8641
