-- The older history the rules need, read in one pass and kept as a temporary table:
-- * for_streak: tasks whose window outcomes all failed (their streak may reach back before the
--   window): their outcomes up to the window start $1;
-- * for_stale: active tasks with run_count > 0 and a prompt but no known result length in the
--   window (stale_task then needs their newest known result): all their outcomes.
-- Everything else the rules need is in cycle_window.
CREATE OR REPLACE TEMP TABLE cycle_history AS
WITH win AS (
    SELECT task_id,
           bool_and(status IN ('failed', 'timeout')) AS all_failed,
           count(result_length) AS results
    FROM cycle_window
    WHERE task_id IS NOT NULL
    GROUP BY task_id
),
targets AS (
    SELECT task_id, TRUE AS for_streak, FALSE AS for_stale
    FROM win
    WHERE all_failed
    UNION ALL
    SELECT t.task_id, FALSE, TRUE
    FROM run_tasks t
    LEFT JOIN win w ON w.task_id = t.task_id
    WHERE t.status = 'active'
      AND coalesce(t.run_count, 0) > 0
      AND coalesce(trim(t.ai_prompt), '') <> ''
      AND coalesce(w.results, 0) = 0
),
flags AS (
    SELECT task_id, bool_or(for_streak) AS for_streak, bool_or(for_stale) AS for_stale
    FROM targets
    GROUP BY task_id
)
SELECT o.task_id, o.session_id, o.status, o.finished_at, o.result_length,
       f.for_streak AND o.finished_at <= $1::TIMESTAMPTZ AS for_streak,
       f.for_stale
FROM run_outcomes o
JOIN flags f ON f.task_id = o.task_id
WHERE (f.for_streak AND o.finished_at <= $1::TIMESTAMPTZ) OR f.for_stale;
