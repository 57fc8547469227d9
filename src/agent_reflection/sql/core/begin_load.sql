-- Start a load: one `loads` row with status 'running', the process that runs it, and a fresh id.
-- The id is max(nextval, largest id + 1): after an unclean exit DuckDB can hand out a sequence
-- value it already gave (the `Duplicate key "load_id: 1"` failure), the table cannot lie.
INSERT INTO loads (load_id, source, origin, started_at, tool_version, pid, host)
SELECT greatest(nextval('load_id_seq'), coalesce(max(load_id), 0) + 1),
       $source, $origin, $started_at, $tool_version, $pid, $host
FROM loads
RETURNING load_id
