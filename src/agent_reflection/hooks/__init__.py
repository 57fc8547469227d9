"""Claude Code hooks: what runs inside other people's agent sessions. Thin entry points over
the packages that hold the work.

- ``stop`` + ``capture`` (+ ``gitstate``): the Stop hook that writes the reflection.v1
  sidecar; ``session_start``: the session's starting HEAD for it.
- ``in_loop``: one process per tool-call event for the cadence checkpoint and the anti-loop
  detector (:mod:`agent_reflection.in_loop`); ``subagent_stop``: the reflection agent's
  ``SubagentStop`` contract check.
- ``paths``: the files every hook reads and writes (the sidecars' folder with its lock and
  markers; the per-session state folder with its locking, atomic replace, stale-file removal).
- ``post_commit``, ``git_hooks``: the git post-commit / post-rewrite note hook and its installer.
- ``settings``: installs and removes the hooks in ``.claude/settings.json``.
- ``instructions``: the self-report request (the CLAUDE.md block ``reflect hook install``
  writes, and the ask mode's words); ``workspace``: the installer's workspace marker and
  ``info/exclude`` lines that keep generated files out of commits.
- ``bytecode``: the package's bytecode, written by ``reflect hook install`` so no hook call
  compiles our modules first (never imported by a hook).
- ``_entry``: the one entry wrapper every hook runs through (stdin, exit 0 on every fault).

Everything Claude Code runs from here imports only the standard library and the package's
stdlib-only modules (``config``, ``errors``, ``reflection.fields``, ``reflection.checks``,
``reflection.risk_floor``, ``in_loop.cadence``, ``in_loop.loop_detector``,
``in_loop.escalation_contract``, ``hooks.*``): start-up time is paid on every agent stop or
tool call. No pandas, numpy, DuckDB, click, ``typing`` or ``dataclasses`` on those paths (the
hooks' tests check it). The hooks exit 0 on every fault.
"""
