-- The primary-key columns of table $table (an old database keyed outcomes without origin).
SELECT constraint_column_names FROM duckdb_constraints()
WHERE table_name = $table AND constraint_type = 'PRIMARY KEY'
