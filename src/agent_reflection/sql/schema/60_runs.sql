-- Agent run logs (sub-session outcomes, their steps, the platform's tasks) and the reflection
-- cycle that reads them (cycle runs, findings, events, LLM analyses, pause actions).
-- Outcomes and steps are keyed by their source file (origin) as well: two platform databases
-- may reuse the same session ids for different runs.
CREATE TABLE IF NOT EXISTS run_outcomes (
    session_id    VARCHAR NOT NULL,     -- one sub-session / agent run (unique within origin)
    task_id       VARCHAR,              -- effective task (given, or matched by objective)
    objective     VARCHAR,
    status        VARCHAR NOT NULL,     -- completed | failed | timeout | cancelled | ...
    started_at    TIMESTAMPTZ,
    finished_at   TIMESTAMPTZ NOT NULL, -- the outcome's time: streaks and windows use it
    result_length BIGINT,               -- characters of the result (NULL when unknown)
    cost          DOUBLE,               -- USD when known
    source_format VARCHAR NOT NULL,     -- jsonl | sqlite | swe-agent
    origin        VARCHAR NOT NULL,     -- the file it came from (absolute path)
    matched_by    VARCHAR,              -- task_id | objective | NULL (no task)
    raw           JSON NOT NULL,
    load_id       BIGINT NOT NULL,
    PRIMARY KEY (origin, session_id)
);

CREATE TABLE IF NOT EXISTS run_steps (
    step_key       VARCHAR NOT NULL,    -- stable per source row (idempotent reloads)
    session_id     VARCHAR NOT NULL,
    seq            BIGINT,              -- step number / log row id when known
    "at"           TIMESTAMPTZ,
    action         VARCHAR NOT NULL,    -- tool_call | step | reflection_rule | ...
    tool           VARCHAR,             -- read_file | skill | bash | ...
    input_summary  VARCHAR,             -- first 2,000 characters
    output_summary VARCHAR,             -- first 2,000 characters
    skill          VARCHAR,             -- skill this step read, when it read one
    origin         VARCHAR NOT NULL,    -- the file it came from (absolute path)
    load_id        BIGINT NOT NULL,
    PRIMARY KEY (origin, step_key)
);

-- Files (origins) that report a session id another file reports too: a run log and its
-- trajectory, two exports of one platform, two platforms that reuse ids. The rules group the
-- outcomes of these files by (task_id, session_id) and take every other row as one session
-- (sql/cycle/rules.sql). Kept by the loaders (runs/mark_overlapping_origins.sql); a database
-- loaded before it existed is filled once when its schema is brought up to date
-- (core/upgrade_overlapping_origins.sql; a new file has nothing to fill).
CREATE TABLE IF NOT EXISTS run_overlapping_origins (
    origin VARCHAR PRIMARY KEY
);

CREATE TABLE IF NOT EXISTS run_tasks (
    task_id             VARCHAR PRIMARY KEY,
    status              VARCHAR NOT NULL,  -- effective: source status unless we paused it
    source_status       VARCHAR NOT NULL,  -- as the source last said
    run_count           BIGINT,
    ai_prompt           VARCHAR,
    last_result_summary VARCHAR,
    implicit            BOOLEAN NOT NULL,  -- true: no task record, inferred from outcomes
    origin              VARCHAR NOT NULL,
    load_id             BIGINT NOT NULL
);

CREATE SEQUENCE IF NOT EXISTS cycle_run_seq START 1;

CREATE TABLE IF NOT EXISTS cycle_runs (
    cycle_run_id     BIGINT PRIMARY KEY,
    trigger          VARCHAR NOT NULL,   -- manual | failure | batch | poll
    clock            TIMESTAMPTZ NOT NULL, -- the "now" rules ran against
    lookback_seconds BIGINT NOT NULL,
    source           VARCHAR,
    applied          BOOLEAN NOT NULL,
    findings         BIGINT NOT NULL,
    started_at       TIMESTAMPTZ NOT NULL
);

CREATE TABLE IF NOT EXISTS findings (
    cycle_run_id  BIGINT NOT NULL,
    seq           INTEGER NOT NULL,
    rule          VARCHAR NOT NULL,  -- consecutive_failures | timeout_pattern | stale_task | ...
    severity      VARCHAR NOT NULL,  -- warning | action_taken
    subject_type  VARCHAR NOT NULL,  -- task | skill | sub_session
    subject_id    VARCHAR NOT NULL,
    detail        VARCHAR NOT NULL,
    action_taken  VARCHAR NOT NULL,  -- '' | paused_task | already_paused | flagged_skill
    applied       BOOLEAN NOT NULL,  -- false: dry run (the action was only reported)
    clock         TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (cycle_run_id, seq)
);

CREATE SEQUENCE IF NOT EXISTS cycle_event_seq START 1;

CREATE TABLE IF NOT EXISTS events (
    event_id     BIGINT PRIMARY KEY,
    cycle_run_id BIGINT,
    type         VARCHAR NOT NULL,  -- reflection.finding | reflection.analysis_completed | ...
    "at"         TIMESTAMPTZ NOT NULL,
    data         JSON NOT NULL
);

CREATE TABLE IF NOT EXISTS analyses (
    cycle_run_id  BIGINT NOT NULL,
    status        VARCHAR NOT NULL,  -- ok | skipped | failed
    model         VARCHAR,
    prompt        VARCHAR,
    answer        VARCHAR,
    skill_actions JSON,              -- SKILL_ACTION paragraphs + JSON-tail skill_actions
    task_actions  JSON,
    detail        VARCHAR,           -- why skipped / failed
    "at"          TIMESTAMPTZ NOT NULL
);

CREATE TABLE IF NOT EXISTS task_actions (
    task_id         VARCHAR NOT NULL,
    action          VARCHAR NOT NULL,  -- pause | resume | reenabled (the platform set it active)
    previous_status VARCHAR,
    sqlite_source   VARCHAR,           -- the SQLite file also changed, if any
    cycle_run_id    BIGINT,
    "at"            TIMESTAMPTZ NOT NULL
);
