-- stale_task: active tasks with run_count > 0 and a non-empty ai_prompt whose recent results
-- are all shorter than $3 characters. Recent results: the task's outcomes (with a known
-- result_length) inside the window ($1 - $2 seconds, $1], and always its newest outcome up to $1.
-- A task with no outcome at all is judged on its last_result_summary (missing counts as '');
-- a task whose outcomes all come after $1 had not run yet at that clock and is skipped.
-- $1 now, $2 lookback seconds, $3 min_result_length.
WITH known AS (
    SELECT task_id, result_length, finished_at,
           row_number() OVER (PARTITION BY task_id
                              ORDER BY finished_at DESC, session_id DESC) AS rn
    FROM run_outcomes
    WHERE task_id IS NOT NULL AND result_length IS NOT NULL
      AND finished_at <= $1::TIMESTAMPTZ
),
recent AS (
    SELECT task_id, count(*) AS results, max(result_length) AS longest
    FROM known
    WHERE rn = 1 OR finished_at > $1::TIMESTAMPTZ - to_seconds($2)
    GROUP BY task_id
),
ever AS (
    SELECT DISTINCT task_id FROM run_outcomes WHERE task_id IS NOT NULL
)
SELECT t.task_id,
       coalesce(r.results, 0) AS results,
       coalesce(r.longest, length(coalesce(t.last_result_summary, ''))) AS longest,
       r.results IS NULL AS from_summary,
       t.status AS task_status
FROM run_tasks t
LEFT JOIN recent r ON r.task_id = t.task_id
WHERE t.status = 'active'
  AND (r.task_id IS NOT NULL OR t.task_id NOT IN (SELECT task_id FROM ever))
  AND coalesce(t.run_count, 0) > 0
  AND coalesce(trim(t.ai_prompt), '') <> ''
  AND coalesce(r.longest, length(coalesce(t.last_result_summary, ''))) < $3
ORDER BY t.task_id;
