-- After the schema DDL ran (db.ensure_schema): keep one row, the digest and fingerprint now.
DELETE FROM schema_version;
INSERT INTO schema_version BY NAME
SELECT $digest AS digest, $fingerprint AS fingerprint, $applied_at AS applied_at;
