-- `reflect status`, P3: board tasks, and those completed.
SELECT count(*) AS tasks, count(completed_at) AS completed FROM tasks
