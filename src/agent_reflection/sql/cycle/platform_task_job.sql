-- On a platform SQLite file: the scheduler job id of task ? (Wintermute keeps it in
-- tasks.apscheduler_job_id; its jobs are keyed by the task id when that column is empty).
SELECT coalesce(apscheduler_job_id, id) FROM tasks WHERE id = ?
