-- New rows of otel_tool_results (columns by name from the registered batch otlp_batch_tool_results).
INSERT INTO otel_tool_results BY NAME
SELECT b.*
FROM otlp_batch_tool_results b
SEMI JOIN otlp_new n ON n.record_key = b.record_key
