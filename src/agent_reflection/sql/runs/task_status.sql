-- Task $task_id's effective status here (kept in task_actions as the status before a pause).
SELECT status FROM run_tasks WHERE task_id = $task_id
