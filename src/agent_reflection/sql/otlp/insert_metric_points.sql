-- New rows of otel_metric_points (columns by name from the registered batch otlp_batch_metric_points).
INSERT INTO otel_metric_points BY NAME
SELECT b.*
FROM otlp_batch_metric_points b
SEMI JOIN otlp_new n ON n.record_key = b.record_key
