-- The column names of main-schema table $table (what DESCRIBE lists for it).
SELECT column_name FROM duckdb_columns()
WHERE schema_name = 'main' AND database_name = current_database() AND table_name = $table
