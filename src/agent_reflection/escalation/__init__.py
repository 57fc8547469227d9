"""Moved into :mod:`agent_reflection.in_loop` (``escalation_contract``, ``escalation_router``,
``agent_install``, ``replies``). Only :mod:`.contract` is left here, as an alias for
``load/transcripts.py`` until it imports from the new home; then delete this package."""
