-- Bookkeeping shared by every loader: one row per load, one row per rejected record.
-- Counts reconcile: rows_read = rows_loaded + rows_rejected + rows_already_present.
CREATE SEQUENCE IF NOT EXISTS load_id_seq START 1;

CREATE TABLE IF NOT EXISTS loads (
    load_id              BIGINT PRIMARY KEY,
    source               VARCHAR NOT NULL,   -- sidecars | git | board | labels | transcripts | runs
    origin               VARCHAR NOT NULL,   -- path, glob or repo URL as given
    started_at           TIMESTAMPTZ NOT NULL,
    finished_at          TIMESTAMPTZ,
    tool_version         VARCHAR NOT NULL,
    rows_read            BIGINT NOT NULL DEFAULT 0,
    rows_loaded          BIGINT NOT NULL DEFAULT 0,
    rows_rejected        BIGINT NOT NULL DEFAULT 0,
    rows_already_present BIGINT NOT NULL DEFAULT 0,
    status               VARCHAR NOT NULL DEFAULT 'running',  -- running | ok | failed
    detail               JSON                                 -- loader-specific extras
);

CREATE TABLE IF NOT EXISTS rejected (
    load_id     BIGINT NOT NULL,
    source      VARCHAR NOT NULL,
    location    VARCHAR NOT NULL,   -- file, file:line, repo@sha, ...
    raw         VARCHAR,            -- the offending text, bounded (see db.REJECTED_RAW_LIMIT)
    reason      VARCHAR NOT NULL,   -- what is wrong and how to fix it
    rejected_at TIMESTAMPTZ NOT NULL
);
