-- Telemetry tool results as the run outcomes the reflection cycle's rules read: each tool
-- execution is one outcome (session_id = its record key), its Claude Code session the task
-- (task_id = session.id), failed when success = false, completed when true, 'unknown' when the
-- attribute is missing; finished_at is the event's time, started_at that minus duration_ms.
-- origin and source_format are 'otlp'.
INSERT INTO run_outcomes BY NAME
SELECT b.record_key AS session_id, b.session_id AS task_id, NULL AS objective,
       CASE b.success WHEN FALSE THEN 'failed' WHEN TRUE THEN 'completed' ELSE 'unknown' END
           AS status,
       b.ts - to_microseconds(CAST(round(coalesce(b.duration_ms, 0) * 1000) AS BIGINT))
           AS started_at,
       b.ts AS finished_at, NULL AS result_length, NULL AS cost, 'otlp' AS source_format,
       'otlp' AS origin, 'task_id' AS matched_by,
       json_object('tool_name', b.tool_name, 'success', b.success, 'error', b.error,
                   'duration_ms', b.duration_ms, 'prompt_id', b.prompt_id) AS raw,
       $load_id AS load_id
FROM otlp_batch_tool_results b
SEMI JOIN otlp_new n ON n.record_key = b.record_key
WHERE b.session_id IS NOT NULL AND b.ts IS NOT NULL
ON CONFLICT DO NOTHING
