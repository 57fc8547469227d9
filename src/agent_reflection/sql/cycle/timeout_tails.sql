-- timeout_pattern: per task, its outcomes inside the window (cycle_window), newest first by
-- finished_at then session_id: fires when there are at least $1 and the newest $1 all timed out
-- (i.e. at least $1 timeouts come after the newest other outcome in the window).
-- $1 N (timeout_pattern_limit, 3).
WITH w AS (
    SELECT task_id, status, {'at': finished_at, 'id': session_id} AS pos
    FROM cycle_window
    WHERE task_id IS NOT NULL
),
last_other AS (
    SELECT task_id, count(*) AS in_window,
           max(pos) FILTER (WHERE status <> 'timeout') AS other
    FROM w
    GROUP BY task_id
    HAVING count(*) >= $1
),
tails AS (
    SELECT l.task_id, l.in_window,
           count(*) FILTER (WHERE w.status = 'timeout'
                              AND (l.other IS NULL OR w.pos > l.other)) AS newest_timeouts
    FROM last_other l
    JOIN w ON w.task_id = l.task_id
    GROUP BY l.task_id, l.in_window
)
SELECT s.task_id, s.in_window, least(s.newest_timeouts, $1) AS newest_timeouts,
       coalesce(t.status, 'active') AS task_status
FROM tails s
LEFT JOIN run_tasks t ON t.task_id = s.task_id
WHERE s.newest_timeouts >= $1
ORDER BY s.task_id;
