-- The same tool executions as run steps (action tool_call), so skill_failure_correlation sees
-- the skills that failing calls read: the Skill tool's tool_parameters.skill_name.
INSERT INTO run_steps BY NAME
SELECT b.record_key AS step_key, b.record_key AS session_id, b.event_sequence AS seq,
       b.ts AS "at", 'tool_call' AS action, b.tool_name AS tool,
       left(b.tool_parameters, 2000) AS input_summary, left(b.error, 2000) AS output_summary,
       CASE WHEN b.tool_name = 'Skill' AND json_valid(b.tool_parameters)
            THEN json_extract_string(b.tool_parameters, '$.skill_name') END AS skill,
       'otlp' AS origin, $load_id AS load_id
FROM otlp_batch_tool_results b
SEMI JOIN otlp_new n ON n.record_key = b.record_key
WHERE b.session_id IS NOT NULL AND b.ts IS NOT NULL
ON CONFLICT DO NOTHING
