-- Scheduler jobs the reflection cycle removed from a platform's APScheduler job store when it
-- paused a task (Wintermute drops a paused task's job), kept whole so that
-- `reflect cycle resume` can put each back.
CREATE TABLE IF NOT EXISTS removed_jobs (
    task_id         VARCHAR NOT NULL,
    job_id          VARCHAR NOT NULL,
    scheduler_store VARCHAR NOT NULL,  -- the job store's SQLite file (absolute path)
    next_run_time   DOUBLE,            -- epoch seconds, as the store had it
    job_state       BLOB NOT NULL,     -- APScheduler's pickled job, byte for byte
    cycle_run_id    BIGINT,
    removed_at      TIMESTAMPTZ NOT NULL,
    restored_at     TIMESTAMPTZ
);
