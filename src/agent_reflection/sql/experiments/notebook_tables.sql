-- The tables of an opened database, to tell whether a notebook's inputs were ever loaded.
SELECT table_name FROM duckdb_tables()
