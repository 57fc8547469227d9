-- A scheduler job the cycle removed when it paused a task, kept whole for `reflect cycle resume`.
INSERT INTO removed_jobs (task_id, job_id, scheduler_store, next_run_time, job_state,
                          cycle_run_id, removed_at)
VALUES ($task_id, $job_id, $scheduler_store, $next_run_time, $job_state,
        $cycle_run_id, $removed_at)
