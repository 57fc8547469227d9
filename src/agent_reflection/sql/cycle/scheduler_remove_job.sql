-- On a platform's APScheduler job store: remove job ?, as APScheduler's remove_job does (the
-- scheduler reads due jobs from this table at every wake-up, so a removed job never fires).
DELETE FROM apscheduler_jobs WHERE id = ?
