-- Every table of the main schema of this database file (not temporary ones), in name order.
SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'
AND database_name = current_database() AND NOT temporary ORDER BY table_name
