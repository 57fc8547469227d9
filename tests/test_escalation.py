"""The escalation contract: spec table B1-B12 and the parsing/validation around it."""

from __future__ import annotations

import pytest

from agent_reflection.in_loop.escalation_contract import (
    FAILURE_LAYERS,
    RETRY_PACKET_FIELDS,
    TERMINAL_FIELDS,
    InvalidEscalation,
    check_output,
    parse_blocks,
    parse_escalations,
    rejected_paths_in,
    validate_retry_packet,
    validate_terminal,
    validate_trigger,
)
from agent_reflection.in_loop.escalation_router import (
    CLEAN_HANDOFF_MAX_CHARS,
    CLEAN_HANDOFF_MAX_TURNS,
    OUTCOMES,
    Handoff,
    render_terminal_escalation,
    route_escalation,
    terminal_payload_from,
)


def trigger(attempt: str = "[ATTEMPT: 4]", status: str = "blocked", extra: str = "") -> str:
    return (
        "The coder is stuck on the login test.\n"
        f"<ESCALATION>\nstatus: {status}\nattempt: {attempt}\n"
        "task_scope: make test_login pass\nsuspected_failure_layer:\n- environment\n"
        f"what_was_tried:\n- pinned requests\n- reset the fixture\n{extra}</ESCALATION>\n"
    )


RETRY = """<RETRY_PACKET>
new_hypothesis: the test runs against the system Python, not the venv
failure_layer: environment
files_to_recheck:
- tox.ini
- conftest.py
forced_checklist:
- which python
constraints:
- no new dependencies
what_not_to_retry:
- pinning requests again
decision_memory_notes:
- ADR-7 still holds
</RETRY_PACKET>"""


def terminal_payload(attempt: int = 4, layer: str = "dependency") -> str:
    return render_terminal_escalation(
        attempt=attempt,
        task_scope="reflection rescue summary: make test_login pass",
        suspected_failure_layers=[layer],
        what_was_tried=["checked the venv", "rebuilt the lock file"],
        what_did_not_work=["test still fails with ImportError"],
        forced_context_checked=["CHECKLIST item 1: python version"],
        current_invariants=["the API contract is unchanged"],
        handoff_artifacts=["original task reference: issue 12", "latest blocking signal: E0401"],
    )


@pytest.mark.spec
def test_b1_blocked_attempt_4_is_a_valid_trigger() -> None:
    (block,) = parse_escalations(trigger())
    assert validate_trigger(block) == ()
    decision = route_escalation(trigger(), Handoff(original_task="make test_login pass"))
    assert decision.outcome == "unblocker"
    assert decision.trigger_attempt == 4


@pytest.mark.spec
def test_b2_attempt_2_is_misrouted() -> None:
    decision = route_escalation(trigger("[ATTEMPT: 2]"))
    assert decision.outcome == "[NEED_CONTEXT: escalation_payload]"
    assert [p.field for p in decision.problems] == ["attempt"]
    assert "misrouted" in decision.reason


@pytest.mark.spec
@pytest.mark.parametrize(
    "text",
    [
        pytest.param("Please help, the tests keep failing.", id="B3-no-block"),
        pytest.param("status: blocked\nattempt: [ATTEMPT: 5]", id="B3-fields-without-block"),
        pytest.param(trigger(status="in_progress"), id="B3-not-blocked"),
        pytest.param(trigger(attempt="four"), id="B3-bad-attempt"),
    ],
)
def test_b3_missing_or_malformed_trigger(text: str) -> None:
    assert route_escalation(text).outcome == "[NEED_CONTEXT: escalation_payload]"


def failed_history(turns: int) -> str:
    return "\n".join(
        f"assistant: maybe the bug is in line {i}, let me patch it\nuser: still failing"
        for i in range(turns // 2)
    )


@pytest.mark.spec
@pytest.mark.parametrize(
    ("handoff", "expected"),
    [
        pytest.param(
            Handoff(history=failed_history(CLEAN_HANDOFF_MAX_TURNS)),
            "[NEED_CONTEXT: clean_handoff]",
            id="B4-turns-at-limit",
        ),
        pytest.param(
            Handoff(history=failed_history(CLEAN_HANDOFF_MAX_TURNS - 2)),
            "unblocker",
            id="B4-turns-below-limit",
        ),
        pytest.param(
            Handoff(history="x" * (CLEAN_HANDOFF_MAX_CHARS + 1)),
            "[NEED_CONTEXT: clean_handoff]",
            id="B4-chars-above-limit",
        ),
        pytest.param(
            Handoff(history="x" * CLEAN_HANDOFF_MAX_CHARS), "unblocker", id="B4-chars-at-limit"
        ),
    ],
)
def test_b4_polluted_handoff(handoff: Handoff, expected: str) -> None:
    bare = trigger()[trigger().index("<ESCALATION>") :]  # no prose around the block
    assert route_escalation(bare, handoff).outcome == expected


@pytest.mark.spec
def test_b4_prose_around_the_block_counts_towards_the_limit() -> None:
    prose = "y" * (CLEAN_HANDOFF_MAX_CHARS // 2 + 1)
    handoff = Handoff(history="x" * (CLEAN_HANDOFF_MAX_CHARS // 2))
    assert route_escalation(trigger(), handoff).outcome == "unblocker"
    assert route_escalation(prose + trigger(), handoff).outcome == ("[NEED_CONTEXT: clean_handoff]")


@pytest.mark.spec
def test_b4_replayed_attempts_around_the_block_count_as_turns() -> None:
    replay = "".join(f"[ATTEMPT: {i}] tried patch {i}\n" for i in range(1, 7))
    assert route_escalation(replay + trigger()).outcome == "[NEED_CONTEXT: clean_handoff]"
    assert route_escalation(trigger()).outcome == "unblocker"


@pytest.mark.spec
@pytest.mark.parametrize(
    ("rescue", "mode"),
    [
        pytest.param(1, "unblocker", id="B5-1"),
        pytest.param(2, "unblocker", id="B5-2"),
        pytest.param(3, "context_override", id="B6-3"),
        pytest.param(4, "terminal", id="B7-4"),
        pytest.param(5, "terminal", id="B7-5"),
        pytest.param(17, "terminal", id="B7-17"),
    ],
)
def test_b5_b6_b7_rescue_attempt_bands(rescue: int, mode: str) -> None:
    decision = route_escalation(trigger(), Handoff(rescue_attempt=rescue))
    assert decision.outcome == mode
    assert decision.outcome in OUTCOMES
    if mode == "terminal":
        assert decision.payload is not None
        assert len(parse_escalations(decision.payload)) == 1
        assert decision.payload.startswith("<ESCALATION>")
        assert decision.payload.endswith("</ESCALATION>")
        (block,) = parse_escalations(decision.payload)
        assert validate_terminal(block) == ()
        assert block.attempt == rescue
        assert check_output(decision.payload).valid
    else:
        assert decision.payload is None


@pytest.mark.spec
def test_b7_terminal_wins_over_a_polluted_handoff() -> None:
    handoff = Handoff(rescue_attempt=4, history=failed_history(40))
    assert route_escalation(trigger(), handoff).outcome == "terminal"


def test_rescue_attempt_zero_is_rejected() -> None:
    with pytest.raises(InvalidEscalation, match="rescue_attempt"):
        route_escalation(trigger(), Handoff(rescue_attempt=0))


@pytest.mark.spec
def test_b8_terminal_payload_has_every_section() -> None:
    (block,) = parse_escalations(terminal_payload())
    assert tuple(block.fields) == TERMINAL_FIELDS
    assert validate_terminal(block) == ()
    assert block.status == "blocked" and block.attempt == 4
    assert block.failure_layers == ("dependency",)


@pytest.mark.spec
@pytest.mark.parametrize("missing", TERMINAL_FIELDS)
def test_b8_each_missing_section_is_named(missing: str) -> None:
    lines = terminal_payload().splitlines()
    kept, skipping = [], False
    for line in lines:
        if line.split(":")[0] == missing:
            skipping = True
            continue
        if skipping and line.startswith("- "):
            continue
        skipping = False
        kept.append(line)
    (block,) = parse_escalations("\n".join(kept))
    assert [e.field for e in validate_terminal(block)] == [missing]


@pytest.mark.spec
@pytest.mark.parametrize("layer", FAILURE_LAYERS)
def test_b8_every_fixed_layer_is_accepted(layer: str) -> None:
    (block,) = parse_escalations(terminal_payload(layer=layer))
    assert validate_terminal(block) == ()


@pytest.mark.spec
def test_b8_unknown_layer_is_rejected_by_field() -> None:
    text = terminal_payload().replace("- dependency", "- database")
    (block,) = parse_escalations(text)
    (error,) = validate_terminal(block)
    assert error.field == "suspected_failure_layer" and "database" in error.problem
    with pytest.raises(InvalidEscalation, match="suspected_failure_layer"):
        render_terminal_escalation(
            attempt=4,
            task_scope="x",
            suspected_failure_layers=["database"],
            what_was_tried=["a"],
            what_did_not_work=["b"],
            forced_context_checked=["c"],
            current_invariants=["d"],
            handoff_artifacts=["e"],
        )


def test_render_refuses_empty_sections_by_name() -> None:
    with pytest.raises(InvalidEscalation, match="what_did_not_work"):
        render_terminal_escalation(
            attempt=4,
            task_scope="x",
            suspected_failure_layers=["unknown"],
            what_was_tried=["a"],
            what_did_not_work=[" "],
            forced_context_checked=["c"],
            current_invariants=["d"],
            handoff_artifacts=["e"],
        )


def test_render_is_bounded() -> None:
    payload = render_terminal_escalation(
        attempt=9,
        task_scope="t" * 1000,
        suspected_failure_layers=["unknown"],
        what_was_tried=[f"try {i} " + "y" * 500 for i in range(50)],
        what_did_not_work=["b"],
        forced_context_checked=["c"],
        current_invariants=["d"],
        handoff_artifacts=["e"],
    )
    (block,) = parse_escalations(payload)
    assert len(block.values("what_was_tried")) == 5
    assert all(len(v) <= 220 for vals in block.fields.values() for v in vals)
    assert "(+45 more)" in payload
    assert len(payload) < 3000


@pytest.mark.spec
def test_b9_retry_packet_has_seven_fields() -> None:
    (packet,) = parse_blocks(RETRY, "RETRY_PACKET")
    assert tuple(packet.fields) == RETRY_PACKET_FIELDS
    assert validate_retry_packet(packet) == ()
    assert packet.values("files_to_recheck") == ("tox.ini", "conftest.py")


@pytest.mark.spec
@pytest.mark.parametrize("missing", RETRY_PACKET_FIELDS)
def test_b9_missing_retry_field_is_named(missing: str) -> None:
    lines = [ln for ln in RETRY.splitlines() if not ln.startswith(f"{missing}:")]
    # drop the removed field's list items too (they would join the previous field otherwise)
    text = "\n".join(lines)
    if missing == "files_to_recheck":
        text = text.replace("- tox.ini\n- conftest.py\n", "")
    elif missing in (
        "forced_checklist",
        "constraints",
        "what_not_to_retry",
        "decision_memory_notes",
    ):
        item = {
            "forced_checklist": "- which python\n",
            "constraints": "- no new dependencies\n",
            "what_not_to_retry": "- pinning requests again\n",
            "decision_memory_notes": "- ADR-7 still holds\n",
        }[missing]
        text = text.replace(item, "")
    (packet,) = parse_blocks(text, "RETRY_PACKET")
    assert [e.field for e in validate_retry_packet(packet)] == [missing]


def test_retry_packet_bad_layer_is_named() -> None:
    (packet,) = parse_blocks(
        RETRY.replace("failure_layer: environment", "failure_layer: x"), "RETRY_PACKET"
    )
    (error,) = validate_retry_packet(packet)
    assert error.field == "failure_layer"


@pytest.mark.spec
@pytest.mark.parametrize(
    ("text", "kind"),
    [
        pytest.param(
            "output: contract_correction\n@PRE user_id: int",
            "contract_correction",
            id="B10-contract",
        ),
        pytest.param(
            "output: architecture_correction\nmove the cache",
            "architecture_correction",
            id="B10-architecture",
        ),
        pytest.param(
            "output: environment_fix\nexport PYTHONPATH=src",
            "environment_fix",
            id="B10-environment",
        ),
        pytest.param(
            "output: test_harness_fix\nthe fixture leaks", "test_harness_fix", id="B10-harness"
        ),
        pytest.param(RETRY, "retry_packet_for_coder", id="B10-retry"),
        pytest.param("[NEED_CONTEXT: source_snapshot]", "need_context", id="B10-need-context"),
        pytest.param(terminal_payload(), "escalation", id="B10-escalation"),
    ],
)
def test_b10_exactly_one_output_kind(text: str, kind: str) -> None:
    result = check_output(text)
    assert (result.kind, result.problems) == (kind, ())


@pytest.mark.spec
@pytest.mark.parametrize(
    "text",
    [
        pytest.param("I think we should try again.", id="B10-none"),
        pytest.param("output: environment_fix\n" + RETRY, id="B10-two-kinds"),
        pytest.param("output: rewrite_everything", id="B10-unknown-kind"),
        pytest.param("Here is my summary.\n" + terminal_payload(), id="B10-terminal-with-prose"),
        pytest.param(terminal_payload() + "\n" + terminal_payload(), id="B10-two-payloads"),
    ],
)
def test_b10_invalid_replies_say_why(text: str) -> None:
    result = check_output(text)
    assert not result.valid
    assert result.problems


def test_need_context_target_is_reported() -> None:
    assert check_output("[NEED_CONTEXT: clean_handoff]").need_context == "clean_handoff"


@pytest.mark.spec
def test_b11_contradicting_inputs() -> None:
    handoff = Handoff(
        original_task="Port the parser.\n@PRE python = 3.11\n@INVARIANT api_version = 2",
        forced_context="[FORCED_CONTEXT]\n@FACT python = 3.11",
        runtime_evidence="$ python --version\n@FACT python = 3.9",
    )
    decision = route_escalation(trigger(), handoff)
    assert decision.outcome == "[COHERENCE_CHECK_FAILED]"
    assert "python" in decision.reason and "3.9" in decision.reason
    assert check_output("[COHERENCE_CHECK_FAILED]\npython differs").kind == (
        "coherence_check_failed"
    )


@pytest.mark.spec
def test_b11_agreeing_inputs_route_normally() -> None:
    handoff = Handoff(
        original_task="@PRE python = 3.11",
        forced_context="@FACT python = 3.11",
        runtime_evidence="@FACT python = 3.11\n@FACT os = linux",
    )
    assert route_escalation(trigger(), handoff).outcome == "unblocker"


MEMORY = "# decisions\n@REJECTED src/cache/global_singleton.py\n@RATIONALE leaks across tests\n"


@pytest.mark.spec
def test_b12_fix_reintroducing_a_rejected_path_is_refused() -> None:
    rejected = rejected_paths_in(MEMORY)
    assert rejected == ("src/cache/global_singleton.py",)
    reply = RETRY.replace("- tox.ini", "- src/cache/global_singleton.py")
    result = check_output(reply, rejected_paths=rejected)
    assert not result.valid
    assert [p.field for p in result.problems] == ["decision_memory"]


@pytest.mark.spec
def test_b12_allowed_with_a_decision_revision_packet() -> None:
    rejected = rejected_paths_in(MEMORY)
    reply = RETRY.replace("- tox.ini", "- src/cache/global_singleton.py") + (
        "\n<DECISION_REVISION>\nrevises: src/cache/global_singleton.py\n"
        "new_evidence: tests now run in separate processes\n</DECISION_REVISION>"
    )
    assert check_output(reply, rejected_paths=rejected).valid


@pytest.mark.spec
def test_b12_naming_the_rejected_path_as_not_to_retry_is_fine() -> None:
    rejected = rejected_paths_in(MEMORY)
    reply = RETRY.replace("- pinning requests again", "- src/cache/global_singleton.py")
    assert check_output(reply, rejected_paths=rejected).valid


def test_terminal_payload_from_a_bare_trigger_is_valid() -> None:
    (block,) = parse_escalations(trigger("[ATTEMPT: 6]"))
    payload = terminal_payload_from(block, Handoff(rescue_attempt=4, original_task="port it"))
    (out,) = parse_escalations(payload)
    assert validate_terminal(out) == ()
    assert out.failure_layers == ("environment",)
    assert "escalation payload received: [ATTEMPT: 6]" in out.values("handoff_artifacts")


def test_parser_handles_indented_items_and_unclosed_block() -> None:
    (block,) = parse_escalations(
        "<ESCALATION>\nstatus: Blocked\nattempt: [ATTEMPT: 4+]\n"
        "what_was_tried:\n   * one\n   - two\n"
    )
    assert block.status == "blocked"
    assert block.attempt == 4
    assert block.values("what_was_tried") == ("one", "two")


def test_prose_mentioning_the_tag_is_not_a_block() -> None:
    text = "If needed, emit an <ESCALATION> block.\nstatus: blocked\n"
    assert parse_escalations(text) == ()
    assert route_escalation(text).outcome == "[NEED_CONTEXT: escalation_payload]"
