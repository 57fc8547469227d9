-- New rows of otel_tool_decisions (columns by name from the registered batch otlp_batch_tool_decisions).
INSERT INTO otel_tool_decisions BY NAME
SELECT b.*
FROM otlp_batch_tool_decisions b
SEMI JOIN otlp_new n ON n.record_key = b.record_key
