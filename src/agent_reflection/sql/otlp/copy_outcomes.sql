-- The telemetry-derived run outcomes of the attached live database not copied yet, with the
-- live database's path as their origin; returns the new ones (what the watch triggers see).
INSERT INTO run_outcomes BY NAME
SELECT o.* REPLACE ($origin AS origin, $load_id AS load_id)
FROM otlp_live.run_outcomes o
WHERE o.origin = 'otlp'
  AND NOT EXISTS (SELECT 1 FROM run_outcomes m
                  WHERE m.origin = $origin AND m.session_id = o.session_id)
ORDER BY o.finished_at, o.session_id
RETURNING session_id, task_id, status
