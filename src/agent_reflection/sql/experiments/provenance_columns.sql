-- Tables of the main database and their columns: which of the tables an experiment reads exist.
SELECT table_name, list(column_name ORDER BY column_index) AS columns
FROM duckdb_columns()
WHERE database_name = current_database() AND schema_name = 'main'
GROUP BY table_name
