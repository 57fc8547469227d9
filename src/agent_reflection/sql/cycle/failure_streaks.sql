-- consecutive_failures: the failure streak of every candidate task.
-- Candidates: tasks with an outcome in the window ($1 - $2 seconds, $1]. The streak counts the
-- task's newest outcomes (whole history up to $1, newest first, at most $3 of them) that are
-- failed or timeout, stopping at the first other status.
-- $1 now (TIMESTAMPTZ), $2 lookback seconds, $3 scan limit.
WITH candidates AS (
    SELECT DISTINCT task_id
    FROM run_outcomes
    WHERE task_id IS NOT NULL
      AND finished_at > $1::TIMESTAMPTZ - to_seconds($2)
      AND finished_at <= $1::TIMESTAMPTZ
),
ranked AS (
    SELECT o.task_id, o.session_id, o.status, o.finished_at,
           row_number() OVER (PARTITION BY o.task_id
                              ORDER BY o.finished_at DESC, o.session_id DESC) AS rn
    FROM run_outcomes o
    SEMI JOIN candidates c ON c.task_id = o.task_id
    WHERE o.finished_at <= $1::TIMESTAMPTZ
)
SELECT r.task_id,
       coalesce(min(r.rn) FILTER (WHERE r.status NOT IN ('failed', 'timeout')), max(r.rn) + 1)
           - 1 AS streak,
       max(r.finished_at) AS latest_at,
       list(r.session_id ORDER BY r.rn) AS newest_sessions,
       coalesce(t.status, 'active') AS task_status
FROM ranked r
LEFT JOIN run_tasks t ON t.task_id = r.task_id
WHERE r.rn <= $3
GROUP BY r.task_id, t.status
ORDER BY r.task_id;
