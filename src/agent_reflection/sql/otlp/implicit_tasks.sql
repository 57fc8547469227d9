-- A Claude Code session seen in telemetry becomes an implicit, active run task (the cycle's
-- rules group outcomes by task), origin 'otlp'.
INSERT INTO run_tasks BY NAME
SELECT b.session_id AS task_id, 'active' AS status, 'active' AS source_status,
       0 AS run_count, NULL AS ai_prompt, NULL AS last_result_summary, TRUE AS implicit,
       'otlp' AS origin, $load_id AS load_id
FROM (SELECT DISTINCT session_id FROM otlp_batch_tool_results WHERE session_id IS NOT NULL) b
ANTI JOIN run_tasks t ON t.task_id = b.session_id
