-- Every record of the batch not stored yet, raw, with the server run's load id (the primary
-- key's index skips a retried export, or a spool segment written again after a crash). The
-- keys it returns are the batch's new records: every other insert reads only those.
INSERT INTO otel_records BY NAME
SELECT b.*, $load_id AS load_id
FROM otlp_batch_records b
ON CONFLICT DO NOTHING
RETURNING record_key
