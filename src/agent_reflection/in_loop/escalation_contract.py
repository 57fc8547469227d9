"""The escalation contract: parse and validate ``<ESCALATION>`` blocks, retry packets and the
reflection agent's reply.

Block syntax (inside ``<ESCALATION> … </ESCALATION>`` or ``<RETRY_PACKET> … </RETRY_PACKET>``):
a line ``field: value`` starts a field; the lines ``- item`` after it add items to it::

    <ESCALATION>
    status: blocked
    attempt: [ATTEMPT: 4]
    suspected_failure_layer:
    - environment
    </ESCALATION>

Validation returns :class:`ContractError` tuples (field + problem) instead of raising, so a
caller can report every problem at once. Stdlib only (the SubagentStop hook imports it).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from agent_reflection.errors import ReflectionError

#: Suspected failure layers a terminal payload may name.
FAILURE_LAYERS: tuple[str, ...] = (
    "architecture",
    "environment",
    "dependency",
    "source_snapshot",
    "handoff_protocol",
    "unknown",
)
#: A retry packet may also name the two layers that have their own output kinds
#: (``contract_correction``, ``test_harness_fix``).
RETRY_FAILURE_LAYERS: tuple[str, ...] = (*FAILURE_LAYERS, "contract", "test_harness")
#: Sections of a terminal escalation payload, in order.
TERMINAL_FIELDS: tuple[str, ...] = (
    "status",
    "attempt",
    "task_scope",
    "suspected_failure_layer",
    "what_was_tried",
    "what_did_not_work",
    "forced_context_checked",
    "current_invariants",
    "handoff_artifacts",
    "request",
)
#: The seven fields of a retry packet for the coder.
RETRY_PACKET_FIELDS: tuple[str, ...] = (
    "new_hypothesis",
    "failure_layer",
    "files_to_recheck",
    "forced_checklist",
    "constraints",
    "what_not_to_retry",
    "decision_memory_notes",
)
#: The reflection agent's reply is exactly one of these kinds.
OUTPUT_KINDS: tuple[str, ...] = (
    "contract_correction",
    "architecture_correction",
    "environment_fix",
    "test_harness_fix",
    "retry_packet_for_coder",
    "need_context",
    "escalation",
    "coherence_check_failed",
)
#: Output kinds declared by a first-column ``output: <kind>`` line.
DECLARED_KINDS: tuple[str, ...] = OUTPUT_KINDS[:4]
#: Minimum attempt of a valid trigger: the coder escalates from its fourth attempt on.
TRIGGER_MIN_ATTEMPT = 4

_ATTEMPT = re.compile(r"\[ATTEMPT:\s*(\d+)\s*\+?\]")
_FIELD = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*:\s*(.*)$")
_ITEM = re.compile(r"^\s*[-*]\s+(.*\S)\s*$")
_NEED_CONTEXT = re.compile(r"\[NEED_CONTEXT:\s*([^\]\s]+)\s*\]")
_COHERENCE = "[COHERENCE_CHECK_FAILED]"
_DECLARED = re.compile(r"^output:\s*([a-z_]+)\s*$", re.M)


class InvalidEscalation(ReflectionError, ValueError):
    """An escalation payload cannot be built: ``field`` is missing or holds a bad value."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"escalation field {field!r}: {problem}")


@dataclass(frozen=True)
class ContractError:
    """One problem with a block: the field it concerns and what is wrong."""

    field: str
    problem: str

    def __str__(self) -> str:
        return f"{self.field}: {self.problem}"


@dataclass(frozen=True)
class Block:
    """A parsed ``<ESCALATION>`` or ``<RETRY_PACKET>`` block."""

    tag: str
    fields: Mapping[str, tuple[str, ...]]
    raw: str
    start: int
    end: int

    def values(self, name: str) -> tuple[str, ...]:
        return self.fields.get(name, ())

    def first(self, name: str) -> str:
        vals = self.values(name)
        return vals[0] if vals else ""

    @property
    def status(self) -> str:
        return self.first("status").strip().lower()

    @property
    def attempt(self) -> int | None:
        """N of ``attempt: [ATTEMPT: N]``; ``None`` when absent or malformed."""
        match = _ATTEMPT.search(" ".join(self.values("attempt")))
        return int(match.group(1)) if match else None

    @property
    def failure_layers(self) -> tuple[str, ...]:
        name = "suspected_failure_layer" if self.tag == "ESCALATION" else "failure_layer"
        return tuple(v.strip().lower() for v in self.values(name))


def _parse_fields(body: str) -> dict[str, tuple[str, ...]]:
    fields: dict[str, list[str]] = {}
    current: str | None = None
    for line in textwrap.dedent(body).splitlines():
        if not line.strip():
            continue
        item = _ITEM.match(line)
        field = None if line[:1].isspace() else _FIELD.match(line)
        if field and not item:
            current = field.group(1).lower()
            values = fields.setdefault(current, [])
            if field.group(2).strip():
                values.append(field.group(2).strip())
        elif current is not None:
            text = item.group(1) if item else line.strip()
            fields[current].append(text)
    return {k: tuple(v) for k, v in fields.items()}


def parse_blocks(text: str, tag: str) -> tuple[Block, ...]:
    """Every ``<TAG> … </TAG>`` block of ``text`` in order.

    The opening tag must start a line (indentation allowed), so prose that merely mentions
    ``<TAG>`` is not a block; an unclosed block runs to the end of the text.
    """
    pattern = re.compile(rf"^[ \t]*<{tag}>(.*?)(?:</{tag}>|\Z)", re.S | re.M)
    return tuple(
        Block(tag, _parse_fields(m.group(1)), m.group(0), *m.span()) for m in pattern.finditer(text)
    )


def parse_escalations(text: str) -> tuple[Block, ...]:
    """Every ``<ESCALATION>`` block in ``text``."""
    return parse_blocks(text, "ESCALATION")


def find_attempts(text: str) -> tuple[int, ...]:
    """Every ``[ATTEMPT: N]`` in ``text``, in order."""
    return tuple(int(m.group(1)) for m in _ATTEMPT.finditer(text))


def _check_attempt_and_status(block: Block) -> list[ContractError]:
    errors = []
    if "status" not in block.fields:
        errors.append(ContractError("status", "missing; write `status: blocked`"))
    elif block.status != "blocked":
        errors.append(ContractError("status", f"must be 'blocked', got {block.first('status')!r}"))
    if "attempt" not in block.fields:
        errors.append(ContractError("attempt", "missing; write `attempt: [ATTEMPT: N]`"))
    elif block.attempt is None:
        errors.append(
            ContractError("attempt", f"must read [ATTEMPT: N], got {block.first('attempt')!r}")
        )
    return errors


def _check_layers(block: Block, name: str, allowed: tuple[str, ...]) -> list[ContractError]:
    layers = block.failure_layers
    if not layers:
        return [ContractError(name, f"missing or empty; name one of {', '.join(allowed)}")]
    bad = [v for v in layers if v not in allowed]
    if bad:
        return [ContractError(name, f"{bad[0]!r} is not one of {', '.join(allowed)}")]
    return []


def validate_trigger(block: Block) -> tuple[ContractError, ...]:
    """Problems that stop ``block`` from invoking the reflection agent (empty: valid)."""
    errors = _check_attempt_and_status(block)
    attempt = block.attempt
    if attempt is not None and attempt < TRIGGER_MIN_ATTEMPT:
        errors.append(
            ContractError(
                "attempt",
                f"[ATTEMPT: {attempt}] is below {TRIGGER_MIN_ATTEMPT}: the coder escalates only "
                "from its fourth attempt (misrouted)",
            )
        )
    return tuple(errors)


def validate_terminal(block: Block) -> tuple[ContractError, ...]:
    """Problems with a terminal escalation payload (every section, valid values)."""
    errors = _check_attempt_and_status(block)
    for name in TERMINAL_FIELDS[2:]:
        if name == "suspected_failure_layer":
            errors += _check_layers(block, name, FAILURE_LAYERS)
        elif not block.values(name):
            errors.append(ContractError(name, "missing or empty section"))
    return tuple(errors)


def validate_retry_packet(block: Block) -> tuple[ContractError, ...]:
    """Problems with a retry packet (all seven fields, a known failure layer)."""
    errors = []
    for name in RETRY_PACKET_FIELDS:
        if name == "failure_layer":
            errors += _check_layers(block, name, RETRY_FAILURE_LAYERS)
        elif not block.values(name):
            errors.append(ContractError(name, "missing or empty field"))
    return tuple(errors)


@dataclass(frozen=True)
class OutputCheck:
    """What the reflection agent replied and whether it keeps the contract."""

    kind: str | None
    problems: tuple[ContractError, ...]
    need_context: str | None = None
    attempt: int | None = None
    failure_layers: tuple[str, ...] = ()

    @property
    def valid(self) -> bool:
        return self.kind is not None and not self.problems


def check_output(text: str, *, rejected_paths: Iterable[str] = ()) -> OutputCheck:
    """Classify and validate a reflection-agent reply (table B10, B8, B9, B12).

    The reply must be exactly one output kind: a first-column ``output: <kind>`` line for the
    four corrections, a ``<RETRY_PACKET>``, one ``<ESCALATION>``, a ``[NEED_CONTEXT: target]``
    or ``[COHERENCE_CHECK_FAILED]``. A reply that proposes a path tagged ``@REJECTED`` (given in
    ``rejected_paths``) outside its ``what_not_to_retry`` field is refused unless it carries a
    ``<DECISION_REVISION>`` block.
    """
    kinds = [m.group(1) for m in _DECLARED.finditer(text)]
    if parse_blocks(text, "RETRY_PACKET"):
        kinds.append("retry_packet_for_coder")
    if parse_escalations(text):
        kinds.append("escalation")
    if _NEED_CONTEXT.search(text):
        kinds.append("need_context")
    if _COHERENCE in text:
        kinds.append("coherence_check_failed")
    problems: list[ContractError] = []
    unknown = [k for k in kinds if k not in OUTPUT_KINDS]
    if unknown:
        allowed = ", ".join(DECLARED_KINDS)
        problems.append(ContractError("output", f"{unknown[0]!r} is not one of {allowed}"))
    if not kinds:
        problems.append(ContractError("output", "no output kind found; reply with exactly one"))
        return OutputCheck(None, tuple(problems))
    if len(kinds) > 1:
        problems.append(
            ContractError("output", f"exactly one output kind allowed, found {', '.join(kinds)}")
        )
    kind = kinds[0] if kinds[0] in OUTPUT_KINDS else None
    need = _NEED_CONTEXT.search(text)
    attempt = None
    layers: tuple[str, ...] = ()
    if kind == "escalation":
        blocks = parse_escalations(text)
        if len(blocks) > 1:
            problems.append(ContractError("ESCALATION", "exactly one terminal block allowed"))
        problems += validate_terminal(blocks[0])
        outside = (text[: blocks[0].start] + text[blocks[-1].end :]).strip()
        if outside:
            problems.append(
                ContractError("ESCALATION", "terminal mode returns only the payload, no prose")
            )
        attempt, layers = blocks[0].attempt, blocks[0].failure_layers
    elif kind == "retry_packet_for_coder":
        packet = parse_blocks(text, "RETRY_PACKET")[0]
        problems += validate_retry_packet(packet)
        layers = packet.failure_layers
    problems += check_decision_memory(text, rejected_paths)
    return OutputCheck(kind, tuple(problems), need.group(1) if need else None, attempt, layers)


def check_decision_memory(text: str, rejected_paths: Iterable[str]) -> tuple[ContractError, ...]:
    """A proposal that re-introduces an ``@REJECTED`` path, without a revision packet (B12)."""
    if parse_blocks(text, "DECISION_REVISION"):
        return ()
    proposal = text
    for packet in parse_blocks(text, "RETRY_PACKET"):
        avoided = "\n".join(packet.values("what_not_to_retry"))
        proposal = proposal.replace(avoided, "") if avoided else proposal
    errors = []
    for path in rejected_paths:
        if path and path in proposal:
            errors.append(
                ContractError(
                    "decision_memory",
                    f"re-introduces {path!r}, tagged @REJECTED; choose another path or attach a "
                    "<DECISION_REVISION> block stating what new evidence changed",
                )
            )
    return tuple(errors)


_REJECTED_TAG = re.compile(r"@REJECTED:?\s*(\S.*?)\s*$", re.M)


def rejected_paths_in(text: str) -> tuple[str, ...]:
    """What each ``@REJECTED <path or approach>`` tag in ``text`` protects."""
    return tuple(m.group(1) for m in _REJECTED_TAG.finditer(text))
