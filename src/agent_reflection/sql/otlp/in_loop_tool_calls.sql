-- Telemetry tool results as the in-loop analysis's `tool_calls` (tool_use_id 'otlp:<record
-- key>'), for sessions whose `sessions` row is telemetry's: seq is the call's order in the
-- session (time, then event.sequence), task_index the user prompts at or before it, task_seq
-- its order within that task; command from tool_parameters (bash_command), is_error = NOT
-- success, result_text the error.
INSERT INTO tool_calls BY NAME
WITH calls AS (
    SELECT t.*,
           (SELECT count(*) FROM otel_prompts p
            WHERE p.session_id = t.session_id AND p.ts <= t.ts) AS task_index
    FROM otel_tool_results t
    WHERE t.session_id IN (SELECT b.session_id FROM otlp_batch_tool_results b
                           SEMI JOIN otlp_new n ON n.record_key = b.record_key)
      AND t.session_id IN (SELECT session_id FROM sessions WHERE source_file = 'otlp')
)
SELECT c.session_id, 'otlp:' || c.record_key AS tool_use_id,
       CAST(row_number() OVER (PARTITION BY c.session_id
                               ORDER BY c.ts, c.event_sequence, c.record_key) AS INTEGER) AS seq,
       CAST(c.task_index AS INTEGER) AS task_index,
       CAST(row_number() OVER (PARTITION BY c.session_id, c.task_index
                               ORDER BY c.ts, c.event_sequence, c.record_key) AS INTEGER)
           AS task_seq,
       NULL AS message_uuid, coalesce(c.tool_name, '') AS name,
       CASE WHEN json_valid(c.tool_parameters) THEN CAST(c.tool_parameters AS JSON) END AS input,
       CASE WHEN json_valid(c.tool_parameters)
            THEN json_extract_string(c.tool_parameters, '$.bash_command') END AS command,
       CASE WHEN json_valid(c.tool_parameters)
            THEN json_extract_string(c.tool_parameters, '$.file_path') END AS file_path,
       c.ts - to_microseconds(CAST(round(coalesce(c.duration_ms, 0) * 1000) AS BIGINT))
           AS called_at,
       NULL AS result_uuid, left(c.error, 2000) AS result_text, NOT c.success AS is_error,
       c.ts AS result_at
FROM calls c
