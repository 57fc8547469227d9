"""In-loop reflection: what acts during an agent's run, one concept a module.

- ``cadence``: the cadence checkpoint (when it is due, its prompt, its per-session count);
- ``loop_detector``: the anti-loop detector (failure signatures, streaks, the ``<ESCALATION>``
  block it hands the coder);
- ``escalation_contract``: the escalation contract (parse and validate ``<ESCALATION>`` blocks,
  retry packets and the reflection agent's reply);
- ``escalation_router``: where an escalation goes, and the bounded terminal payload;
- ``agent_install``: the reflection (unblocker) agent definition written into
  ``.claude/agents/``;
- ``replies``: the SubagentStop hook's log of the agent's replies loaded into DuckDB;
- ``error_signature``: what a call's text says (failed, expected, trivial) and the cause it
  names, the same reading live in the hook and in every replay;
- ``loop_replay``, ``escalation_labels``, ``replay_inputs``: the detector replayed on recorded
  sessions, checked against a reader's labels (tuning and held-out halves), and where the replay
  finds its files.

The hooks that run these in a session are thin entry points in :mod:`agent_reflection.hooks`
(``in_loop``, ``subagent_stop``). Nothing is imported here: the in-loop hook imports
``cadence``, ``loop_detector`` and ``error_signature`` on every tool call.
"""
