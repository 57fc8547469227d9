-- The telemetry-derived run steps of the attached live database not copied yet.
INSERT INTO run_steps BY NAME
SELECT s.* REPLACE ($origin AS origin, $load_id AS load_id)
FROM otlp_live.run_steps s
WHERE s.origin = 'otlp'
  AND NOT EXISTS (SELECT 1 FROM run_steps m WHERE m.origin = $origin AND m.step_key = s.step_key)
