-- Telemetry tool calls to number again below: those of a session a transcript has been loaded
-- for since (the transcript's calls replace them), and those of a session the batch brings a
-- call or a prompt for that is not after its last numbered call (batches arriving out of
-- order). A session whose batches arrive in time order is only appended to.
DELETE FROM tool_calls
WHERE tool_use_id LIKE 'otlp:%'
  AND (session_id IN (SELECT session_id FROM sessions WHERE source_file <> 'otlp')
       OR session_id IN (
           SELECT e.session_id
           FROM (SELECT session_id, max(result_at) AS last_at
                 FROM tool_calls
                 WHERE tool_use_id LIKE 'otlp:%'
                   AND session_id IN (SELECT session_id FROM otlp_batch_records)
                 GROUP BY session_id) e
           JOIN (SELECT b.session_id, b.ts FROM otlp_batch_tool_results b
                 SEMI JOIN otlp_new n ON n.record_key = b.record_key
                 UNION ALL
                 SELECT b.session_id, b.ts FROM otlp_batch_prompts b
                 SEMI JOIN otlp_new n ON n.record_key = b.record_key) a
             ON a.session_id = e.session_id AND a.ts <= e.last_at))
