-- New rows of otel_api_requests (columns by name from the registered batch otlp_batch_api_requests).
INSERT INTO otel_api_requests BY NAME
SELECT b.*
FROM otlp_batch_api_requests b
SEMI JOIN otlp_new n ON n.record_key = b.record_key
