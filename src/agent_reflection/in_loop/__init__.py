"""In-loop reflection: the cadence checkpoint and where its cadence comes from; the anti-loop
detector (``loop_detector``), its replay on recorded sessions (``loop_replay``) and its check
against a person reading the steps (``escalation_review``); where the replay finds its input
files (``replay_inputs``).
Nothing is imported here: the cadence hook imports ``cadence`` on every tool call."""
