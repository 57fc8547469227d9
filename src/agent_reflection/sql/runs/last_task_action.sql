-- The reflection cycle's latest action on task $task_id (a resume undoes only a pause).
SELECT action, previous_status, sqlite_source FROM task_actions
WHERE task_id = $task_id ORDER BY "at" DESC LIMIT 1
