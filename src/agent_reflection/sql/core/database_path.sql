-- The file of the connection's database, NULL when it is in memory: DuckDB opens an existing
-- data file (.jsonl, .csv, .parquet) given as a database as an in-memory one (db.connect refuses it).
SELECT path FROM duckdb_databases() WHERE database_name = current_database()
