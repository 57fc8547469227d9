-- Record that the removed job $job_id of task $task_id is back in its job store.
UPDATE removed_jobs SET restored_at = $restored_at
WHERE task_id = $task_id AND job_id = $job_id AND restored_at IS NULL
