-- New rows of otel_prompts (columns by name from the registered batch otlp_batch_prompts).
INSERT INTO otel_prompts BY NAME
SELECT b.*
FROM otlp_batch_prompts b
SEMI JOIN otlp_new n ON n.record_key = b.record_key
