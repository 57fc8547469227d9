-- Tasks completed at least once, with the source (origin) and format they came from.
-- completed_at = the FIRST completion: the earliest event of a kind in $completion_kinds when
-- it precedes tasks.completed_at (an export's close/resolution date is the LAST one, so a task
-- reopened and closed again would otherwise have its reopen before its "completion"); a task
-- reopened and still open counts from its first completion too.
WITH first_done AS (
    SELECT task_ref, min("at") AS first_at
    FROM task_events
    WHERE list_contains($completion_kinds, kind)
    GROUP BY task_ref
)
SELECT t.task_ref,
       coalesce(t.project, t.origin) AS project,
       t.origin,
       t.source,
       t.category,
       CASE WHEN f.first_at IS NOT NULL AND (t.completed_at IS NULL OR f.first_at < t.completed_at)
            THEN f.first_at ELSE t.completed_at END AS completed_at
FROM tasks t
LEFT JOIN first_done f USING (task_ref)
WHERE t.completed_at IS NOT NULL OR f.first_at IS NOT NULL
ORDER BY t.task_ref
