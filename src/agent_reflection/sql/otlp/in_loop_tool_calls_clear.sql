-- The telemetry tool calls of the sessions the batch touched, renumbered below from all their
-- telemetry (batches may arrive out of order).
DELETE FROM tool_calls
WHERE tool_use_id LIKE 'otlp:%'
  AND session_id IN (SELECT b.session_id FROM otlp_batch_tool_results b
                     SEMI JOIN otlp_new n ON n.record_key = b.record_key)
