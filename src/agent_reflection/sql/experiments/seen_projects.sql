-- Tasks of the pre-registration's [seen] board_projects, per project (P3 reads
-- coalesce(project, origin) as the project): (what, name, tasks, one of them).
SELECT 'board project' AS what, coalesce(project, origin) AS name, count(*) AS present,
       min(task_ref) AS example
FROM tasks
WHERE list_contains($markers::VARCHAR[], coalesce(project, origin))
GROUP BY ALL
ORDER BY name
