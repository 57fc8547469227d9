-- On a platform's APScheduler job store: put a removed job back as it was, unless a job with its
-- id exists (the platform re-created it).
INSERT INTO apscheduler_jobs (id, next_run_time, job_state)
SELECT ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM apscheduler_jobs WHERE id = ?)
