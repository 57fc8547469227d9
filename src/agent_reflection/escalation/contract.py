"""Alias of :mod:`agent_reflection.in_loop.escalation_contract` for ``load/transcripts.py``,
which imports these four names from here; delete it once that import names the new home."""

from agent_reflection.in_loop.escalation_contract import (
    Block,
    parse_escalations,
    validate_terminal,
    validate_trigger,
)

__all__ = ["Block", "parse_escalations", "validate_terminal", "validate_trigger"]
