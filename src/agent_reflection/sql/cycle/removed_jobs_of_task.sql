-- The scheduler jobs removed for task $task_id and not put back yet, newest first.
SELECT job_id, scheduler_store, next_run_time, job_state, removed_at
FROM removed_jobs
WHERE task_id = $task_id AND restored_at IS NULL
ORDER BY removed_at DESC
