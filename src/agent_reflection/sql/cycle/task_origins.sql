-- The run-log file each task of $task_ids was loaded from (a task's pause goes to that SQLite
-- file); tasks without a run_tasks row are absent.
SELECT task_id, origin FROM run_tasks WHERE list_contains($task_ids::VARCHAR[], task_id)
