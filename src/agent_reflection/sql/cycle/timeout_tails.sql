-- timeout_pattern: per task, the outcomes inside the window ($1 - $2 seconds, $1], newest
-- first: how many there are and how many of the newest $3 are timeouts.
-- $1 now, $2 lookback seconds, $3 N (timeout_pattern_limit, 3).
WITH windowed AS (
    SELECT task_id, status,
           row_number() OVER (PARTITION BY task_id
                              ORDER BY finished_at DESC, session_id DESC) AS rn
    FROM run_outcomes
    WHERE task_id IS NOT NULL
      AND finished_at > $1::TIMESTAMPTZ - to_seconds($2)
      AND finished_at <= $1::TIMESTAMPTZ
)
SELECT w.task_id,
       count(*) AS in_window,
       count(*) FILTER (WHERE w.rn <= $3 AND w.status = 'timeout') AS newest_timeouts,
       coalesce(t.status, 'active') AS task_status
FROM windowed w
LEFT JOIN run_tasks t ON t.task_id = w.task_id
GROUP BY w.task_id, t.status
HAVING count(*) >= $3 AND count(*) FILTER (WHERE w.rn <= $3 AND w.status = 'timeout') = $3
ORDER BY w.task_id;
