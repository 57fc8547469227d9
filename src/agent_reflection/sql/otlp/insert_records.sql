-- Every new record, raw, with the server run's load id.
INSERT INTO otel_records BY NAME
SELECT b.*, $load_id AS load_id
FROM otlp_batch_records b
SEMI JOIN otlp_new n ON n.record_key = b.record_key
