-- New rows of otel_api_errors (columns by name from the registered batch otlp_batch_api_errors).
INSERT INTO otel_api_errors BY NAME
SELECT b.*
FROM otlp_batch_api_errors b
SEMI JOIN otlp_new n ON n.record_key = b.record_key
