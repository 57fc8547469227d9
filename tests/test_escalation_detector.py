"""The anti-loop detector's pure core: signatures, counting, resets, the payload."""

from __future__ import annotations

from typing import Any

import pytest

from agent_reflection.in_loop import loop_detector as d
from agent_reflection.in_loop.escalation_contract import parse_escalations, validate_trigger
from agent_reflection.in_loop.escalation_router import route_escalation


def bash(command: str) -> dict[str, Any]:
    return {"command": command}


def fail(state: dict[str, Any], command: str, error: str, threshold: int = 4) -> Any:
    return d.observe(
        state, tool="Bash", tool_input=bash(command), failed=True, error=error, threshold=threshold
    )


def ok(state: dict[str, Any], tool: str, tool_input: dict[str, Any]) -> Any:
    return d.observe(state, tool=tool, tool_input=tool_input, failed=False)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        # line numbers, temporary folders, object addresses, durations differ between reruns
        (
            "Exit code 1\nTraceback\n  File \"/tmp/a1/x.py\", line 12\nKeyError: 'k'",
            "Exit code 1\nTraceback\n  File \"/tmp/b7/x.py\", line 99\nKeyError: 'k'",
        ),
        ("Exit code 2\nE  <Foo object at 0x7f3a2c1b>", "Exit code 2\nE  <Foo object at 0x55d1e0>"),
        (
            "Exit code 1\n=== 3 failed, 10 passed in 0.52s ===",
            "Exit code 1\n=== 2 failed, 11 passed in 1.07s ===",
        ),
        ("fatal: bad object 4f2a9c1d", "fatal: bad object 9e8d7c6b5a"),
    ],
)
def test_same_failure_same_signature(a: str, b: str) -> None:
    assert d.error_key(a) == d.error_key(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Exit code 1\nKeyError: 'k'", "Exit code 2\nKeyError: 'k'"),
        ("Exit code 1\nKeyError: 'k'", "Exit code 1\nImportError: no module named k"),
    ],
)
def test_different_failures_differ(a: str, b: str) -> None:
    assert d.error_key(a) != d.error_key(b)


def test_error_key_reads_the_decisive_line() -> None:
    text = (
        'Exit code 1\nTraceback (most recent call last):\n  File "/x/y.py", line 3\nValueError: 42'
    )
    assert d.error_key(text) == "exit 1: ValueError: N"
    assert d.error_key("") == ""
    assert d.error_key("Exit code 127") == "exit 127"


def test_command_key_keeps_paths_drops_numbers_and_heredoc_bodies() -> None:
    assert d.command_key("Bash", bash("pytest tests/test_a.py -k case_12")) == (
        "pytest tests/test_a.py -k case_N"
    )
    assert d.command_key("Bash", bash("pytest tests/test_a.py")) != d.command_key(
        "Bash", bash("pytest tests/test_b.py")
    )
    one = "cat <<'EOF' > repro.py\nprint(1)\nEOF\npython repro.py"
    two = "cat <<'EOF' > repro.py\nimport sys\nsys.exit(3)\nEOF\npython repro.py"
    assert d.command_key("Bash", bash(one)) == d.command_key("Bash", bash(two))
    assert d.command_key("Bash", bash(one)) == "cat <<'EOF' > repro.py ; python repro.py"
    assert d.command_key("Edit", {"file_path": "/src/a.py", "old_string": "x"}) == "/src/a.py"
    assert d.command_key("WebFetch", {"url": "https://example.com"}) == ""


def test_streak_fires_at_threshold_with_the_attempt_number() -> None:
    state = d.fresh_state("fix the login test")
    fired = [
        fail(state, "pytest tests/test_login.py", f"Exit code 1\nAssertionError: {i} != 0")
        for i in range(9)
    ]
    attempts = [t["attempt"] if t else None for t in fired]
    # at the threshold, then every threshold further failures
    assert attempts == [None, None, None, 4, None, None, None, 8, None]
    trigger = fired[3]
    assert trigger["first_step"] == 1 and trigger["step"] == 4
    assert trigger["task"] == "fix the login test"
    assert (
        trigger["signature"] == "Bash | pytest tests/test_login.py | exit 1: AssertionError: N != N"
    )


def test_different_errors_do_not_add_up() -> None:
    state = d.fresh_state()
    for error in ("KeyError: a", "TypeError: b", "NameError: c", "OSError: d", "ValueError: e"):
        assert fail(state, "python run.py", f"Exit code 1\n{error}") is None
    assert max(v["count"] for v in state["streaks"].values()) == 1


def test_other_successes_do_not_reset_but_the_same_command_does() -> None:
    state = d.fresh_state()
    for _ in range(3):
        assert fail(state, "pytest", "Exit code 1\nfailed") is None
        ok(state, "Edit", {"file_path": "src/app.py"})  # the fix attempt itself succeeds
        ok(state, "Bash", bash("git diff"))
    assert fail(state, "pytest", "Exit code 1\nfailed")["attempt"] == 4
    assert state["files"] == ["src/app.py"]
    ok(state, "Bash", bash("pytest"))  # the thing now works: its streak is gone
    assert state["streaks"] == {}
    assert fail(state, "pytest", "Exit code 1\nfailed") is None


def test_threshold_zero_disables() -> None:
    state = d.fresh_state()
    assert all(fail(state, "make", "Exit code 2", threshold=0) is None for _ in range(10))
    assert next(iter(state["streaks"].values()))["count"] == 10


def test_signatures_are_bounded() -> None:
    state = d.fresh_state()
    for i in range(d.MAX_SIGNATURES + 10):
        fail(state, f"cmd-{'x' * (i + 1)}", "Exit code 1")
    assert len(state["streaks"]) == d.MAX_SIGNATURES


def test_payload_is_a_valid_trigger_and_a_clean_handoff() -> None:
    state = d.fresh_state("Port the parser to Rust.\nKeep the CLI.")
    ok(state, "Write", {"file_path": "src/parser.rs", "content": "fn main() {}"})
    trigger = None
    for _ in range(4):
        trigger = fail(state, "cargo test", "Exit code 101\nerror[E0425]: cannot find value `x`")
    assert trigger is not None
    payload = d.escalation_payload(trigger)
    (block,) = parse_escalations(payload)
    assert validate_trigger(block) == ()
    assert block.attempt == 4
    assert block.first("original_task") == "Port the parser to Rust. Keep the CLI."
    assert block.values("files") == ("src/parser.rs",)
    assert "exit 101" in block.first("error_signature")
    # the router accepts it as a clean first rescue (no transcript pollution)
    assert route_escalation(payload).outcome == "unblocker"
    context = d.escalation_context(trigger)
    assert context.startswith("[System meta: anti-loop escalation.")
    assert "[ATTEMPT: 4]" in context and "reflection-unblocker" in context


def test_payload_is_bounded() -> None:
    state = d.fresh_state("t" * 10_000)
    for i in range(d.MAX_FILES + 5):
        ok(state, "Edit", {"file_path": f"/src/{'d' * 300}/f{i}.py"})
    trigger = None
    for _ in range(4):
        trigger = fail(state, "x" * 5000, "Exit code 1\n" + "e" * 50_000)
    assert trigger is not None
    assert len(d.escalation_payload(trigger)) < 5000
