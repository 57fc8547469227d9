-- The in-loop analysis's `sessions` rows for telemetry sessions the batch touched
-- (source_file 'otlp', from otel_sessions). A session a transcript was loaded for keeps the
-- transcript's row: telemetry never overwrites it.
INSERT INTO sessions BY NAME
SELECT s.session_id, 'otlp' AS source_file, s.first_ts, s.last_ts, NULL AS cwd,
       NULL AS git_branch, s.app_version AS cli_version,
       (SELECT p.prompt FROM otel_prompts p WHERE p.session_id = s.session_id
        ORDER BY p.ts, p.record_key LIMIT 1) AS first_prompt,
       CAST(s.n_events AS INTEGER) AS n_lines, CAST(s.n_prompts AS INTEGER) AS n_prompts,
       CAST(s.n_tool_results AS INTEGER) AS n_tool_calls, 0 AS n_checkpoints,
       0 AS n_escalations
FROM otel_sessions s
WHERE s.session_id IN (SELECT b.session_id FROM otlp_batch_records b
                       SEMI JOIN otlp_new n ON n.record_key = b.record_key)
ON CONFLICT (session_id) DO UPDATE SET
    first_ts = excluded.first_ts, last_ts = excluded.last_ts,
    cli_version = excluded.cli_version, first_prompt = excluded.first_prompt,
    n_lines = excluded.n_lines, n_prompts = excluded.n_prompts,
    n_tool_calls = excluded.n_tool_calls
WHERE sessions.source_file = 'otlp'
