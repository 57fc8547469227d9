-- Bookkeeping shared by every loader: one row per load, one row per rejected record.
-- Counts reconcile: rows_read = rows_loaded + rows_rejected + rows_already_present.
-- load_id is max(nextval, largest id + 1): DuckDB can lose the sequence's state on an unclean
-- exit (the next nextval repeated an id already in `loads`), see db.begin_load.
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
    status               VARCHAR NOT NULL DEFAULT 'running',  -- running | ok | failed | interrupted
    detail               JSON                                 -- loader-specific extras
);
-- The process that ran the load: a `running` row whose process is gone was interrupted (killed,
-- power cut); the next load marks it `interrupted`. Added after the first release, hence ALTER.
ALTER TABLE loads ADD COLUMN IF NOT EXISTS pid BIGINT;
ALTER TABLE loads ADD COLUMN IF NOT EXISTS host VARCHAR;

CREATE TABLE IF NOT EXISTS rejected (
    load_id     BIGINT NOT NULL,
    source      VARCHAR NOT NULL,
    location    VARCHAR NOT NULL,   -- file, file:line, repo@sha, ...
    raw         VARCHAR,            -- the offending text, bounded (see db.REJECTED_RAW_LIMIT)
    reason      VARCHAR NOT NULL,   -- what is wrong and how to fix it
    rejected_at TIMESTAMPTZ NOT NULL
);
-- One row per distinct (source, location, reason): a record rejected again by a later load (the
-- same inputs re-loaded) moves to that load instead of being stored twice (db.LoadRun.flush_rejects).
