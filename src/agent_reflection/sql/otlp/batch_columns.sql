-- The columns of each otel_* table and their types, in table order: the Arrow shape of the batch
-- registered for it (otlp_batch_<name>); load_id is the server run's, bound by the insert.
SELECT table_name, column_name, data_type FROM duckdb_columns()
WHERE schema_name = 'main' AND database_name = current_database()
  AND starts_with(table_name, 'otel_') AND column_name <> 'load_id'
ORDER BY table_name, column_index
