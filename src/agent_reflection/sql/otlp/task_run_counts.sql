-- run_count of the implicit telemetry tasks: plus the batch's new outcomes of each.
UPDATE run_tasks t SET run_count = t.run_count + c.n
FROM (
    SELECT b.session_id AS task_id, count(*) AS n
    FROM otlp_batch_tool_results b
    SEMI JOIN otlp_new n ON n.record_key = b.record_key
    WHERE b.session_id IS NOT NULL AND b.ts IS NOT NULL
    GROUP BY b.session_id
) c
WHERE t.implicit AND t.origin = 'otlp' AND c.task_id = t.task_id
