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
