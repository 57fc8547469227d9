-- reflection.v1 sidecars, flattened; pk = SHA-256 of the canonical JSON (sorted keys, no spaces).
-- The record's columns are made from the declaration (reflection/fields.py) by
-- reflection/columns.py: one per stored field, in declaration order. Lists inside the record
-- (git.commits, git.uncommitted) have no column: they stay in `raw`.
CREATE TABLE IF NOT EXISTS reflections (
    content_hash           VARCHAR PRIMARY KEY,
    {{reflection columns}}
    source_file            VARCHAR NOT NULL,   -- where it was read from (first load wins)
    raw                    JSON NOT NULL,
    load_id                BIGINT NOT NULL
);
-- One ALTER per column of a field that may be absent (the line is repeated for each): a
-- database made before such a field was declared gains its column.
ALTER TABLE reflections ADD COLUMN IF NOT EXISTS {{reflection added column}};
