-- The schema DDL's last run on this file (schema/99_schema_version.sql): digest and fingerprint.
SELECT digest, fingerprint FROM schema_version ORDER BY applied_at DESC LIMIT 1
