"""The anti-loop detector's pure core: reading a failure from its text, counting, resets,
noise, the payload."""

from __future__ import annotations

from typing import Any

import pytest

from agent_reflection.in_loop import loop_detector as d
from agent_reflection.in_loop.error_signature import read_failure
from agent_reflection.in_loop.escalation_contract import parse_escalations, validate_trigger
from agent_reflection.in_loop.escalation_router import route_escalation


def bash(command: str) -> dict[str, Any]:
    return {"command": command}


def fail(state: dict[str, Any], command: str, error: str, threshold: int = 4) -> Any:
    return d.observe(
        state, tool="Bash", tool_input=bash(command), failed=True, output=error, threshold=threshold
    )


def ok(state: dict[str, Any], tool: str, tool_input: dict[str, Any], output: str = "") -> Any:
    return d.observe(state, tool=tool, tool_input=tool_input, failed=False, output=output)


def failed(text: str, command: str = "python run.py", exit_failed: bool = True) -> Any:
    return read_failure(text, failed=exit_failed, command=command)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        # line numbers, temporary folders, object addresses, durations differ between reruns
        (
            "Exit code 1\nTraceback\n  File \"/tmp/a1/x.py\", line 12\nKeyError: 'k'",
            "Exit code 1\nTraceback\n  File \"/tmp/b7/x.py\", line 99\nKeyError: 'k'",
        ),
        (
            "Exit code 2\nE  ValueError: <Foo at 0x7f3a2c1b>",
            "Exit code 2\nE  ValueError: <Foo at 0x55d>",
        ),
        (
            "Exit code 1\n=== 3 failed, 10 passed in 0.52s ===",
            "Exit code 1\n=== 2 failed, 11 passed in 1.07s ===",
        ),
        (
            "Exit code 128\nfatal: bad object 4f2a9c1d",
            "Exit code 128\nfatal: bad object 9e8d7c6b5a",
        ),
        # the same missing module, reworded; the same test failing beside different others
        (
            "Exit code 1\nModuleNotFoundError: No module named 'yaml'",
            "Exit code 1\nImportError: No module named yaml.constructor",
        ),
        (
            "Exit code 1\nFAILED t.py::test_a - KeyError\n=== 1 failed in 1s ===",
            "Exit code 1\nFAILED t.py::test_a - KeyError: 'x'\n=== 1 failed in 2s ===",
        ),
    ],
)
def test_same_cause_in_changing_text(a: str, b: str) -> None:
    assert failed(a).cause == failed(b).cause
    assert failed(a).kind == "failed"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Exit code 1\nKeyError: 'k'", "Exit code 1\nImportError: cannot import name k"),
        (
            "Exit code 1\nOperationalError: no such table: app_book",
            "Exit code 1\nIndentationError: unexpected indent",
        ),
    ],
)
def test_different_causes_differ(a: str, b: str) -> None:
    assert failed(a).cause != failed(b).cause


def test_text_shows_a_failure_behind_exit_zero() -> None:
    # `python x.py | tail -3` exits 0 while its text ends in the exception
    piped = (
        '<returncode>0</returncode>\n<output>\n  File "x.py", line 3\nValueError: bad\n</output>'
    )
    reading = failed(piped, "python x.py | tail -3", exit_failed=False)
    assert (reading.kind, reading.cause) == ("failed", "ValueError: bad")
    # a traceback long before normal output at the end is not the call's failure
    early = "ValueError: bad\n" + "\n".join(f"row {i}" for i in range(10))
    assert failed(early, "python x.py", exit_failed=False).kind == "ok"
    # only shell output is read that way: a file's content is not a failure
    assert read_failure("ValueError: bad", failed=False, shell=False).kind == "ok"


@pytest.mark.parametrize(
    ("text", "command", "kind"),
    [
        ("<returncode>1</returncode>\n<output>\n</output>", "grep -rn foo src", "expected"),
        ("Exit code 1", "find . -name x | grep y", "expected"),
        ("Exit code 1\n--- a\n+++ b", "diff a b", "expected"),
        (
            "Exit code 16\nx.py:1:0: C0114: Missing docstring\nrated at 5.00/10",
            "pylint x.py",
            "expected",
        ),
        ("Found 4 matches of the string to replace, but replace_all is false.", "", "expected"),
        (
            "Exit code 1\nbash: line 1: cd: nowhere: No such file or directory",
            "cd nowhere",
            "trivial",
        ),
        ("Exit code 127\nbash: line 1: pytest: command not found", "pytest", "trivial"),
        ("Exit code 2\ngrep: src: No such file or directory", "grep -r x src", "failed"),
        # the error words are matched ignoring case as `re` folds it (dotless i, long s)
        ("Exit code 1\nfa\u0131led to open the index\ndone", "grep foo x", "failed"),
        ("Exit code 1\nno \u017fuch file: x\ndone", "grep foo x", "failed"),
    ],
)
def test_expected_and_trivial_failures_are_read_as_such(text: str, command: str, kind: str) -> None:
    assert read_failure(text, failed=True, command=command).kind == kind


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
    assert trigger["signature"] == "AssertionError: N != N"
    assert trigger["command"] == "pytest tests/test_login.py"


def test_one_cause_counts_across_commands_and_trivial_slips_do_not_break_it() -> None:
    state = d.fresh_state()
    commands = ["pytest -x t.py", "pytest -s t.py", "python -m pytest t.py", "pytest t.py -k a"]
    trigger = None
    for i, command in enumerate(commands):
        trigger = fail(
            state, command, "Exit code 1\nE   TypeError: object of type 'X' has no len()"
        )
        if i < 3:
            assert trigger is None
            # a slip and a search that finds nothing between attempts change nothing
            fail(
                state, "cd build", "Exit code 1\nbash: line 1: cd: build: No such file or directory"
            )
            fail(state, "grep -n len src/a.py", "Exit code 1")
    assert trigger is not None and trigger["attempt"] == 4
    assert trigger["signature"] == "TypeError: object of type 'X' has no len()"


def test_different_errors_do_not_add_up_until_the_command_streak() -> None:
    state = d.fresh_state()
    errors = ["KeyError: a", "TypeError: b", "NameError: c", "OSError: d", "ValueError: e"]
    assert all(fail(state, "python run.py", f"Exit code 1\n{e}") is None for e in errors)
    causes = {k: v["count"] for k, v in state["streaks"].items()}
    assert max(v for k, v in causes.items() if not k.startswith(d.COMMAND_CAUSE)) == 1
    # the same command failing with one new error after another: at threshold + COMMAND_EXTRA
    trigger = fail(state, "python run.py", "Exit code 1\nZeroDivisionError: f")
    assert trigger is not None and trigger["attempt"] == 4 + d.COMMAND_EXTRA
    assert trigger["signature"] == d.COMMAND_CAUSE + "Bash python run.py"
    assert "The same command has now failed 6 times" in d.escalation_context(trigger)
    (block,) = parse_escalations(d.escalation_payload(trigger))
    assert validate_trigger(block) == () and block.attempt == 6


def test_other_successes_do_not_reset_but_a_success_of_the_command_does() -> None:
    state = d.fresh_state()
    for _ in range(3):
        assert fail(state, "pytest", "Exit code 1\nAssertionError: no") is None
        ok(state, "Edit", {"file_path": "src/app.py"})  # the fix attempt itself succeeds
        ok(state, "Bash", bash("git diff"))
    assert fail(state, "pytest", "Exit code 1\nAssertionError: no")["attempt"] == 4
    assert state["files"] == ["src/app.py"]
    ok(state, "Bash", bash("pytest"), "=== 3 passed in 0.1s ===")  # it works now
    assert state["streaks"] == {}
    assert fail(state, "pytest", "Exit code 1\nAssertionError: no") is None


def test_noise_on_every_python_start_is_learnt_and_dropped() -> None:
    pth = (
        "Error processing line 1 of /env/site-packages/distutils-precedence.pth:\n"
        "  Traceback (most recent call last):\n"
        "  ModuleNotFoundError: No module named '_distutils_hack'\n"
        "Remainder of file ignored\n"
    )
    state = d.fresh_state()
    for name in ("a", "b", "c", "d"):  # commands that work print the same traceback first
        ok(state, "Bash", bash(f"python -c 'import {name}'"), pth + name)
    assert d.noise_lines(state)
    # now a real failure behind the noise is read by its own line, and the noise is no cause
    for _ in range(3):
        fail(state, "python app.py", "Exit code 1\n" + pth + "KeyError: 'user'")
    causes = [k for k in state["streaks"] if not k.startswith(d.COMMAND_CAUSE)]
    assert causes == ["KeyError: 'user'"]


def test_threshold_zero_disables() -> None:
    state = d.fresh_state()
    assert all(fail(state, "make", "Exit code 2\nerror: x", threshold=0) is None for _ in range(10))
    assert max(v["count"] for v in state["streaks"].values()) == 10


def test_signatures_are_bounded() -> None:
    state = d.fresh_state()
    for i in range(d.MAX_SIGNATURES + 10):
        fail(state, f"cmd-{'x' * (i + 1)}", f"Exit code 1\nValueError: {'y' * (i + 1)}")
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
    assert "cannot find value" in block.first("error_signature")
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
