-- Record in run_overlapping_origins the file $origin and every other file that reports a session
-- load $load_id added for it (same session_id): the rules count such a session once.
INSERT OR IGNORE INTO run_overlapping_origins (origin)
SELECT DISTINCT unnest([n.origin, o.origin])
FROM run_outcomes n
JOIN run_outcomes o ON o.session_id = n.session_id AND o.origin <> n.origin
WHERE n.origin = $origin AND n.load_id = $load_id
