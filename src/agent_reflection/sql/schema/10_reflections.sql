-- reflection.v1 sidecars, flattened; pk = SHA-256 of the canonical JSON (sorted keys, no spaces).
-- The record's columns are made from the declaration (reflection/fields.py) by
-- reflection/columns.py: one per stored field, in declaration order, then the ALTER TABLE
-- statements that give a database made before a field was declared its column. Lists inside
-- the record (git.commits, git.uncommitted) have no column: they stay in `raw`.
CREATE TABLE IF NOT EXISTS reflections (
    content_hash           VARCHAR PRIMARY KEY,
    {{reflection columns}}
    source_file            VARCHAR NOT NULL,   -- where it was read from (first load wins)
    raw                    JSON NOT NULL,
    load_id                BIGINT NOT NULL
);
{{reflection add columns}}
