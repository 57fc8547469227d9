-- skill_failure_correlation: skills read (run_steps.skill, action tool_call) in failed or
-- timed-out sub-sessions that finished inside the window ($1 - $2 seconds, $1]. Counted as
-- distinct sessions (reads = rows, for comparison with the peer's row count).
-- $1 now, $2 lookback seconds, $3 minimum distinct failed sessions.
SELECT s.skill,
       count(DISTINCT s.session_id) AS failed_sessions,
       count(*) AS reads,
       list(DISTINCT s.session_id ORDER BY s.session_id) AS sessions
FROM run_steps s
JOIN run_outcomes o ON o.session_id = s.session_id
WHERE s.skill IS NOT NULL
  AND s.action = 'tool_call'
  AND o.status IN ('failed', 'timeout')
  AND o.finished_at > $1::TIMESTAMPTZ - to_seconds($2)
  AND o.finished_at <= $1::TIMESTAMPTZ
GROUP BY s.skill
HAVING count(DISTINCT s.session_id) >= $3
ORDER BY s.skill;
