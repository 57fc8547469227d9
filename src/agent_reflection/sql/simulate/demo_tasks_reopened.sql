-- The demo's tasks, each with whether it was ever reopened (its reflection's confidence is
-- drawn lower when it was).
SELECT t.task_ref,
       EXISTS (SELECT 1 FROM task_events e WHERE e.task_ref = t.task_ref AND e.kind = 'reopened')
           AS reopened
FROM tasks t
WHERE t.task_ref LIKE 'DEMO-%'
ORDER BY t.task_ref
