-- reflection.v1 sidecars, flattened; pk = SHA-256 of the canonical JSON (sorted keys, no spaces).
CREATE TABLE IF NOT EXISTS reflections (
    content_hash         VARCHAR PRIMARY KEY,
    schema_version       VARCHAR NOT NULL,
    task_ref             VARCHAR NOT NULL,
    agent                VARCHAR NOT NULL,
    session_id           VARCHAR NOT NULL,
    "timestamp"          TIMESTAMPTZ NOT NULL,
    repo                 VARCHAR NOT NULL,
    confidence           DOUBLE,
    mlw_surface          VARCHAR,
    mlw_description      VARCHAR,
    known_not_in_diff    VARCHAR,
    risk_needs_review    BOOLEAN NOT NULL,
    risk_score           DOUBLE NOT NULL,
    risk_surface         VARCHAR NOT NULL,
    risk_reason          VARCHAR NOT NULL,
    files_changed        VARCHAR[] NOT NULL,
    source               VARCHAR NOT NULL,
    reflection_attempt   INTEGER NOT NULL,
    degraded             BOOLEAN NOT NULL,
    reflection_mode      VARCHAR NOT NULL,
    source_file          VARCHAR NOT NULL,   -- where it was read from (first load wins)
    raw                  JSON NOT NULL,
    load_id              BIGINT NOT NULL
);
-- The optional `git` object of reflection.v1 (added after the first release, hence ALTER): the
-- scalars as columns; the full object, with its `commits` and `uncommitted` lists, stays in `raw`.
ALTER TABLE reflections ADD COLUMN IF NOT EXISTS git_branch VARCHAR;
ALTER TABLE reflections ADD COLUMN IF NOT EXISTS git_head_start VARCHAR;
ALTER TABLE reflections ADD COLUMN IF NOT EXISTS git_head_stop VARCHAR;
