-- stale_task: active tasks with run_count > 0 and a non-empty ai_prompt whose recent results
-- are all shorter than $2 characters. Recent results: the task's outcomes with a known
-- result_length inside the window (cycle_window), and always its newest such outcome up to the
-- clock $1 (from cycle_history, for_stale, when the window has none).
-- A task with no outcome at all is judged on its last_result_summary (missing counts as '');
-- a task whose outcomes all come after the clock (or lack a length) is skipped.
-- $1 now, $2 min_result_length.
WITH eligible AS (
    SELECT task_id, status, last_result_summary
    FROM run_tasks
    WHERE status = 'active'
      AND coalesce(run_count, 0) > 0
      AND coalesce(trim(ai_prompt), '') <> ''
),
win AS (
    SELECT task_id, count(result_length) AS results, max(result_length) AS longest
    FROM cycle_window
    WHERE task_id IS NOT NULL
    GROUP BY task_id
),
hist AS (
    SELECT task_id,
           arg_max(result_length, (finished_at, session_id))
               FILTER (WHERE result_length IS NOT NULL AND finished_at <= $1::TIMESTAMPTZ)
               AS last_length
    FROM cycle_history
    WHERE for_stale
    GROUP BY task_id
),
judged AS (
    SELECT e.task_id, e.status,
           CASE WHEN w.results > 0 THEN w.results
                WHEN h.last_length IS NOT NULL THEN 1 ELSE 0 END AS results,
           CASE WHEN w.results > 0 THEN w.longest
                WHEN h.task_id IS NOT NULL THEN h.last_length
                ELSE length(coalesce(e.last_result_summary, '')) END AS longest,
           coalesce(w.results, 0) = 0 AND h.task_id IS NULL AS from_summary
    FROM eligible e
    LEFT JOIN win w ON w.task_id = e.task_id
    LEFT JOIN hist h ON h.task_id = e.task_id
)
SELECT task_id, results, longest, from_summary, status
FROM judged
WHERE longest IS NOT NULL AND longest < $2
ORDER BY task_id;
