-- Set task $task_id's effective status (a pause or resume by the reflection cycle).
UPDATE run_tasks SET status = $status WHERE task_id = $task_id
