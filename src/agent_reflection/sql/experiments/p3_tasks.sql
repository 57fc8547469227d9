-- Completed tasks with their follow-up in days up to $as_of.
SELECT task_ref,
       coalesce(project, origin) AS project,
       source,
       completed_at,
       epoch($as_of::TIMESTAMPTZ - completed_at) / 86400.0 AS follow_up_days
FROM tasks
WHERE completed_at IS NOT NULL
ORDER BY task_ref
