-- Completed tasks with the source (origin) and format they came from.
SELECT task_ref,
       coalesce(project, origin) AS project,
       origin,
       source,
       completed_at
FROM tasks
WHERE completed_at IS NOT NULL
ORDER BY task_ref
