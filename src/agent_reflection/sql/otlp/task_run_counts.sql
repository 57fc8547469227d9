-- run_count of the implicit telemetry tasks the batch touched: their outcomes so far.
UPDATE run_tasks t SET run_count = c.n
FROM (
    SELECT o.task_id, count(*) AS n
    FROM run_outcomes o
    WHERE o.origin = 'otlp'
      AND o.task_id IN (SELECT session_id FROM otlp_batch_tool_results)
    GROUP BY o.task_id
) c
WHERE t.implicit AND t.origin = 'otlp' AND c.task_id = t.task_id
  AND t.run_count IS DISTINCT FROM c.n
