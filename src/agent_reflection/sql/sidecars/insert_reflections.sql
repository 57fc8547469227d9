-- One batch of validated sidecars (registered as `sidecar_batch`) into `reflections`.
-- Skips records already stored, so re-loading is a no-op (the loader has already dropped
-- repeated records inside the batch). $load_id: the load. Returns the number of rows inserted.
-- The record's columns, each cast from the batch to its type, are made from the declaration
-- (reflection/columns.py).
INSERT INTO reflections (content_hash, {{reflection column names}}, source_file, raw, load_id)
SELECT b.content_hash, {{reflection batch values}}, b.source_file, CAST(b.raw AS JSON), $load_id
FROM sidecar_batch AS b
WHERE NOT EXISTS (SELECT 1 FROM reflections AS r WHERE r.content_hash = b.content_hash)
