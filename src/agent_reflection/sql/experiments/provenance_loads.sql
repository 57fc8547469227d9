-- The loads that wrote the rows of one table ($table), from the `loads` bookkeeping table.
-- A load_id with no `loads` row (a table filled outside `reflect load`) is still listed.
WITH ids AS (SELECT DISTINCT load_id FROM query_table($table))
SELECT ids.load_id, l.source, l.origin, l.started_at, l.finished_at, l.status
FROM ids
LEFT JOIN loads AS l USING (load_id)
ORDER BY ids.load_id
