-- Every table of the main schema of this database file (not temporary ones), in name order;
-- not the redaction key (schema/71_redaction.sql), which must never leave the database.
SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'
AND database_name = current_database() AND NOT temporary AND table_name <> 'redaction_key'
ORDER BY table_name
