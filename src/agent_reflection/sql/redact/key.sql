-- The database's redaction key (the first one made, should two loads race).
SELECT key FROM redaction_key ORDER BY created_at, key LIMIT 1
