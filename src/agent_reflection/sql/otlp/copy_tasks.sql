-- Telemetry sessions (implicit tasks) not known here yet; a task paused here stays paused.
INSERT INTO run_tasks BY NAME
SELECT t.* REPLACE ($origin AS origin, $load_id AS load_id)
FROM otlp_live.run_tasks t
WHERE t.origin = 'otlp'
  AND NOT EXISTS (SELECT 1 FROM run_tasks m WHERE m.task_id = t.task_id)
