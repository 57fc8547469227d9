-- consecutive_failures: the failure streak of every candidate task.
-- Candidates: tasks with an outcome in the window (cycle_window). The streak counts the task's
-- newest outcomes over its whole history up to the clock (newest first by finished_at, then
-- session_id; at most $2 of them) that are failed or timeout, stopping at the first other
-- status: the outcomes after its newest non-failure. A streak can only reach back before the
-- window when all the task's window outcomes failed, so only those tasks' older history is read.
-- Only tasks with a streak of at least $3 are returned.
-- $1 window start, $2 scan limit (10), $3 minimum streak.
WITH all_failed AS (
    SELECT task_id
    FROM cycle_window
    WHERE task_id IS NOT NULL
    GROUP BY task_id
    HAVING bool_and(status IN ('failed', 'timeout'))
),
considered AS (
    SELECT task_id, status, {'at': finished_at, 'id': session_id} AS pos
    FROM cycle_window
    WHERE task_id IS NOT NULL
    UNION ALL
    SELECT o.task_id, o.status, {'at': o.finished_at, 'id': o.session_id}
    FROM run_outcomes o
    SEMI JOIN all_failed a ON a.task_id = o.task_id
    WHERE o.finished_at <= $1::TIMESTAMPTZ
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
       least(len(coalesce(s.failures, [])), $2) AS streak,
       s.latest_at,
       list_transform(list_reverse_sort(coalesce(s.failures, [])), x -> x.id)[1:$2]
           AS newest_sessions,
       coalesce(t.status, 'active') AS task_status
FROM tails s
LEFT JOIN run_tasks t ON t.task_id = s.task_id
WHERE least(len(coalesce(s.failures, [])), $2) >= $3
ORDER BY s.task_id;
