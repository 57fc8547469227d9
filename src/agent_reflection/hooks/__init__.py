"""Claude Code hooks: the Stop hook (capture) and the settings installer.

Everything Claude Code runs from here imports only the standard library and the package's
stdlib-only modules (``sidecar``, ``risk_floor``, ``errors``, ``hooks.*``): start-up time is paid
on every agent stop. Keep it that way (``tests/test_hook_stop.py`` checks it).
"""
