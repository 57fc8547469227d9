"""Claude Code hooks: what runs inside other people's agent sessions.

- ``stop`` + ``capture`` (+ ``gitstate``, ``paths``, ``mode``, ``outcome``): the Stop hook that
  writes the reflection.v1 sidecar; ``config``: its environment settings.
- ``cadence``: the cadence checkpoint (``PostToolUse`` / ``UserPromptSubmit``).
- ``subagent_stop``: the reflection agent's ``SubagentStop`` contract check.
- ``settings``: installs and removes the hooks in ``.claude/settings.json``.
- ``_entry``: the one entry wrapper every hook runs through (stdin, exit 0 on every fault);
  ``_json_lite``: JSON output without importing ``json``.

Everything Claude Code runs from here imports only the standard library and the package's
stdlib-only modules (``reflection.fields``, ``reflection.checks``, ``reflection.risk_floor``,
``errors``, ``in_loop.cadence``, ``escalation``, ``hooks.*``): start-up time is paid on every
agent stop or tool call. Keep it that way (``tests/test_hook_stop.py`` checks it). The hooks exit
0 on every fault.
"""
