-- Wintermute's conversation database (data/conversation.db): the three tables the reflection
-- cycle reads and writes, as the platform creates them.
--
-- Origin: the public project overcuriousity/wintermute, wintermute/infra/database.py,
-- run_migrations(), copied verbatim for these tables (the version after its
-- turing_verdict -> convergence_verdict rename, which also has tasks.execution_mode; the column
-- names match ../shared/peer-cases/wintermute-reflection-cycle.md, "Schemas as shipped"). Commit
-- bcbd337fa86f5ec8b2c9d9228df92195e717ac8a of that file has the same interaction_log and the same
-- tasks without execution_mode. The platform opens the file with PRAGMA journal_mode=WAL.
--
-- Its APScheduler job store is a second file, data/scheduler.db (wintermute/infra/paths.py:
-- SCHEDULER_DB = DATA_DIR / "scheduler.db"; wintermute/workers/scheduler_thread.py:
-- SQLAlchemyJobStore(url=f"sqlite:///{SCHEDULER_DB}"), jobs added with id=task_id). The tests
-- build that file with APScheduler itself, so its table is exactly the library's.
CREATE TABLE IF NOT EXISTS tasks (
    id                  TEXT PRIMARY KEY,
    thread_id           TEXT,
    content             TEXT NOT NULL,
    priority            INTEGER DEFAULT 5,
    status              TEXT DEFAULT 'active',
    created             REAL NOT NULL,
    updated             REAL,
    completed_at        REAL,
    reason              TEXT,
    schedule_type       TEXT,
    schedule_desc       TEXT,
    schedule_config     TEXT,
    ai_prompt           TEXT,
    execution_mode      TEXT,
    background          INTEGER DEFAULT 0,
    apscheduler_job_id  TEXT,
    last_run_at         REAL,
    last_result_summary TEXT,
    run_count           INTEGER DEFAULT 0
);
CREATE TABLE IF NOT EXISTS interaction_log (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    timestamp  REAL    NOT NULL,
    action     TEXT    NOT NULL,
    session    TEXT    NOT NULL,
    llm        TEXT    NOT NULL,
    input      TEXT    NOT NULL,
    output     TEXT    NOT NULL,
    status     TEXT    NOT NULL DEFAULT 'ok',
    raw_output TEXT
);
CREATE TABLE IF NOT EXISTS sub_session_outcomes (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id          TEXT NOT NULL,
    workflow_id         TEXT,
    timestamp           REAL NOT NULL,
    objective           TEXT NOT NULL,
    system_prompt_mode  TEXT NOT NULL,
    tools_available     TEXT,
    tools_used          TEXT,
    tool_call_count     INTEGER,
    duration_seconds    REAL,
    timeout_value       INTEGER,
    convergence_verdict      TEXT,
    status              TEXT NOT NULL,
    result_length       INTEGER,
    nesting_depth       INTEGER,
    continuation_count  INTEGER,
    backend_used        TEXT,
    objective_embedding BLOB,
    task_id             TEXT
);
