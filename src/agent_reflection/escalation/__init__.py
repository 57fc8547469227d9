"""The escalation contract of the reflection (unblocker) agent: parse, validate, route, render.

``contract`` (the payloads and their checks), ``router`` (where an escalation goes) and
``install`` (the agent definition written into ``.claude/agents/``). Stdlib only: the
SubagentStop hook imports it.
"""

from agent_reflection.escalation.contract import (
    FAILURE_LAYERS,
    OUTPUT_KINDS,
    RETRY_PACKET_FIELDS,
    TERMINAL_FIELDS,
    Block,
    ContractError,
    InvalidEscalation,
    OutputCheck,
    check_output,
    parse_escalations,
    parse_retry_packets,
    rejected_paths_in,
    validate_retry_packet,
    validate_terminal,
    validate_trigger,
)
from agent_reflection.escalation.router import (
    CLEAN_HANDOFF_MAX_CHARS,
    CLEAN_HANDOFF_MAX_TURNS,
    OUTCOMES,
    Handoff,
    RouteDecision,
    render_terminal_escalation,
    route_escalation,
)

__all__ = [
    "CLEAN_HANDOFF_MAX_CHARS",
    "CLEAN_HANDOFF_MAX_TURNS",
    "FAILURE_LAYERS",
    "OUTCOMES",
    "OUTPUT_KINDS",
    "RETRY_PACKET_FIELDS",
    "TERMINAL_FIELDS",
    "Block",
    "ContractError",
    "Handoff",
    "InvalidEscalation",
    "OutputCheck",
    "RouteDecision",
    "check_output",
    "parse_escalations",
    "parse_retry_packets",
    "rejected_paths_in",
    "render_terminal_escalation",
    "route_escalation",
    "validate_retry_packet",
    "validate_terminal",
    "validate_trigger",
]
