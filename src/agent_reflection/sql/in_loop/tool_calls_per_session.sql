-- Tool calls, prompts, checkpoints and escalations per session.
SELECT s.session_id, s.first_prompt, s.n_prompts, s.n_tool_calls, s.n_checkpoints,
       s.n_escalations, epoch(s.last_ts - s.first_ts) / 60.0 AS minutes
FROM sessions s
ORDER BY s.n_tool_calls DESC, s.session_id;
