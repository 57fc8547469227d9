-- The records of the batch not stored yet (a retried export, or a spool segment written again
-- after a crash, adds nothing). Every insert of the batch reads only these keys.
CREATE OR REPLACE TEMP TABLE otlp_new AS
SELECT DISTINCT b.record_key
FROM otlp_batch_records b
ANTI JOIN otel_records o ON o.record_key = b.record_key
