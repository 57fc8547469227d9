-- skill_failure_correlation: skills read (run_steps.skill, action tool_call) in failed or
-- timed-out sub-sessions that finished inside the window (cycle_window). Counted as distinct
-- sessions (reads = rows, for comparison with the peer's row count).
-- $1 minimum distinct failed sessions.
SELECT s.skill,
       count(DISTINCT s.session_id) AS failed_sessions,
       count(*) AS reads,
       list(DISTINCT s.session_id ORDER BY s.session_id) AS sessions
FROM run_steps s
SEMI JOIN cycle_window o
    ON o.session_id = s.session_id AND o.status IN ('failed', 'timeout')
WHERE s.skill IS NOT NULL
  AND s.action = 'tool_call'
GROUP BY s.skill
HAVING count(DISTINCT s.session_id) >= $1
ORDER BY s.skill;
