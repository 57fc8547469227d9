-- On a platform's APScheduler job store (SQLAlchemyJobStore's table): job ? as stored.
SELECT id, next_run_time, job_state FROM apscheduler_jobs WHERE id = ?
