-- run_count of the copied telemetry tasks: their outcomes here.
UPDATE run_tasks t SET run_count = c.n
FROM (SELECT task_id, count(*) AS n FROM run_outcomes WHERE origin = $origin GROUP BY task_id) c
WHERE t.implicit AND t.origin = $origin AND c.task_id = t.task_id
  AND t.run_count IS DISTINCT FROM c.n
