-- consecutive_failures: the failure streak of every candidate task.
-- Candidates: tasks with an outcome in the window (cycle_window). The streak counts the task's
-- newest outcomes over its whole history up to the clock (newest first by finished_at, then
-- session_id; at most $1 of them) that are failed or timeout, stopping at the first other
-- status: the outcomes after its newest non-failure. A streak can only reach back before the
-- window when all the task's window outcomes failed: those tasks' older outcomes are in
-- cycle_history (for_streak). Only tasks with a streak of at least $2 are returned.
-- $1 scan limit (10), $2 minimum streak.
WITH considered AS (
    SELECT task_id, status, {'at': finished_at, 'id': session_id} AS pos
    FROM cycle_window
    WHERE task_id IS NOT NULL
    UNION ALL
    SELECT task_id, status, {'at': finished_at, 'id': session_id}
    FROM cycle_history
    WHERE for_streak
),
last_ok AS (
    SELECT task_id, max(pos) FILTER (WHERE status NOT IN ('failed', 'timeout')) AS ok
    FROM considered
    GROUP BY task_id
),
tails AS (
    SELECT c.task_id,
           max(c.pos.at) AS latest_at,
           list(c.pos) FILTER (WHERE l.ok IS NULL OR c.pos > l.ok) AS failures
    FROM considered c
    JOIN last_ok l ON l.task_id = c.task_id
    GROUP BY c.task_id
)
SELECT s.task_id,
       least(len(coalesce(s.failures, [])), $1) AS streak,
       s.latest_at,
       list_transform(list_reverse_sort(coalesce(s.failures, [])), x -> x.id)[1:$1]
           AS newest_sessions,
       coalesce(t.status, 'active') AS task_status
FROM tails s
LEFT JOIN run_tasks t ON t.task_id = s.task_id
WHERE least(len(coalesce(s.failures, [])), $1) >= $2
ORDER BY s.task_id;
