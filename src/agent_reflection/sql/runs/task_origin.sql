-- The run-log file task $task_id was loaded from (its pause goes to that SQLite file).
SELECT origin FROM run_tasks WHERE task_id = $task_id
