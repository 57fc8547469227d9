"""Claude Code hooks: the Stop hook (capture), the settings installer, the cadence checkpoint
(``PostToolUse`` / ``UserPromptSubmit``) and the reflection agent's ``SubagentStop`` check.

Everything Claude Code runs from here imports only the standard library and the package's
stdlib-only modules (``_sidecar_core``, ``_risk_core``, ``errors``, ``cadence``,
``escalation``, ``hooks.*``): start-up time is paid on every agent stop or tool call. Keep it
that way (``tests/test_hook_stop.py`` checks it). The hooks exit 0 on every fault.
"""
