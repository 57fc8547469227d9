-- Telemetry tool results as the in-loop analysis's `tool_calls` (tool_use_id 'otlp:<record
-- key>'), for sessions whose `sessions` row is telemetry's: the calls of the touched sessions
-- not numbered yet, after those that are. seq is the call's order in the session (time, then
-- event.sequence), task_index the user prompts at or before it, task_seq its order within that
-- task; command from tool_parameters (bash_command), is_error = NOT success, result_text the
-- error.
INSERT INTO tool_calls BY NAME
WITH touched AS (
    SELECT DISTINCT b.session_id
    FROM otlp_batch_records b
    SEMI JOIN otlp_new n ON n.record_key = b.record_key
    WHERE b.session_id IN (SELECT session_id FROM sessions WHERE source_file = 'otlp')
),
numbered AS (
    SELECT session_id, tool_use_id, task_index
    FROM tool_calls
    WHERE tool_use_id LIKE 'otlp:%' AND session_id IN (SELECT session_id FROM touched)
),
fresh AS (
    SELECT t.*,
           (SELECT count(*) FROM otel_prompts p
            WHERE p.session_id = t.session_id AND p.ts <= t.ts) AS task_index
    FROM otel_tool_results t
    WHERE t.session_id IN (SELECT session_id FROM touched)
      -- not numbered yet: a call this batch brings, or any call of a session with none
      -- numbered (new, or cleared above); every earlier call of the others was numbered by
      -- its own batch, so their history is not read again
      AND (t.record_key IN (SELECT record_key FROM otlp_new)
           OR t.session_id NOT IN (SELECT session_id FROM numbered))
),
seq_base AS (SELECT session_id, count(*) AS n FROM numbered GROUP BY session_id),
task_base AS (
    SELECT session_id, task_index, count(*) AS n FROM numbered GROUP BY session_id, task_index
)
SELECT f.session_id, 'otlp:' || f.record_key AS tool_use_id,
       CAST(coalesce(sb.n, 0) + row_number() OVER (
                PARTITION BY f.session_id ORDER BY f.ts, f.event_sequence, f.record_key)
            AS INTEGER) AS seq,
       CAST(f.task_index AS INTEGER) AS task_index,
       CAST(coalesce(tb.n, 0) + row_number() OVER (
                PARTITION BY f.session_id, f.task_index
                ORDER BY f.ts, f.event_sequence, f.record_key)
            AS INTEGER) AS task_seq,
       NULL AS message_uuid, coalesce(f.tool_name, '') AS name,
       CASE WHEN json_valid(f.tool_parameters) THEN CAST(f.tool_parameters AS JSON) END AS input,
       CASE WHEN json_valid(f.tool_parameters)
            THEN json_extract_string(f.tool_parameters, '$.bash_command') END AS command,
       CASE WHEN json_valid(f.tool_parameters)
            THEN json_extract_string(f.tool_parameters, '$.file_path') END AS file_path,
       f.ts - to_microseconds(CAST(round(coalesce(f.duration_ms, 0) * 1000) AS BIGINT))
           AS called_at,
       NULL AS result_uuid, left(f.error, 2000) AS result_text, NOT f.success AS is_error,
       f.ts AS result_at
FROM fresh f
LEFT JOIN seq_base sb ON sb.session_id = f.session_id
LEFT JOIN task_base tb ON tb.session_id = f.session_id AND tb.task_index = f.task_index
