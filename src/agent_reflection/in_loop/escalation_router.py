"""Route an escalation to exactly one outcome, and render the bounded terminal payload.

Two attempt counters meet here. The *trigger* attempt is the coder's ``[ATTEMPT: N]`` inside
the ``<ESCALATION>`` block: only 4+ invokes the reflection agent. The *rescue* attempt is the
reflection loop's own ``[ATTEMPT: N]`` (:attr:`Handoff.rescue_attempt`): 1–2 unblocker, 3 context
override, 4+ terminal.

Checks run in this order; the first that applies decides:

1. no ``<ESCALATION>`` block, or one that is not a valid trigger (status, attempt < 4):
   ``[NEED_CONTEXT: escalation_payload]``;
2. rescue attempt 4+: ``terminal``, with one bounded payload (nothing else is produced);
3. a polluted handoff (see :data:`CLEAN_HANDOFF_MAX_CHARS`, :data:`CLEAN_HANDOFF_MAX_TURNS`):
   ``[NEED_CONTEXT: clean_handoff]``;
4. contradicting facts between contract, forced context and runtime evidence:
   ``[COHERENCE_CHECK_FAILED]``;
5. rescue attempt 3: ``context_override``; 1–2: ``unblocker``.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from agent_reflection.in_loop.escalation_contract import (
    FAILURE_LAYERS,
    Block,
    ContractError,
    InvalidEscalation,
    find_attempts,
    parse_escalations,
    validate_trigger,
)
from agent_reflection.in_loop.loop_detector import one_line

NEED_ESCALATION_PAYLOAD = "[NEED_CONTEXT: escalation_payload]"
NEED_CLEAN_HANDOFF = "[NEED_CONTEXT: clean_handoff]"
COHERENCE_CHECK_FAILED = "[COHERENCE_CHECK_FAILED]"
UNBLOCKER = "unblocker"
CONTEXT_OVERRIDE = "context_override"
TERMINAL = "terminal"
OUTCOMES: tuple[str, ...] = (
    UNBLOCKER,
    CONTEXT_OVERRIDE,
    TERMINAL,
    NEED_ESCALATION_PAYLOAD,
    NEED_CLEAN_HANDOFF,
    COHERENCE_CHECK_FAILED,
)

#: A handoff is polluted when the text outside the bounded payload (the escalation text around
#: the block plus :attr:`Handoff.history`) exceeds this many characters ...
CLEAN_HANDOFF_MAX_CHARS = 4000
#: ... or carries at least this many conversation turns (lines opening with a speaker such as
#: ``assistant:``, ``user:``, ``coder:``, ``Human:``, a transcript record ``{"type":
#: "assistant"``, or an ``[ATTEMPT: N]`` marker outside the block).
CLEAN_HANDOFF_MAX_TURNS = 6
_TURN = re.compile(
    r'^\s*(?:(?:user|assistant|human|ai|coder|agent|model|tool|thinking)\s*[:>]|\{"type":\s*"(?:user|assistant)")',
    re.I | re.M,
)
_FACT = re.compile(r"^\s*@(?:FACT|PRE|POST|INVARIANT)\s+([A-Za-z_][\w.\-/]*)\s*=\s*(.+?)\s*$", re.M)

#: Bounds of the terminal payload: items per section and characters per item.
TERMINAL_MAX_ITEMS = 5
TERMINAL_MAX_ITEM_CHARS = 200
DEFAULT_REQUEST = (
    "Escalate above reflection layer. Do not re-run coder or reflection with the same "
    "context packet."
)


@dataclass(frozen=True)
class Handoff:
    """What the parent hands the reflection agent besides the escalation text."""

    original_task: str = ""
    forced_context: str = ""
    runtime_evidence: str = ""
    history: str = ""
    rescue_attempt: int = 1
    snapshot: str = ""


@dataclass(frozen=True)
class RouteDecision:
    """Exactly one outcome (one of :data:`OUTCOMES`), why, and the terminal payload if any."""

    outcome: str
    reason: str
    trigger_attempt: int | None = None
    rescue_attempt: int | None = None
    problems: tuple[ContractError, ...] = ()
    payload: str | None = None
    failure_layers: tuple[str, ...] = ()


def contradictions(handoff: Handoff) -> tuple[str, ...]:
    """Keys two sources assert with different values (contract, forced context, evidence),
    each through ``@FACT key = value`` lines (also ``@PRE``/``@POST``/``@INVARIANT``)."""
    sources = {
        name: {m.group(1): m.group(2) for m in _FACT.finditer(text)}
        for name, text in (
            ("original contract", handoff.original_task),
            ("forced context", handoff.forced_context),
            ("runtime evidence", handoff.runtime_evidence),
        )
    }
    found = []
    for a, b in itertools.combinations(sources, 2):
        for key in sorted(sources[a].keys() & sources[b].keys()):
            if sources[a][key] != sources[b][key]:
                found.append(f"{key}: {a} says {sources[a][key]!r}, {b} says {sources[b][key]!r}")
    return tuple(found)


def route_escalation(text: str, handoff: Handoff | None = None) -> RouteDecision:
    """The one allowed outcome for escalation ``text`` with ``handoff`` (see module doc)."""
    handoff = handoff or Handoff()
    blocks = parse_escalations(text)
    if not blocks:
        return RouteDecision(NEED_ESCALATION_PAYLOAD, "no <ESCALATION> block (missing trigger)")
    block = blocks[0]
    problems = validate_trigger(block)
    if problems:
        return RouteDecision(
            NEED_ESCALATION_PAYLOAD,
            "misrouted: " + "; ".join(str(p) for p in problems),
            block.attempt,
            problems=problems,
        )
    rescue = handoff.rescue_attempt  # the reflection agent's mode: 1-2, 3, then 4+
    if rescue < 1:
        raise InvalidEscalation("rescue_attempt", f"must be >= 1, got {rescue}")
    mode = UNBLOCKER if rescue <= 2 else CONTEXT_OVERRIDE if rescue == 3 else TERMINAL
    layers = tuple(v for v in block.failure_layers if v in FAILURE_LAYERS)
    if mode == TERMINAL:
        payload = terminal_payload_from(block, handoff)
        return RouteDecision(
            TERMINAL,
            f"rescue attempt {rescue} >= 4: reflection-level rescue is blocked too",
            block.attempt,
            rescue,
            payload=payload,
            failure_layers=layers or ("unknown",),
        )
    # What the handoff carries outside the bounded payload: characters and conversation turns.
    outside = text[: block.start] + text[block.end :]
    extra = f"{outside}\n{handoff.history}"
    chars = len(outside.strip()) + len(handoff.history.strip())
    turns = len(_TURN.findall(extra)) + len(find_attempts(extra))
    if chars > CLEAN_HANDOFF_MAX_CHARS or turns >= CLEAN_HANDOFF_MAX_TURNS:
        return RouteDecision(
            NEED_CLEAN_HANDOFF,
            f"handoff carries {chars} characters and {turns} turns of prior "
            f"reasoning (limits: {CLEAN_HANDOFF_MAX_CHARS} characters, "
            f"{CLEAN_HANDOFF_MAX_TURNS} turns)",
            block.attempt,
            rescue,
        )
    clashes = contradictions(handoff)
    if clashes:
        return RouteDecision(COHERENCE_CHECK_FAILED, "; ".join(clashes), block.attempt, rescue)
    reason = (
        "rescue attempt 3: re-check forced context / checklist before any new theory"
        if mode == CONTEXT_OVERRIDE
        else f"rescue attempt {rescue}: one materially different hypothesis, one unblock action"
    )
    return RouteDecision(mode, reason, block.attempt, rescue, failure_layers=layers)


def _bounded(items: Sequence[str], name: str) -> list[str]:
    cleaned = [one_line(str(i), TERMINAL_MAX_ITEM_CHARS) for i in items if str(i).strip()]
    if not cleaned:
        raise InvalidEscalation(name, "needs at least one item")
    out = cleaned[:TERMINAL_MAX_ITEMS]
    if len(cleaned) > TERMINAL_MAX_ITEMS:
        out[-1] = f"{out[-1]} (+{len(cleaned) - TERMINAL_MAX_ITEMS} more)"
    return out


def render_terminal_escalation(
    *,
    attempt: int,
    task_scope: str,
    suspected_failure_layers: Sequence[str],
    what_was_tried: Sequence[str],
    what_did_not_work: Sequence[str],
    forced_context_checked: Sequence[str],
    current_invariants: Sequence[str],
    handoff_artifacts: Sequence[str],
    request: str = DEFAULT_REQUEST,
) -> str:
    """The one bounded ``<ESCALATION>`` payload of terminal mode (every section, in order).

    Sections hold at most :data:`TERMINAL_MAX_ITEMS` items of at most
    :data:`TERMINAL_MAX_ITEM_CHARS` characters each. Raises :class:`InvalidEscalation` naming
    the field when a section is empty or a layer is not one of :data:`FAILURE_LAYERS`.
    """
    if attempt < 1:
        raise InvalidEscalation("attempt", f"must be >= 1, got {attempt}")
    layers = [layer.strip().lower() for layer in suspected_failure_layers]
    for layer in layers:
        if layer not in FAILURE_LAYERS:
            raise InvalidEscalation(
                "suspected_failure_layer", f"{layer!r} is not one of {', '.join(FAILURE_LAYERS)}"
            )
    scope = _bounded([task_scope], "task_scope")[0]
    lines = ["<ESCALATION>", "status: blocked", f"attempt: [ATTEMPT: {attempt}]"]
    lines.append(f"task_scope: {scope}")
    sections = [
        (
            "suspected_failure_layer",
            _bounded(list(dict.fromkeys(layers)), "suspected_failure_layer"),
        ),
        ("what_was_tried", _bounded(what_was_tried, "what_was_tried")),
        ("what_did_not_work", _bounded(what_did_not_work, "what_did_not_work")),
        ("forced_context_checked", _bounded(forced_context_checked, "forced_context_checked")),
        ("current_invariants", _bounded(current_invariants, "current_invariants")),
        ("handoff_artifacts", _bounded(handoff_artifacts, "handoff_artifacts")),
        ("request", _bounded([request], "request")),
    ]
    for name, items in sections:
        lines.append(f"{name}:")
        lines += [f"- {item}" for item in items]
    lines.append("</ESCALATION>")
    return "\n".join(lines)


def _or_none(values: Sequence[str], fallback: str) -> list[str]:
    return list(values) if values else [fallback]


def terminal_payload_from(block: Block, handoff: Handoff) -> str:
    """The terminal payload for a rescue that is out of attempts, from what is known."""
    task = handoff.original_task.strip().splitlines()[0] if handoff.original_task.strip() else ""
    evidence = handoff.runtime_evidence.strip().splitlines()
    layers = [v for v in block.failure_layers if v in FAILURE_LAYERS] or ["unknown"]
    return render_terminal_escalation(
        attempt=handoff.rescue_attempt,
        task_scope="reflection rescue summary" + (f": {task}" if task else ""),
        suspected_failure_layers=layers,
        what_was_tried=_or_none(block.values("what_was_tried"), "not reported in the trigger"),
        what_did_not_work=_or_none(
            block.values("what_did_not_work"), "reflection rescue stayed blocked"
        ),
        forced_context_checked=_or_none(
            block.values("forced_context_checked"),
            "forced context re-checked" if handoff.forced_context.strip() else "none provided",
        ),
        current_invariants=_or_none(block.values("current_invariants"), "none recorded"),
        handoff_artifacts=[
            f"original task reference: {task or 'not provided'}",
            f"escalation payload received: [ATTEMPT: {block.attempt}]",
            f"clean snapshot reference: {handoff.snapshot.strip() or 'not provided'}",
            f"latest blocking signal: {evidence[-1] if evidence else 'not provided'}",
        ],
    )
