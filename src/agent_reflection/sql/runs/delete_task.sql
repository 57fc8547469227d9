-- Drop task $task_id before writing its new values (runs/insert_task.sql).
DELETE FROM run_tasks WHERE task_id = $task_id
