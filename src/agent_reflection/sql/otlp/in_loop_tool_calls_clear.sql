-- The telemetry tool calls of the sessions the batch touched, renumbered below from all their
-- telemetry (batches may arrive out of order); and those of sessions a transcript has been
-- loaded for since (the transcript's calls replace them).
DELETE FROM tool_calls
WHERE tool_use_id LIKE 'otlp:%'
  AND (session_id IN (SELECT b.session_id FROM otlp_batch_tool_results b
                      SEMI JOIN otlp_new n ON n.record_key = b.record_key)
       OR session_id IN (SELECT session_id FROM sessions WHERE source_file <> 'otlp'))
